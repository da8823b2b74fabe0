//! The requests a partition holds until it can answer them, and the one place that
//! builds every answer other than a command's own response.
//!
//! ```text
//!   admit ──► Queued ──► Proposed{term} ──► (applied) ──► respond
//!               │             │                 └─► Applied ──► respond (Respond action)
//!               │             ├─ skipped batch, or lost at the barrier ──► NotLeader
//!               │             └─ barrier passed by a snapshot ───────────► Timeout
//!               └─ leadership lost while queued ─────────────────────────► NotLeader
//!   any phase:  deadline passed ──► Timeout · fail_all ──► Failed · shut_down ──► ShuttingDown
//! ```
//!
//! Every request is answered exactly once: answering takes it out of the book, and a
//! book dropped with requests still in it answers them with `ShuttingDown` (what their
//! callers heard from a dropped reply channel). `NotLeader` means certainly not applied,
//! and never names this node as the leader: a client would only come back here.
//! A response carries the term of the entry its command was applied from
//! ([`Answered`]): a request proposed before an election can still be answered after it,
//! late, by a replica that no longer leads.
//!
//! The book also holds the flow-control limiter, since every request holds a permit
//! until it is answered, and remembers whether the partition failed or shuts down,
//! since that decides how later requests are refused.

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use rill_engine_api::RequestId;
use rill_protocol::{NodeId, PartitionId, Term};
use tokio::sync::oneshot;

use crate::error::{Error, Result};
use crate::flow_control::{Permit, RequestLimiter};

/// A command's response, with the raft term of the log entry that carried the command
/// (for one answered from state without an entry, the term of the leader that read it).
/// A gateway compares it with the partition's current term: an answer from a term the
/// partition has left may have waited out an election.
#[derive(Clone, Debug, PartialEq)]
pub struct Answered<R> {
    pub response: R,
    pub term: Term,
}

/// Where a request's answer goes.
pub(crate) type Reply<R> = oneshot::Sender<Result<Answered<R>>>;

enum Phase {
    /// Waiting in the leader's queue for the next entry.
    Queued,
    /// In an entry given to raft, built in `term`.
    Proposed { term: Term },
    /// Applied from an entry of `term`; the engine answers later (a `Respond` action).
    Applied { term: Term },
}

struct Pending<R> {
    reply: Reply<R>,
    permit: Permit,
    deadline: Instant,
    /// How long the caller said it would wait (what a `Timeout` reports).
    timeout: Duration,
    phase: Phase,
}

impl<R> Pending<R> {
    fn proposed_up_to(&self, up_to_term: Term) -> bool {
        matches!(self.phase, Phase::Proposed { term } if term <= up_to_term)
    }

    /// The term of the entry that carried the command. Only applied commands are
    /// answered with a response, so a queued one (0) never is.
    fn term(&self) -> Term {
        match self.phase {
            Phase::Queued => Term::ZERO,
            Phase::Proposed { term } | Phase::Applied { term } => term,
        }
    }
}

/// Commands proposed in terms up to `term` are lost if not applied by `index`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Barrier {
    index: u64,
    term: Term,
}

/// The pending requests of one partition replica (see the module comment).
pub(crate) struct RequestBook<R> {
    partition: PartitionId,
    /// This node: never named as the leader in a `NotLeader`.
    node: NodeId,
    pending: BTreeMap<u64, Pending<R>>,
    last_id: u64,
    /// When commands proposed in a lost term are known lost.
    barrier: Option<Barrier>,
    limiter: RequestLimiter,
    failed: Option<String>,
    shutting_down: bool,
}

impl<R> RequestBook<R> {
    /// Request ids follow `id_seed`; it must make them unique across nodes and restarts,
    /// so that an old log entry never answers a new request.
    pub(crate) fn new(
        partition: PartitionId,
        node: NodeId,
        limiter: RequestLimiter,
        id_seed: u64,
    ) -> RequestBook<R> {
        RequestBook {
            partition,
            node,
            pending: BTreeMap::new(),
            last_id: id_seed,
            barrier: None,
            limiter,
            failed: None,
            shutting_down: false,
        }
    }

