//! Records accepted but not yet shipped, and the exported position that follows from
//! them. Shared by the exporters so the position rule lives in one place.

use std::collections::VecDeque;
use std::time::Duration;

use rill_protocol::Position;
use tokio::time::Instant;

/// One buffered record in its serialized form.
#[derive(Debug)]
pub(crate) struct Entry {
    pub position: Position,
    /// What is sent for this record (a bulk action and document, or a JSON line).
    pub bytes: Vec<u8>,
}

/// Buffered records in position order, plus the highest position handed over.
#[derive(Debug)]
pub(crate) struct Pending {
    entries: VecDeque<Entry>,
    bytes: usize,
    /// The highest position handed to the exporter, buffered or filtered out.
    accepted: Position,
    /// When the oldest entry now buffered arrived; drives the time-based flush.
    oldest_since: Option<Instant>,
}

impl Pending {
    pub fn new(start: Position) -> Pending {
        Pending {
            entries: VecDeque::new(),
            bytes: 0,
            accepted: start,
            oldest_since: None,
        }
    }

    /// Marks `position` as handed over. Returns false if it was handed over before
    /// (a re-feed), in which case the caller must skip the record.
    pub fn accept(&mut self, position: Position) -> bool {
        if position <= self.accepted {
            return false;
        }
        self.accepted = position;
        true
    }

    /// Buffers a record accepted just before.
    pub fn push(&mut self, entry: Entry) {
        debug_assert!(entry.position <= self.accepted);
        if self.entries.is_empty() {
            self.oldest_since = Some(Instant::now());
        }
        self.bytes += entry.bytes.len();
        self.entries.push_back(entry);
    }

    pub fn len(&self) -> usize {
        self.entries.len()
    }

    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    pub fn bytes(&self) -> usize {
        self.bytes
    }

    pub fn accepted(&self) -> Position {
        self.accepted
    }

    /// Everything below the oldest buffered record is shipped or skipped; with nothing
    /// buffered, everything accepted is.
    pub fn exported_position(&self) -> Position {
        match self.entries.front() {
            Some(first) => Position(first.position.get() - 1),
            None => self.accepted,
        }
    }

    pub fn deadline(&self, delay: Duration) -> Option<Instant> {
        self.oldest_since.map(|since| since + delay)
    }

    /// The first `limit` entries, the ones the next request carries.
    pub fn front(&self, limit: usize) -> impl Iterator<Item = &Entry> {
        self.entries.iter().take(limit)
    }

    /// Removes the first `count` entries whose `settled` flag is true (shipped or
    /// permanently rejected) and keeps the others, in order, for the next attempt.
    pub fn settle_front(&mut self, settled: &[bool]) {
        let mut kept = VecDeque::with_capacity(self.entries.len());
        for (index, entry) in self.entries.drain(..).enumerate() {
            if settled.get(index).copied().unwrap_or(false) {
                self.bytes -= entry.bytes.len();
            } else {
                kept.push_back(entry);
            }
        }
        self.entries = kept;
        if self.entries.is_empty() {
            self.oldest_since = None;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn entry(position: u64) -> Entry {
        Entry {
            position: Position(position),
            bytes: vec![b'x'; 10],
        }
    }

    #[test]
    fn exported_position_stops_below_the_oldest_unshipped_record() {
        let mut pending = Pending::new(Position(10));
        assert_eq!(pending.exported_position(), Position(10));
        assert!(!pending.accept(Position(9)), "re-fed record is skipped");
        assert!(!pending.accept(Position(10)));

        assert!(pending.accept(Position(11)));
        // 11 filtered out: nothing buffered, so it counts as exported.
        assert_eq!(pending.exported_position(), Position(11));
        for p in 12..=15 {
            assert!(pending.accept(Position(p)));
            pending.push(entry(p));
        }
        assert!(pending.accept(Position(16))); // filtered, behind buffered ones
        assert_eq!(pending.exported_position(), Position(11));
        assert_eq!(pending.bytes(), 40);

        // 12 and 14 shipped, 13 and 15 failed transiently.
        pending.settle_front(&[true, false, true, false]);
        assert_eq!(pending.len(), 2);
        assert_eq!(pending.exported_position(), Position(12));
        assert_eq!(pending.bytes(), 20);

        pending.settle_front(&[true]);
        assert_eq!(pending.exported_position(), Position(14));
        pending.settle_front(&[true]);
        assert_eq!(pending.exported_position(), Position(16));
        assert!(pending.is_empty());
        assert_eq!(pending.deadline(Duration::from_secs(1)), None);
    }

    #[tokio::test(start_paused = true)]
    async fn deadline_follows_the_oldest_buffered_record() {
        let mut pending = Pending::new(Position::ZERO);
        assert!(pending.accept(Position(1)));
        let start = Instant::now();
        pending.push(entry(1));
        tokio::time::advance(Duration::from_secs(2)).await;
        assert!(pending.accept(Position(2)));
        pending.push(entry(2));
        assert_eq!(
            pending.deadline(Duration::from_secs(5)),
            Some(start + Duration::from_secs(5))
        );
    }
}
