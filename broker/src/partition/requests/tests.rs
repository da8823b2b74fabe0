//! The request book's own tests: every path out of it, and its answers.

use rill_config::RequestLimitConfig;
use tokio::sync::oneshot::error::TryRecvError;

use super::*;

const P: PartitionId = PartitionId(3);
const ME: NodeId = NodeId(1);
const OTHER: NodeId = NodeId(2);
const TIMEOUT: Duration = Duration::from_secs(10);

type Answer = oneshot::Receiver<Result<Answered<&'static str>>>;

/// A book whose flow control lets everything in (and still counts).
fn book() -> RequestBook<&'static str> {
    let unlimited = RequestLimitConfig {
        enabled: false,
        ..RequestLimitConfig::default()
    };
    RequestBook::new(P, ME, RequestLimiter::new(&unlimited), 100)
}

fn admit(book: &mut RequestBook<&'static str>, now: Instant) -> (RequestId, Answer) {
    let (tx, rx) = oneshot::channel();
    let id = book.admit(tx, TIMEOUT, false, now).expect("admitted");
    (id, rx)
}

/// The answer, which must be there.
fn answered(rx: Answer) -> Result<&'static str> {
    answered_in_term(rx).map(|answered| answered.response)
}

/// The answer with the term it came with, which must be there.
fn answered_in_term(mut rx: Answer) -> Result<Answered<&'static str>> {
    rx.try_recv().expect("answered")
}

fn waiting(rx: &mut Answer) -> bool {
    matches!(rx.try_recv(), Err(TryRecvError::Empty))
}

#[test]
fn ids_are_unique_and_follow_the_seed() {
    let mut book = book();
    let now = Instant::now();
    let (a, _ra) = admit(&mut book, now);
    let (b, _rb) = admit(&mut book, now);
    assert_eq!((a, b), (RequestId(101), RequestId(102)));
    assert_eq!(book.limiter().inflight(), 2);
}

#[test]
fn a_response_answers_once_and_releases_the_permit() {
    let mut book = book();
    let (id, rx) = admit(&mut book, Instant::now());
    book.respond(id, "done");
    // A second answer for the same id (another path, a replayed entry) is ignored.
    book.respond(id, "again");
    book.not_applied(id, None);
    assert_eq!(answered(rx).unwrap(), "done");
    assert_eq!(book.len(), 0);
    assert_eq!(book.limiter().inflight(), 0);
}

#[test]
fn a_response_carries_the_term_its_command_was_proposed_in() {
    let mut book = book();
    let now = Instant::now();
    let (direct, direct_rx) = admit(&mut book, now);
    book.proposed(direct, Term(4));
    let (later, later_rx) = admit(&mut book, now);
    book.proposed(later, Term(4));
    book.applied_later(later);
    // Answered only after a step down and an election: still the term of its entry.
    book.step_down(Term(4), 10, 7, Some(OTHER));
    book.respond(direct, "direct");
    book.respond(later, "later");
    assert_eq!(
        answered_in_term(direct_rx).unwrap(),
        Answered {
            response: "direct",
            term: Term(4)
        }
    );
    assert_eq!(
        answered_in_term(later_rx).unwrap(),
        Answered {
            response: "later",
            term: Term(4)
        }
    );
}

#[test]
fn requests_past_their_deadline_time_out_with_their_own_timeout() {
    let mut book = book();
    let start = Instant::now();
    let (_, old) = admit(&mut book, start);
    let (tx, mut young) = oneshot::channel();
    book.admit(tx, Duration::from_secs(60), false, start)
        .unwrap();
    book.expire(start + TIMEOUT - Duration::from_millis(1));
    assert_eq!(book.len(), 2, "none is due yet");
    book.expire(start + TIMEOUT);
    match answered(old) {
        Err(Error::Timeout { partition, timeout }) => {
            assert_eq!((partition, timeout), (P, TIMEOUT));
        }
        other => panic!("unexpected {other:?}"),
    }
    assert!(waiting(&mut young));
    book.expire(start + Duration::from_secs(60));
    assert!(matches!(
        young.try_recv(),
        Ok(Err(Error::Timeout { timeout, .. })) if timeout == Duration::from_secs(60)
    ));
    assert_eq!(book.len(), 0);
}