    /// Takes a request in if flow control lets it (`never_rejected`: a command that
    /// finishes work, always let in). A refused request is answered `ResourceExhausted`
    /// here and `None` returned.
    pub(crate) fn admit(
        &mut self,
        reply: Reply<R>,
        timeout: Duration,
        never_rejected: bool,
        now: Instant,
    ) -> Option<RequestId> {
        let Some(permit) = self.limiter.try_acquire(never_rejected, now) else {
            let _ = reply.send(Err(self.exhausted()));
            return None;
        };
        self.last_id += 1;
        self.pending.insert(
            self.last_id,
            Pending {
                reply,
                permit,
                deadline: now + timeout,
                timeout,
                phase: Phase::Queued,
            },
        );
        Some(RequestId(self.last_id))
    }

    /// The answer to new work refused at the current limit.
    pub(crate) fn exhausted(&self) -> Error {
        Error::ResourceExhausted {
            partition: self.partition,
            limit: self.limiter.limit(),
        }
    }

    /// The answer to a request that only a leader can take, from a replica that is not
    /// one (or no longer runs). `leader` is the leader as raft last told it.
    pub(crate) fn refusal(&self, leader: Option<NodeId>) -> Error {
        if self.shutting_down {
            Error::ShuttingDown {
                partition: self.partition,
            }
        } else if let Some(reason) = &self.failed {
            Error::Failed {
                partition: self.partition,
                reason: reason.clone(),
            }
        } else {
            self.not_leader(leader)
        }
    }

    fn not_leader(&self, leader: Option<NodeId>) -> Error {
        Error::NotLeader {
            partition: self.partition,
            leader: self.other(leader),
        }
    }

    /// The leader to name in a `NotLeader`: never this node.
    fn other(&self, leader: Option<NodeId>) -> Option<NodeId> {
        leader.filter(|l| *l != self.node)
    }

    /// The request's command went into an entry built in `term`.
    pub(crate) fn proposed(&mut self, RequestId(id): RequestId, term: Term) {
        if let Some(p) = self.pending.get_mut(&id) {
            p.phase = Phase::Proposed { term };
        }
    }

    /// The request's command was applied; its answer comes later.
    pub(crate) fn applied_later(&mut self, RequestId(id): RequestId) {
        if let Some(p) = self.pending.get_mut(&id) {
            p.phase = Phase::Applied { term: p.term() };
        }
    }

    /// Answers with the command's response and the term of its entry. Ids this replica
    /// does not hold (another replica's requests, or answered already) are ignored.
    pub(crate) fn respond(&mut self, RequestId(id): RequestId, response: R) {
        if let Some(p) = self.pending.remove(&id) {
            let term = p.term();
            finish(&mut self.limiter, p, Ok(Answered { response, term }));
        }
    }

    /// Answers with `error`: the command could not be put into an entry, or every
    /// replica refused it alike (one that carries a checkpoint not recorded yet).
    pub(crate) fn reject(&mut self, RequestId(id): RequestId, error: Error) {
        if let Some(p) = self.pending.remove(&id) {
            finish(&mut self.limiter, p, Err(error));
        }
    }

    /// Answers `NotLeader`: the command certainly was not applied (never proposed, or in
    /// a batch every replica skips).
    pub(crate) fn not_applied(&mut self, RequestId(id): RequestId, leader: Option<NodeId>) {
        if let Some(p) = self.pending.remove(&id) {
            let error = self.not_leader(leader);
            finish(&mut self.limiter, p, Err(error));
        }
    }

    /// This replica stopped leading in `term`, with `last_log_index` in its log: what it
    /// proposed up to then is lost unless applied by that index (the barrier).
    pub(crate) fn step_down(
        &mut self,
        term: Term,
        last_log_index: u64,
        applied_index: u64,
        leader: Option<NodeId>,
    ) {
        self.barrier = Some(match self.barrier {
            None => Barrier {
                index: last_log_index,
                term,
            },
            Some(b) => Barrier {
                index: b.index.max(last_log_index),
                term: b.term.max(term),
            },
        });
        self.applied(applied_index, leader);
    }

