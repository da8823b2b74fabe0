//! Where scans of queue-like indexes may start.
//!
//! The activatable-jobs index and the due-date indexes are queues: entries are added at
//! the back and removed from the front. RocksDB keeps a tombstone for each removed entry
//! until compaction, so a scan from the start of such an index steps over every entry
//! ever removed there, and a partition that activated 100,000 jobs spends most of its
//! time in that walk. A floor remembers, per index prefix, a key below which the index
//! has no live entry, and scans start there.
//!
//! Floors are a cache of facts about the state, never part of it: a scan returns the
//! same entries with or without them. They hold as long as every write to a floored
//! table lowers the floor it falls under ([`ScanFloors::lower`]); the engine forgets
//! them when a command's writes are rolled back or the state is replaced.

use std::cell::RefCell;
use std::collections::HashMap;

use super::keys::table;

/// Tables whose scans use floors.
const FLOORED_TABLES: [u8; 5] = [
    table::JOB_ACTIVATABLE,
    table::JOB_DEADLINE,
    table::JOB_BACKOFF,
    table::TIMER_DUE,
    table::MESSAGE_DEADLINE,
];

/// More prefixes than this (job types, mostly) and the map starts over.
const MAX_FLOORS: usize = 4096;

#[derive(Default)]
pub struct ScanFloors {
    /// Index prefix -> the lowest key that may be live under it.
    floors: RefCell<HashMap<Vec<u8>, Vec<u8>>>,
}

impl ScanFloors {
    /// The key a scan of `prefix` may start from, if known.
    pub(super) fn start(&self, prefix: &[u8]) -> Option<Vec<u8>> {
        self.floors.borrow().get(prefix).cloned()
    }

    /// A scan of `prefix` found `first` as its lowest live key (`end`, the prefix's
    /// end, when it found none).
    pub(super) fn settle(&self, prefix: &[u8], first: Vec<u8>) {
        debug_assert!(FLOORED_TABLES.contains(&prefix[0]));
        let mut floors = self.floors.borrow_mut();
        if floors.len() >= MAX_FLOORS && !floors.contains_key(prefix) {
            floors.clear();
        }
        floors.insert(prefix.to_vec(), first);
    }

    /// `key` is being written: no floor may stay above it.
    pub(super) fn lower(&self, key: &[u8]) {
        if !key.first().is_some_and(|t| FLOORED_TABLES.contains(t)) {
            return;
        }
        for (prefix, floor) in self.floors.borrow_mut().iter_mut() {
            if key.starts_with(prefix) && key < floor.as_slice() {
                floor.clear();
                floor.extend_from_slice(key);
            }
        }
    }

    pub fn clear(&self) {
        self.floors.borrow_mut().clear();
    }
}

#[cfg(test)]
mod tests {
    use rill_engine_api::MemoryState;
    use rill_protocol::Key;

    use super::super::{DueIndex, ElementCache, KeyBuf, Reader, Writer, due_key};
    use super::*;

    /// A small deterministic generator, so a failure replays.
    struct Steps(u64);

    impl Steps {
        fn next(&mut self, below: u64) -> u64 {
            self.0 ^= self.0 << 13;
            self.0 ^= self.0 >> 7;
            self.0 ^= self.0 << 17;
            self.0 % below
        }
    }

    fn activatable(job_type: &str, key: i64) -> KeyBuf {
        KeyBuf::new(table::JOB_ACTIVATABLE).str(job_type).i64(key)
    }

    fn due_entries(reader: Reader<'_>) -> Vec<(i64, i64)> {
        let mut out = Vec::new();
        reader
            .scan_due(DueIndex::Timers, |due, key| {
                out.push((due, key));
                out.len() < 5
            })
            .unwrap();
        out
    }

    #[test]
    fn floored_scans_see_what_plain_scans_see() {
        let types = ["a", "ab", "b"];
        let mut state = MemoryState::new();
        let elements = ElementCache::default();
        let floors = ScanFloors::default();
        let mut steps = Steps(0x9e37_79b9_7f4a_7c15);
        let mut settled = 0;
        for round in 0..4000 {
            let job_type = types[steps.next(3) as usize];
            // Keys mostly grow, and now and then one comes back below the floor (a
            // failed job made activatable again keeps its key).
            let key = if steps.next(10) == 0 {
                steps.next(round + 1) as i64
            } else {
                round as i64
            };
            if steps.next(3) == 0 {
                let mut writer = Writer::new(&mut state, &elements, &floors);
                writer.mark(activatable(job_type, key));
                writer.mark(due_key(DueIndex::Timers, key % 97, key));
            } else {
                let reader = Reader::new(&state);
                let job = reader
                    .activatable_jobs(job_type, 3)
                    .unwrap()
                    .last()
                    .copied();
                let due = due_entries(reader).first().copied();
                let mut writer = Writer::new(&mut state, &elements, &floors);
                if let Some(job) = job {
                    writer.delete(activatable(job_type, job.get()));
                }
                if let Some((due, key)) = due {
                    writer.delete(due_key(DueIndex::Timers, due, key));
                }
            }
            let plain = Reader::new(&state);
            let floored = Reader::with_floors(&state, &floors);
            for job_type in types {
                let limit = 1 + steps.next(4) as usize;
                assert_eq!(
                    floored.activatable_jobs(job_type, limit).unwrap(),
                    plain.activatable_jobs(job_type, limit).unwrap(),
                    "type {job_type} after round {round}"
                );
            }
            assert_eq!(due_entries(floored), due_entries(plain), "round {round}");
            settled = settled.max(floors.floors.borrow().len());
        }
        // Every scanned index got a floor: the floored path was taken.
        assert_eq!(settled, types.len() + 1);
    }

    #[test]
    fn an_empty_index_gets_a_floor_that_a_new_entry_lowers() {
        let mut state = MemoryState::new();
        let elements = ElementCache::default();
        let floors = ScanFloors::default();
        let reader = Reader::with_floors(&state, &floors);
        assert!(reader.activatable_jobs("t", 10).unwrap().is_empty());
        let prefix = KeyBuf::new(table::JOB_ACTIVATABLE).str("t");
        assert_eq!(
            floors.start(prefix.bytes()),
            Some(rill_engine_api::prefix_end(prefix.bytes()))
        );
        Writer::new(&mut state, &elements, &floors).mark(activatable("t", 7));
        let reader = Reader::with_floors(&state, &floors);
        assert_eq!(reader.activatable_jobs("t", 10).unwrap(), vec![Key(7)]);
    }
}