#[test]
fn not_leader_never_names_this_node() {
    let mut book = book();
    let now = Instant::now();
    for leader in [Some(ME), None] {
        assert!(matches!(
            book.refusal(leader),
            Error::NotLeader {
                partition: P,
                leader: None
            }
        ));
        let (id, rx) = admit(&mut book, now);
        book.not_applied(id, leader);
        assert!(matches!(
            answered(rx),
            Err(Error::NotLeader { leader: None, .. })
        ));
    }
    assert!(matches!(
        book.refusal(Some(OTHER)),
        Error::NotLeader {
            leader: Some(OTHER),
            ..
        }
    ));
    // Lost at the barrier while this node leads again in a later term.
    let (id, rx) = admit(&mut book, now);
    book.proposed(id, Term(4));
    book.step_down(Term(4), 10, 9, None);
    book.applied(10, Some(ME));
    assert!(matches!(
        answered(rx),
        Err(Error::NotLeader { leader: None, .. })
    ));
}

#[test]
fn the_barrier_fails_only_what_was_proposed_in_the_terms_it_closes() {
    let mut book = book();
    let now = Instant::now();
    let (old, mut old_rx) = admit(&mut book, now);
    book.proposed(old, Term(4));
    let (applied, mut applied_rx) = admit(&mut book, now);
    book.proposed(applied, Term(4));
    book.applied_later(applied);
    let (queued, mut queued_rx) = admit(&mut book, now);
    // Stepped down in term 4 with entries up to 10 in the log.
    book.step_down(Term(4), 10, 7, Some(OTHER));
    assert!(waiting(&mut old_rx), "may still commit");
    // Leading again in term 6: a new proposal is not the barrier's business.
    let (new, mut new_rx) = admit(&mut book, now);
    book.proposed(new, Term(6));
    book.applied(9, Some(OTHER));
    assert!(waiting(&mut old_rx), "barrier not reached");
    book.applied(10, Some(OTHER));
    assert!(matches!(
        old_rx.try_recv(),
        Ok(Err(Error::NotLeader {
            leader: Some(OTHER),
            ..
        }))
    ));
    assert!(waiting(&mut applied_rx), "applied: answered by its Respond");
    assert!(
        waiting(&mut queued_rx),
        "queued ones are the leader's to answer"
    );
    assert!(waiting(&mut new_rx));
    // The barrier is gone: later applies fail nothing.
    book.proposed(queued, Term(5));
    book.applied(20, None);
    assert!(waiting(&mut queued_rx));
    assert_eq!(book.len(), 3);
}

#[test]
fn barriers_of_two_lost_terms_merge() {
    let mut book = book();
    let now = Instant::now();
    let (a, a_rx) = admit(&mut book, now);
    book.proposed(a, Term(2));
    let (b, mut b_rx) = admit(&mut book, now);
    book.proposed(b, Term(3));
    book.step_down(Term(2), 8, 5, None);
    book.step_down(Term(3), 6, 5, None);
    book.applied(7, None);
    assert!(
        waiting(&mut b_rx),
        "the merged barrier is at the higher index"
    );
    book.applied(8, None);
    assert!(answered(a_rx).is_err());
    assert!(matches!(b_rx.try_recv(), Ok(Err(Error::NotLeader { .. }))));
}

#[test]
fn a_step_down_already_applied_fails_at_once() {
    let mut book = book();
    let (id, rx) = admit(&mut book, Instant::now());
    book.proposed(id, Term(2));
    book.step_down(Term(2), 5, 5, Some(OTHER));
    assert!(matches!(
        answered(rx),
        Err(Error::NotLeader {
            leader: Some(OTHER),
            ..
        })
    ));
}

#[test]
fn a_snapshot_past_the_barrier_makes_the_outcome_unknown() {
    let mut book = book();
    let now = Instant::now();
    let (id, rx) = admit(&mut book, now);
    book.proposed(id, Term(2));
    book.step_down(Term(2), 5, 1, None);
    book.snapshot_installed(4);
    assert_eq!(book.len(), 1, "below the barrier");
    book.snapshot_installed(6);
    assert!(matches!(
        answered(rx),
        Err(Error::Timeout {
            timeout: TIMEOUT,
            ..
        })
    ));
    // The barrier is spent.
    let (id, mut rx) = admit(&mut book, now);
    book.proposed(id, Term(2));
    book.applied(100, None);
    assert!(waiting(&mut rx));
}

#[test]
fn fail_all_answers_every_request_and_refuses_later_ones() {
    let mut book = book();
    let now = Instant::now();
    let answers: Vec<Answer> = (0..3)
        .map(|i| {
            let (id, rx) = admit(&mut book, now);
            if i > 0 {
                book.proposed(id, Term(1));
            }
            rx
        })
        .collect();
    book.fail_all("disk on fire".into());
    for rx in answers {
        assert!(matches!(
            answered(rx),
            Err(Error::Failed { partition: P, reason }) if reason == "disk on fire"
        ));
    }
    assert_eq!(book.limiter().inflight(), 0);
    assert_eq!(book.failure(), Some("disk on fire"));
    assert!(book.is_closed());
    assert!(matches!(book.refusal(Some(OTHER)), Error::Failed { .. }));
    // Shutting down after a failure: that is what later requests hear.
    book.shut_down();
    assert!(matches!(book.refusal(None), Error::ShuttingDown { .. }));
}

