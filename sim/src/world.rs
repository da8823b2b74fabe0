//! What the simulated nodes share: the seeded generator, the network's faults, the
//! trace, and what the invariants are checked against. One lock, taken only for short
//! synchronous work; everything runs on one thread, so it is never contended and the
//! order of its users is the scheduler's (deterministic) order.

use std::collections::{BTreeMap, BTreeSet};
use std::fmt::Write as _;
use std::sync::Arc;

use parking_lot::Mutex;
use rill_engine_api::RequestId;
use rill_protocol::CommandResponse;
use tokio::time::Instant;

use crate::rng::{FNV_START, SimRng, fnv};

pub type NodeId = u64;

/// How the network misbehaves, chosen by the seed (per mille, milliseconds).
#[derive(Clone, Debug)]
pub struct NetFaults {
    pub drop_per_mille: u64,
    pub duplicate_per_mille: u64,
    pub min_delay_ms: u64,
    pub max_delay_ms: u64,
}

impl NetFaults {
    pub const CALM: NetFaults = NetFaults {
        drop_per_mille: 0,
        duplicate_per_mille: 0,
        min_delay_ms: 1,
        max_delay_ms: 5,
    };
}

/// One applied raft entry as the invariants see it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct AppliedEntry {
    pub index: u64,
    pub term: u64,
    /// The node that led when the entry was appended (openraft's leader id is the term
    /// and this node).
    pub leader: NodeId,
    /// FNV of the entry's bytes (0 for raft's own entries).
    pub data: u64,
}

/// A command the cluster acknowledged: it must be in every replica's log at `index`.
#[derive(Clone, Debug)]
pub struct Ack {
    pub index: u64,
    pub term: u64,
    pub data: u64,
    pub what: String,
}

pub struct World {
    pub rng: SimRng,
    start: Instant,
    trace_hash: u64,
    trace_lines: u64,
    /// The trace's text, when asked for (`--trace`).
    trace_text: Option<String>,
    pub faults: NetFaults,
    /// Directed links that carry nothing: (from, to).
    pub cut: BTreeSet<(NodeId, NodeId)>,
    pub next_message: u64,
    /// Per node, the entries it applied, in order.
    pub applied: BTreeMap<NodeId, Vec<AppliedEntry>>,
    /// The leaders seen in each term.
    pub leaders: BTreeMap<u64, BTreeSet<NodeId>>,
    /// The leaders whose entries were applied, by term.
    pub writers: BTreeMap<u64, BTreeSet<NodeId>>,
    /// Engine responses per node, by request, until the client takes them.
    pub responses: BTreeMap<NodeId, BTreeMap<u64, CommandResponse>>,
    /// Requests whose entries were skipped (built for an older term).
    pub skipped: BTreeSet<u64>,
    pub acks: Vec<Ack>,
    /// Jobs whose completion the cluster acknowledged.
    pub completed_jobs: BTreeSet<i64>,
    pub violations: Vec<String>,
    /// How far each node's clock is off (milliseconds; the nemesis jumps it).
    pub clock_skew: BTreeMap<NodeId, i64>,
    /// Process instances whose creation the cluster acknowledged.
    pub instances: Vec<i64>,
}

impl World {
    pub fn new(seed: u64, keep_trace: bool) -> World {
        World {
            rng: SimRng::new(seed),
            start: Instant::now(),
            trace_hash: FNV_START,
            trace_lines: 0,
            trace_text: keep_trace.then(String::new),
            faults: NetFaults::CALM,
            cut: BTreeSet::new(),
            next_message: 0,
            applied: BTreeMap::new(),
            leaders: BTreeMap::new(),
            writers: BTreeMap::new(),
            responses: BTreeMap::new(),
            skipped: BTreeSet::new(),
            acks: Vec::new(),
            completed_jobs: BTreeSet::new(),
            violations: Vec::new(),
            clock_skew: BTreeMap::new(),
            instances: Vec::new(),
        }
    }

