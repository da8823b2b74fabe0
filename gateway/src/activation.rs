//! Which activated jobs may still go to a worker: the one check between a partition's
//! answer to an activation command and the worker, for every API that hands jobs out.
//!
//! An answer can reach a worker late. A request proposed before an election is answered
//! once its entry commits under the next leader, by the replica that proposed it; and a
//! long poll that asks several partitions holds what one found while it asks the others.
//! Jobs are not passed on when
//!
//! - their deadline has passed, or is closer than a margin ([`deadline_margin`]: a tenth
//!   of the job's timeout, at most 100 ms), too close for a worker even to report back;
//! - or the answer comes from a raft term the partition has since left (lower than the
//!   term of the leader the gateway routes to): it outlived its leader, and the next one
//!   times jobs out by its own clock.
//!
//! Such jobs stay activated in the engine until their deadline, then time out and are
//! activated again as usual: dropping them takes no command.
//!
//! Deadlines are the engine's: the activating entry's time plus the job's timeout, by
//! the leader's clock. The gateway does not compare them with its own wall clock when it
//! asked for the jobs itself: the entry was stamped after the gateway sent its command,
//! so the time since then (by the gateway's monotonic clock) bounds how much of the
//! timeout is gone, whatever the two wall clocks say. A leader whose clock is an hour
//! behind would otherwise have every job it activates look expired to the other
//! gateways, and those jobs would time out only an hour later. Jobs a broker pushes to a
//! stream unasked are judged by the gateway's wall clock.

use std::time::{Duration, SystemTime, UNIX_EPOCH};

use tokio::time::Instant;

use rill_protocol::value::{JobBatchRecord, JobRecord};
use rill_protocol::{PartitionId, Term};

use crate::backend::GatewayBackend;
use crate::metrics::GatewayMetrics;

/// The largest margin before a deadline within which a job counts as too late.
pub const MAX_DEADLINE_MARGIN: Duration = Duration::from_millis(100);

/// Why activated jobs were not handed to a worker.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum DropReason {
    /// The deadline had passed, or was within the margin.
    Deadline,
    /// The answer came from a term the partition has left.
    Term,
}

impl DropReason {
    /// The value of the metric's `reason` label.
    pub fn label(self) -> &'static str {
        match self {
            DropReason::Deadline => "deadline",
            DropReason::Term => "term",
        }
    }
}

/// One partition's answer to an activation command.
#[derive(Clone, Debug)]
pub struct Activation {
    pub partition: PartitionId,
    /// The term of the entry that activated the jobs (`None`: unknown).
    pub term: Option<Term>,
    pub batch: JobBatchRecord,
    /// When the gateway sent the command this answers (`None`: pushed unasked).
    pub asked_at: Option<Instant>,
}

/// How close to its deadline (ms) a job with `timeout_ms` counts as too late: a tenth of
/// its timeout, so that short timeouts still leave something to hand out, and at most
/// [`MAX_DEADLINE_MARGIN`].
pub fn deadline_margin(timeout_ms: i64) -> i64 {
    (timeout_ms / 10).clamp(0, MAX_DEADLINE_MARGIN.as_millis() as i64)
}

/// Why `job`, activated by an answer from `answer_term`, may not go to a worker at
/// `now_ms` (ms since the epoch) while the partition is in `current_term`; `None` if it
/// may. An unknown term on either side is no reason.
pub fn drop_reason(
    job: &JobRecord,
    answer_term: Option<Term>,
    current_term: Option<Term>,
    now_ms: i64,
) -> Option<DropReason> {
    if job.deadline.saturating_sub(now_ms) <= deadline_margin(job.timeout) {
        return Some(DropReason::Deadline);
    }
    match (answer_term, current_term) {
        (Some(answer), Some(current)) if answer < current => Some(DropReason::Term),
        _ => None,
    }
}

/// An answer's jobs, judged.
#[derive(Debug, Default)]
pub struct Judged {
    /// The jobs a worker may get, with their keys.
    pub kept: Vec<(i64, JobRecord)>,
    /// The keys of the others, with the reason.
    pub dropped: Vec<(i64, DropReason)>,
}

/// What a job's deadline is compared with.
#[derive(Clone, Copy, Debug)]
pub enum Now {
    /// This long has passed since the gateway asked for the jobs: the job has that much
    /// less than its timeout left, at most.
    SinceAsked(Duration),
    /// The gateway's wall clock (ms since the epoch).
    WallClock(i64),
}

