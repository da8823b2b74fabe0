//! The checks at the end of a run, on every replica's state and records.

use std::collections::{BTreeMap, BTreeSet};

use rill_broker::RocksState;
use rill_protocol::{Intent, Position, RecordType, ValueType, codec};

use crate::Cluster;
use crate::rng::{FNV_START, fnv};
use crate::world::SharedWorld;

/// The process instances that ended, by the records of the first replica that is up.
pub(crate) fn ended_instances(cluster: &Cluster) -> Option<BTreeSet<i64>> {
    let node = cluster.nodes.iter().find(|n| n.raft().is_some())?;
    let records = rill_broker::read_records(&node.state.current(), Position(1), usize::MAX).ok()?;
    Some(
        records
            .iter()
            .filter(|r| {
                r.value_type == ValueType::ProcessInstance && r.intent == Intent::ElementCompleted
            })
            .map(|r| r.key.0)
            .collect(),
    )
}

/// The checks at the end: equal state digests, equal dense records, every acknowledged
/// command in the log, no job completed twice. Returns the record count.
pub(crate) fn check_end_state(world: &SharedWorld, cluster: &Cluster) -> u64 {
    let mut problems = Vec::new();
    let mut digests = BTreeMap::new();
    let mut record_digests = BTreeMap::new();
    let mut record_count = 0;
    for node in &cluster.nodes {
        let db = node.state.current();
        match rill_engine_api::state_digest(&RocksState::new(&db)) {
            Ok(digest) => {
                digests.insert(node.id, digest);
            }
            Err(e) => problems.push(format!("node {}: state digest: {e}", node.id)),
        }
        let records = match rill_broker::read_records(&db, Position(1), usize::MAX) {
            Ok(records) => records,
            Err(e) => {
                problems.push(format!("node {}: read records: {e}", node.id));
                continue;
            }
        };
        let mut hash = FNV_START;
        let mut completed: BTreeMap<i64, u32> = BTreeMap::new();
        let mut ended = BTreeSet::new();
        let mut last_timestamp = i64::MIN;
        for (i, record) in records.iter().enumerate() {
            if record.position.get() != i as u64 + 1 {
                problems.push(format!(
                    "node {}: record {} is at position {}",
                    node.id,
                    i + 1,
                    record.position.get()
                ));
                break;
            }
            if record.timestamp.millis() < last_timestamp {
                problems.push(format!(
                    "node {}: record {} has a timestamp before the one at {}",
                    node.id,
                    record.position.get(),
                    i
                ));
            }
            last_timestamp = last_timestamp.max(record.timestamp.millis());
            if record.value_type == ValueType::ProcessInstance
                && record.intent == Intent::ElementCompleted
            {
                ended.insert(record.key.0);
            }
            if let Ok(bytes) = codec::encode(record) {
                hash = fnv(hash, &bytes);
            }
            if record.value_type == ValueType::Job
                && record.intent == Intent::Completed
                && record.record_type == RecordType::Event
            {
                *completed.entry(record.key.0).or_default() += 1;
            }
        }
        for (job, times) in completed {
            if times > 1 {
                problems.push(format!(
                    "node {}: job {job} completed {times} times",
                    node.id
                ));
            }
        }
        let unfinished: Vec<i64> = {
            let w = world.lock();
            w.instances
                .iter()
                .copied()
                .filter(|key| !ended.contains(key))
                .collect()
        };
        if !unfinished.is_empty() {
            problems.push(format!(
                "node {}: {} acknowledged instances did not end after the faults: {:?}",
                node.id,
                unfinished.len(),
                &unfinished[..unfinished.len().min(5)]
            ));
        }
        record_count = records.len() as u64;
        record_digests.insert(node.id, (records.len(), hash));
    }
    if digests.values().collect::<BTreeSet<_>>().len() > 1 {
        problems.push(format!("state digests differ: {digests:?}"));
    }
    if record_digests.values().collect::<BTreeSet<_>>().len() > 1 {
        problems.push(format!(
            "records differ (count, digest): {record_digests:?}"
        ));
    }
    let mut w = world.lock();
    for node in &cluster.nodes {
        let applied = w.applied.get(&node.id).cloned().unwrap_or_default();
        let first = applied.first().map_or(0, |e| e.index);
        for ack in &w.acks {
            let found = ack
                .index
                .checked_sub(first)
                .and_then(|i| applied.get(i as usize));
            if !found.is_some_and(|e| e.term == ack.term && e.data == ack.data) {
                problems.push(format!(
                    "acknowledged {} at index {} term {} is not in node {}'s applied log (found {found:?})",
                    ack.what, ack.index, ack.term, node.id
                ));
            }
        }
    }
    w.trace(format_args!(
        "end: digests {digests:?} records {record_digests:?}"
    ));
    for problem in problems {
        w.violation(problem);
    }
    record_count
}