    /// Simulated milliseconds since the run started.
    pub fn now_ms(&self) -> u64 {
        Instant::now().duration_since(self.start).as_millis() as u64
    }

    /// `node`'s wall clock: simulated time from [`crate::EPOCH_MS`], plus its skew.
    pub fn clock(&self, node: NodeId) -> rill_protocol::Timestamp {
        let skew = self.clock_skew.get(&node).copied().unwrap_or(0);
        rill_protocol::Timestamp(crate::EPOCH_MS + self.now_ms() as i64 + skew)
    }

    /// Adds a line to the trace (hashed; kept as text when asked for).
    pub fn trace(&mut self, line: std::fmt::Arguments<'_>) {
        let mut text = String::with_capacity(64);
        let _ = write!(text, "{:>8} ", self.now_ms());
        let _ = text.write_fmt(line);
        text.push('\n');
        self.trace_hash = fnv(self.trace_hash, text.as_bytes());
        self.trace_lines += 1;
        if let Some(kept) = &mut self.trace_text {
            kept.push_str(&text);
        }
    }

    pub fn trace_hash(&self) -> u64 {
        self.trace_hash
    }

    pub fn trace_lines(&self) -> u64 {
        self.trace_lines
    }

    pub fn take_trace_text(&mut self) -> Option<String> {
        self.trace_text.take()
    }

    pub fn violation(&mut self, what: String) {
        self.trace(format_args!("VIOLATION {what}"));
        self.violations.push(what);
    }

    /// Notes a leader. openraft 0.9 (without its `single-term-leader` feature) may elect
    /// two leaders in one term, one after the other: its leader id is the term and the
    /// node, and a voter grants a higher one in the same term. That is counted (see
    /// [`World::terms_with_two_leaders`]); what must not happen is checked in
    /// [`World::applied`]: entries of two leaders of one term.
    pub fn saw_leader(&mut self, term: u64, node: NodeId) {
        if self.leaders.entry(term).or_default().insert(node) {
            self.trace(format_args!("leader n{node} term {term}"));
        }
    }

    /// Terms in which more than one node was elected.
    pub fn terms_with_two_leaders(&self) -> usize {
        self.leaders.values().filter(|l| l.len() > 1).count()
    }

    /// Records entries `node` applied and checks them against what the other replicas
    /// applied at the same indexes: the same entries, in the same order.
    pub fn applied(&mut self, node: NodeId, entries: &[AppliedEntry]) {
        let mut problems = Vec::new();
        for entry in entries {
            let own = self.applied.entry(node).or_default();
            if let Some(last) = own.last()
                && entry.index != last.index + 1
            {
                problems.push(format!(
                    "node {node} applied index {} after {}",
                    entry.index, last.index
                ));
            }
            own.push(*entry);
            let writers = self.writers.entry(entry.term).or_default();
            if writers.insert(entry.leader) && writers.len() > 1 {
                problems.push(format!(
                    "entries of two leaders in term {}: nodes {writers:?}",
                    entry.term
                ));
            }
            for (&other, theirs) in &self.applied {
                if other == node {
                    continue;
                }
                if let Some(pos) = theirs.first().map(|f| entry.index.checked_sub(f.index))
                    && let Some(theirs) = pos.and_then(|p| theirs.get(p as usize))
                    && theirs != entry
                {
                    problems.push(format!(
                        "node {node} applied {entry:?} where node {other} applied {theirs:?}"
                    ));
                }
            }
        }
        for problem in problems {
            self.violation(problem);
        }
    }
}

pub type SharedWorld = Arc<Mutex<World>>;

/// Takes the response the engine gave `request` on `node`, if it applied it there.
pub fn take_response(
    world: &SharedWorld,
    node: NodeId,
    request: RequestId,
) -> Option<CommandResponse> {
    world.lock().responses.get_mut(&node)?.remove(&request.0)
}