impl Now {
    /// Now, in the time frame of `job`'s deadline.
    fn for_job(self, job: &JobRecord) -> i64 {
        match self {
            Now::SinceAsked(elapsed) => job
                .deadline
                .saturating_sub(job.timeout)
                .saturating_add(elapsed.as_millis() as i64),
            Now::WallClock(millis) => millis,
        }
    }
}

/// Judges the jobs of `activation` at `now`, with the partition in `current_term`.
pub fn split(activation: Activation, current_term: Option<Term>, now: Now) -> Judged {
    let mut judged = Judged::default();
    let jobs = activation
        .batch
        .job_keys
        .into_iter()
        .zip(activation.batch.jobs);
    for (key, job) in jobs {
        match drop_reason(&job, activation.term, current_term, now.for_job(&job)) {
            None => judged.kept.push((key, job)),
            Some(reason) => judged.dropped.push((key, reason)),
        }
    }
    judged
}

/// The jobs of `activation` that a worker may still get, now (see the module comment),
/// and in the term `backend` knows for the partition. The others are counted in
/// `rill_gateway_activated_jobs_dropped_total` and logged with their keys.
pub fn usable_jobs(
    backend: &dyn GatewayBackend,
    metrics: &GatewayMetrics,
    activation: Activation,
) -> Vec<(i64, JobRecord)> {
    let (partition, answer_term) = (activation.partition, activation.term);
    let current_term = backend.current_term(partition);
    let now = match activation.asked_at {
        Some(asked_at) => Now::SinceAsked(asked_at.elapsed()),
        None => Now::WallClock(wall_clock_millis()),
    };
    let Judged { kept, dropped } = split(activation, current_term, now);
    for reason in [DropReason::Deadline, DropReason::Term] {
        let keys: Vec<i64> = dropped
            .iter()
            .filter(|(_, r)| *r == reason)
            .map(|(key, _)| *key)
            .collect();
        if keys.is_empty() {
            continue;
        }
        metrics.activated_jobs_dropped(reason, keys.len());
        tracing::info!(
            %partition,
            reason = reason.label(),
            ?answer_term,
            ?current_term,
            jobs = ?keys,
            "activated jobs not handed to the worker; they time out and are activated again"
        );
    }
    kept
}

// The gateway's own clock, to judge a job's deadline it hands out; never engine time.
#[allow(clippy::disallowed_methods)]
fn wall_clock_millis() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |since| since.as_millis() as i64)
}

#[cfg(test)]
mod tests {
    use rill_protocol::JsonValue;

    use super::*;

    const NOW: i64 = 1_800_000_000_000;

    fn job(timeout: i64, deadline: i64) -> JobRecord {
        JobRecord {
            job_type: "pay".into(),
            element_id: "task".into(),
            element_instance_key: 1,
            bpmn_process_id: "order".into(),
            process_definition_version: 1,
            process_definition_key: 2,
            process_instance_key: 3,
            worker: "w".into(),
            retries: 3,
            retry_backoff: 0,
            recurring_time: -1,
            deadline,
            timeout,
            error_message: String::new(),
            error_code: String::new(),
            custom_headers: Default::default(),
            variables: JsonValue::empty_object(),
            tenant_id: "<default>".into(),
            job_kind: Default::default(),
            job_listener_event_type: Default::default(),
            result: Default::default(),
            root_process_instance_key: 3,
            tags: Vec::new(),
        }
    }

    fn activation(term: Option<Term>, jobs: Vec<(i64, JobRecord)>) -> Activation {
        let (job_keys, jobs) = jobs.into_iter().unzip();
        Activation {
            partition: PartitionId(2),
            term,
            batch: JobBatchRecord {
                job_type: "pay".into(),
                worker: "w".into(),
                timeout: 5000,
                max_jobs_to_activate: 10,
                job_keys,
                jobs,
                truncated: false,
                tenant_ids: Vec::new(),
            },
            asked_at: None,
        }
    }

    #[test]
    fn a_fresh_answer_from_the_current_term_is_handed_out() {
        let fresh = job(5000, NOW + 4990);
        assert_eq!(drop_reason(&fresh, Some(Term(4)), Some(Term(4)), NOW), None);
        // A term the gateway has not heard of yet is newer, not stale.
        assert_eq!(drop_reason(&fresh, Some(Term(5)), Some(Term(4)), NOW), None);
        // Unknown on either side: only the deadline counts.
        assert_eq!(drop_reason(&fresh, None, Some(Term(4)), NOW), None);
        assert_eq!(drop_reason(&fresh, Some(Term(3)), None, NOW), None);
    }