    /// Entries up to `applied_index` are applied. Once the barrier is, requests proposed
    /// in the terms it closes and not applied by then were truncated: `NotLeader`.
    pub(crate) fn applied(&mut self, applied_index: u64, leader: Option<NodeId>) {
        let Some(barrier) = self.barrier.filter(|b| applied_index >= b.index) else {
            return;
        };
        self.barrier = None;
        let (partition, leader) = (self.partition, self.other(leader));
        for (_, p) in self
            .pending
            .extract_if(.., |_, p| p.proposed_up_to(barrier.term))
        {
            finish(
                &mut self.limiter,
                p,
                Err(Error::NotLeader { partition, leader }),
            );
        }
    }

    /// A snapshot brought this replica to `applied_index`. Entries of the barrier's terms,
    /// if committed, are inside it and were never applied here: their outcome is
    /// unknown, which a `Timeout` says.
    pub(crate) fn snapshot_installed(&mut self, applied_index: u64) {
        let Some(barrier) = self.barrier.filter(|b| applied_index >= b.index) else {
            return;
        };
        self.barrier = None;
        for (_, p) in self
            .pending
            .extract_if(.., |_, p| p.proposed_up_to(barrier.term))
        {
            let error = Error::Timeout {
                partition: self.partition,
                timeout: p.timeout,
            };
            finish(&mut self.limiter, p, Err(error));
        }
    }

    /// Answers `Timeout` to every request past its deadline: its caller gave up.
    pub(crate) fn expire(&mut self, now: Instant) {
        for (_, p) in self.pending.extract_if(.., |_, p| p.deadline <= now) {
            let error = Error::Timeout {
                partition: self.partition,
                timeout: p.timeout,
            };
            finish(&mut self.limiter, p, Err(error));
        }
    }

    /// The partition stopped on a fatal error: every request is answered `Failed`, and
    /// so is every later one ([`RequestBook::refusal`]).
    pub(crate) fn fail_all(&mut self, reason: String) {
        for (_, p) in std::mem::take(&mut self.pending) {
            let error = Error::Failed {
                partition: self.partition,
                reason: reason.clone(),
            };
            finish(&mut self.limiter, p, Err(error));
        }
        self.failed = Some(reason);
    }

    /// The partition shuts down: every request is answered `ShuttingDown`, and so is
    /// every later one.
    pub(crate) fn shut_down(&mut self) {
        self.shutting_down = true;
        for (_, p) in std::mem::take(&mut self.pending) {
            let error = Error::ShuttingDown {
                partition: self.partition,
            };
            finish(&mut self.limiter, p, Err(error));
        }
    }

    /// Why the partition stopped, if it failed.
    pub(crate) fn failure(&self) -> Option<&str> {
        self.failed.as_deref()
    }

    /// Failed or shutting down: no more requests are taken.
    pub(crate) fn is_closed(&self) -> bool {
        self.failed.is_some() || self.shutting_down
    }

    pub(crate) fn limiter(&self) -> &RequestLimiter {
        &self.limiter
    }

    #[cfg(test)]
    fn len(&self) -> usize {
        self.pending.len()
    }
}

impl<R> Drop for RequestBook<R> {
    fn drop(&mut self) {
        // Only an actor that stopped without post_stop (a panic, an aborted runtime)
        // leaves requests behind.
        if !self.pending.is_empty() {
            tracing::warn!(
                requests = self.pending.len(),
                "partition stopped with requests unanswered; answering ShuttingDown"
            );
            self.shut_down();
        }
    }
}

/// Releases the request's permit (a failed request counts as dropped for the limit)
/// and sends its answer.
fn finish<R>(limiter: &mut RequestLimiter, pending: Pending<R>, result: Result<Answered<R>>) {
    limiter.release(pending.permit, Instant::now(), result.is_err());
    let _ = pending.reply.send(result);
}

#[cfg(test)]
mod tests;
