//! Records accepted but not yet shipped, and the exported position that follows from
//! them. Shared by the exporters so the position rule lives in one place.

use std::collections::VecDeque;
use std::time::Duration;

use rill_protocol::Position;
use tokio::time::Instant;

/// Buffered records in position order, plus the highest position handed over.
///
/// The records' serialized forms (a bulk action and document, or a JSON line) sit back to
/// back in one buffer, so the oldest `n` of them are one slice, the body of the next
/// request or write, copied once. (A buffer per record cost an allocation each, and
/// gathering them into the request a copy each.)
#[derive(Debug)]
pub(crate) struct Pending {
    bytes: Vec<u8>,
    /// Each buffered record's position and where its bytes end in `bytes`.
    entries: VecDeque<(Position, usize)>,
    /// The highest position handed to the exporter, buffered or filtered out.
    accepted: Position,
    /// When the oldest entry now buffered arrived; drives the time-based flush.
    oldest_since: Option<Instant>,
}

impl Pending {
    pub fn new(start: Position) -> Pending {
        Pending {
            bytes: Vec::new(),
            entries: VecDeque::new(),
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

    /// Buffers a record accepted just before; `write` appends its serialized form.
    pub fn push(&mut self, position: Position, write: impl FnOnce(&mut Vec<u8>)) {
        debug_assert!(position <= self.accepted);
        if self.entries.is_empty() {
            self.oldest_since = Some(Instant::now());
        }
        write(&mut self.bytes);
        self.entries.push_back((position, self.bytes.len()));
    }

    pub fn len(&self) -> usize {
        self.entries.len()
    }

    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// Bytes buffered in all.
    pub fn bytes(&self) -> usize {
        self.bytes.len()
    }

    pub fn accepted(&self) -> Position {
        self.accepted
    }

    /// Everything below the oldest buffered record is shipped or skipped; with nothing
    /// buffered, everything accepted is.
    pub fn exported_position(&self) -> Position {
        match self.entries.front() {
            Some((first, _)) => Position(first.get() - 1),
            None => self.accepted,
        }
    }

    pub fn deadline(&self, delay: Duration) -> Option<Instant> {
        self.oldest_since.map(|since| since + delay)
    }

    /// The serialized forms of the first `count` entries, back to back: what the next
    /// request carries.
    pub fn front_bytes(&self, count: usize) -> &[u8] {
        match count.min(self.entries.len()) {
            0 => &[],
            n => &self.bytes[..self.entries[n - 1].1],
        }
    }

    /// The positions of the first `count` entries.
    pub fn front_positions(&self, count: usize) -> impl Iterator<Item = Position> + '_ {
        self.entries
            .iter()
            .take(count)
            .map(|(position, _)| *position)
    }

    /// The oldest entry's position and size (its bytes start the buffer, so the size is
    /// where they end).
    pub fn first(&self) -> Option<(Position, usize)> {
        self.entries
            .front()
            .map(|(position, end)| (*position, *end))
    }

    /// Removes the first entries whose `settled` flag is true (shipped or permanently
    /// rejected) and keeps the others, in order, for the next attempt.
    pub fn settle_front(&mut self, settled: &[bool]) {
        let count = settled.len().min(self.entries.len());
        if settled[..count].iter().all(|s| *s) {
            // The usual case: the whole front went out. Later entries move down.
            let cut = self.front_bytes(count).len();
            self.entries.drain(..count);
            self.bytes.drain(..cut);
            for (_, end) in &mut self.entries {
                *end -= cut;
            }
        } else {
            let mut bytes = Vec::with_capacity(self.bytes.len());
            let mut entries = VecDeque::with_capacity(self.entries.len());
            let mut start = 0;
            for (index, (position, end)) in self.entries.drain(..).enumerate() {
                if !settled.get(index).copied().unwrap_or(false) {
                    bytes.extend_from_slice(&self.bytes[start..end]);
                    entries.push_back((position, bytes.len()));
                }
                start = end;
            }
            self.bytes = bytes;
            self.entries = entries;
        }
        if self.entries.is_empty() {
            self.oldest_since = None;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Buffers ten bytes for `position`: its number, padded with dots.
    fn push(pending: &mut Pending, position: u64) {
        pending.push(Position(position), |bytes| {
            bytes.extend_from_slice(format!("{position:.<10}").as_bytes())
        });
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
            push(&mut pending, p);
        }
        assert!(pending.accept(Position(16))); // filtered, behind buffered ones
        assert_eq!(pending.exported_position(), Position(11));
        assert_eq!(pending.bytes(), 40);

        assert_eq!(pending.front_bytes(2), b"12........13........");

        // 12 and 14 shipped, 13 and 15 failed transiently.
        pending.settle_front(&[true, false, true, false]);
        assert_eq!(pending.len(), 2);
        assert_eq!(pending.exported_position(), Position(12));
        assert_eq!(pending.bytes(), 20);
        assert_eq!(pending.front_bytes(9), b"13........15........");
        assert_eq!(
            pending.front_positions(9).collect::<Vec<_>>(),
            [Position(13), Position(15)]
        );

        pending.settle_front(&[true]);
        assert_eq!(pending.exported_position(), Position(14));
        assert_eq!(pending.front_bytes(1), b"15........");
        assert_eq!(pending.first(), Some((Position(15), 10)));
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
        push(&mut pending, 1);
        tokio::time::advance(Duration::from_secs(2)).await;
        assert!(pending.accept(Position(2)));
        push(&mut pending, 2);
        assert_eq!(
            pending.deadline(Duration::from_secs(5)),
            Some(start + Duration::from_secs(5))
        );
    }
}