    #[test]
    fn a_job_past_its_deadline_is_dropped() {
        let late = job(5000, NOW - 1);
        assert_eq!(
            drop_reason(&late, Some(Term(4)), Some(Term(4)), NOW),
            Some(DropReason::Deadline)
        );
        let due_now = job(5000, NOW);
        assert_eq!(
            drop_reason(&due_now, None, None, NOW),
            Some(DropReason::Deadline)
        );
    }

    #[test]
    fn a_job_within_the_margin_of_its_deadline_is_dropped() {
        // 5 s timeout: the margin is 100 ms.
        assert_eq!(deadline_margin(5000), 100);
        assert_eq!(
            drop_reason(&job(5000, NOW + 100), None, None, NOW),
            Some(DropReason::Deadline)
        );
        assert_eq!(drop_reason(&job(5000, NOW + 101), None, None, NOW), None);
        // A short timeout has a margin of a tenth of it, so its jobs can still go out.
        assert_eq!(deadline_margin(300), 30);
        assert_eq!(drop_reason(&job(300, NOW + 280), None, None, NOW), None);
        assert_eq!(
            drop_reason(&job(300, NOW + 30), None, None, NOW),
            Some(DropReason::Deadline)
        );
        assert_eq!(deadline_margin(5), 0);
        assert_eq!(deadline_margin(-5), 0);
    }

    #[test]
    fn an_answer_from_a_term_the_partition_left_is_dropped() {
        let fresh = job(5000, NOW + 4990);
        assert_eq!(
            drop_reason(&fresh, Some(Term(3)), Some(Term(4)), NOW),
            Some(DropReason::Term)
        );
        // Late as well: the deadline is named.
        assert_eq!(
            drop_reason(&job(5000, NOW - 10), Some(Term(3)), Some(Term(4)), NOW),
            Some(DropReason::Deadline)
        );
    }

    #[test]
    fn split_keeps_each_key_with_its_job() {
        let answer = activation(
            Some(Term(4)),
            vec![
                (11, job(5000, NOW + 4000)),
                (12, job(5000, NOW + 50)),
                (13, job(5000, NOW + 3000)),
            ],
        );
        let Judged { kept, dropped } = split(answer.clone(), Some(Term(4)), Now::WallClock(NOW));
        let kept: Vec<(i64, i64)> = kept.iter().map(|(k, j)| (*k, j.deadline)).collect();
        assert_eq!(kept, [(11, NOW + 4000), (13, NOW + 3000)]);
        assert_eq!(dropped, [(12, DropReason::Deadline)]);

        let Judged { kept, dropped } = split(answer, Some(Term(5)), Now::WallClock(NOW));
        assert!(kept.is_empty(), "{kept:?}");
        assert_eq!(
            dropped,
            [
                (11, DropReason::Term),
                (12, DropReason::Deadline),
                (13, DropReason::Term)
            ]
        );
    }

    /// A job the gateway asked for is judged by the time since it asked, not by
    /// comparing the leader's clock with its own: an hour of skew either way changes
    /// nothing.
    #[test]
    fn a_job_asked_for_is_judged_by_the_time_since_asking() {
        let hour = 3_600_000;
        for leader_clock in [NOW - hour, NOW, NOW + hour] {
            let answer = activation(Some(Term(4)), vec![(21, job(5000, leader_clock + 5000))]);
            let fresh = split(
                answer.clone(),
                Some(Term(4)),
                Now::SinceAsked(Duration::from_millis(1000)),
            );
            assert_eq!(fresh.kept.len(), 1, "leader clock {leader_clock}");
            // Within the margin (100 ms) of the timeout, or past it: too late.
            let late = split(
                answer,
                Some(Term(4)),
                Now::SinceAsked(Duration::from_millis(4900)),
            );
            assert_eq!(late.dropped, [(21, DropReason::Deadline)]);
        }
        // By the wall clock, the leader an hour behind makes the job look expired.
        let behind = activation(Some(Term(4)), vec![(22, job(5000, NOW - hour + 5000))]);
        let judged = split(behind, Some(Term(4)), Now::WallClock(NOW));
        assert_eq!(judged.dropped, [(22, DropReason::Deadline)]);
    }
}