#[test]
fn shut_down_answers_every_request() {
    let mut book = book();
    let (_, rx) = admit(&mut book, Instant::now());
    book.shut_down();
    assert!(matches!(
        answered(rx),
        Err(Error::ShuttingDown { partition: P })
    ));
    assert!(book.is_closed());
    assert_eq!(book.failure(), None);
}

#[test]
fn a_dropped_book_answers_what_it_still_holds() {
    let mut book = book();
    let (_, rx) = admit(&mut book, Instant::now());
    drop(book);
    assert!(matches!(answered(rx), Err(Error::ShuttingDown { .. })));
}

/// Every path out of the book, mixed: each request hears exactly one answer (a reply
/// channel carries one value at most, so none may be left unanswered), and every
/// permit is given back exactly once.
#[test]
fn every_request_is_answered_exactly_once() {
    let mut book = book();
    let start = Instant::now();
    let mut answers = Vec::new();
    for i in 0..60u64 {
        let (id, rx) = admit(&mut book, start + Duration::from_millis(i));
        match i % 6 {
            0 => book.respond(id, "ok"),
            1 => book.proposed(id, Term(1)),
            2 => {
                book.proposed(id, Term(1));
                book.applied_later(id);
            }
            3 => book.not_applied(id, Some(ME)),
            4 => book.proposed(id, Term(2)),
            _ => {}
        }
        answers.push((i % 6, id, rx));
    }
    book.step_down(Term(1), 10, 0, Some(OTHER));
    book.expire(start + TIMEOUT + Duration::from_millis(29));
    book.applied(10, Some(OTHER));
    for (kind, id, _) in &answers {
        if *kind == 2 {
            book.respond(*id, "late");
        }
    }
    book.fail_all("stop".into());
    assert_eq!(book.len(), 0);
    assert_eq!(book.limiter().inflight(), 0);
    let mut outcomes = BTreeMap::new();
    for (kind, _, rx) in answers {
        let outcome = match answered(rx) {
            Ok(_) => "ok",
            Err(Error::NotLeader { leader: None, .. }) => "not leader (none)",
            Err(Error::NotLeader { .. }) => "not leader (other)",
            Err(Error::Timeout { .. }) => "timeout",
            Err(Error::Failed { .. }) => "failed",
            Err(other) => panic!("unexpected {other:?}"),
        };
        *outcomes.entry((kind, outcome)).or_insert(0) += 1;
    }
    // The first 30 expired (admitted within 29 ms of the start), the rest met their
    // own fate: responses, the barrier of term 1, NotLeader, or the failure.
    let expected: BTreeMap<(u64, &str), i32> = [
        ((0, "ok"), 10),
        ((1, "timeout"), 5),
        ((1, "not leader (other)"), 5),
        ((2, "timeout"), 5),
        ((2, "ok"), 5),
        ((3, "not leader (none)"), 10),
        ((4, "timeout"), 5),
        ((4, "failed"), 5),
        ((5, "timeout"), 5),
        ((5, "failed"), 5),
    ]
    .into_iter()
    .collect();
    assert_eq!(outcomes, expected);
}

#[test]
fn a_full_limiter_refuses_with_resource_exhausted() {
    let config = RequestLimitConfig {
        enabled: true,
        algorithm: rill_config::LimitAlgorithm::Fixed,
        fixed: rill_config::FixedLimitConfig { limit: 1 },
        ..RequestLimitConfig::default()
    };
    let mut book: RequestBook<&'static str> =
        RequestBook::new(P, ME, RequestLimiter::new(&config), 0);
    let now = Instant::now();
    let (_, mut first) = admit(&mut book, now);
    let (tx, rx) = oneshot::channel();
    assert_eq!(book.admit(tx, TIMEOUT, false, now), None);
    assert!(matches!(
        answered(rx),
        Err(Error::ResourceExhausted {
            partition: P,
            limit: 1
        })
    ));
    // Work that finishes work is always let in.
    let (tx, mut finishing) = oneshot::channel();
    assert!(book.admit(tx, TIMEOUT, true, now).is_some());
    assert!(waiting(&mut first) && waiting(&mut finishing));
    book.shut_down();
}
