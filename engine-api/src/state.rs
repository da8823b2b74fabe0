//! The state an engine reads and writes: ordered bytes to bytes.
//!
//! Engines lay their tables out as key prefixes (like Zeebe's column family prefix in a
//! single RocksDB column family). Everything is ordered, so iteration is deterministic.
//! The broker backs this with RocksDB; tests and benchmarks use [`MemoryState`].

use std::collections::BTreeMap;
use std::ops::{Bound, ControlFlow};

/// Reading state failed on this replica. This is not a property of the command, so the
/// stream processor must stop rather than carry on with a different result than the
/// other replicas.
#[derive(Debug, thiserror::Error)]
pub enum StateError {
    /// The store could not do `op` (an I/O problem).
    #[error("state storage failed to {op}: {source}")]
    Storage {
        op: &'static str,
        #[source]
        source: Box<dyn std::error::Error + Send + Sync>,
    },
    /// A stored value is not what its key says it holds.
    #[error("corrupt state: {what}: {source}")]
    Corrupt {
        what: String,
        #[source]
        source: Box<dyn std::error::Error + Send + Sync>,
    },
}

impl StateError {
    pub fn storage(
        op: &'static str,
        source: impl std::error::Error + Send + Sync + 'static,
    ) -> Self {
        StateError::Storage {
            op,
            source: Box::new(source),
        }
    }

    pub fn corrupt(
        what: impl Into<String>,
        source: impl std::error::Error + Send + Sync + 'static,
    ) -> Self {
        StateError::Corrupt {
            what: what.into(),
            source: Box::new(source),
        }
    }
}

/// Called for each entry of a scan with key and value; breaks to stop the scan.
pub type ScanVisitor<'a> = dyn FnMut(&[u8], &[u8]) -> ControlFlow<()> + 'a;

/// Read access to ordered key-value state.
pub trait StateRead {
    fn get(&self, key: &[u8]) -> Result<Option<Vec<u8>>, StateError>;

    /// Visits entries with `start <= key < end` in ascending key order until `visit`
    /// breaks. An empty `end` means "no upper bound".
    fn scan(&self, start: &[u8], end: &[u8], visit: &mut ScanVisitor<'_>)
    -> Result<(), StateError>;

    /// Visits every entry whose key starts with `prefix`.
    fn scan_prefix(&self, prefix: &[u8], visit: &mut ScanVisitor<'_>) -> Result<(), StateError> {
        let end = prefix_end(prefix);
        self.scan(prefix, &end, visit)
    }
}

/// Write access: changes are buffered by the implementation and become durable only
/// when the stream processor commits its batch.
pub trait StateTxn: StateRead {
    fn put(&mut self, key: &[u8], value: &[u8]);
    fn delete(&mut self, key: &[u8]);
}

/// The smallest key greater than every key starting with `prefix` (empty = unbounded).
pub fn prefix_end(prefix: &[u8]) -> Vec<u8> {
    let mut end = prefix.to_vec();
    while let Some(last) = end.pop() {
        if last < u8::MAX {
            end.push(last + 1);
            return end;
        }
    }
    Vec::new()
}

fn range(start: &[u8], end: &[u8]) -> (Bound<Vec<u8>>, Bound<Vec<u8>>) {
    let upper = if end.is_empty() {
        Bound::Unbounded
    } else {
        Bound::Excluded(end.to_vec())
    };
    (Bound::Included(start.to_vec()), upper)
}

/// Buffered writes over a base state. Reads see the buffered writes first; scans merge
/// both in key order. Used for a command's changes over the batch, and for the batch
/// over the store, so a failed command can be rolled back by dropping its overlay.
pub struct Overlay<'a, B: StateRead + ?Sized> {
    base: &'a B,
    /// `None` marks a deletion.
    writes: BTreeMap<Vec<u8>, Option<Vec<u8>>>,
}

impl<'a, B: StateRead + ?Sized> Overlay<'a, B> {
    pub fn new(base: &'a B) -> Self {
        Overlay {
            base,
            writes: BTreeMap::new(),
        }
    }

    /// The buffered changes, in key order.
    pub fn into_writes(self) -> BTreeMap<Vec<u8>, Option<Vec<u8>>> {
        self.writes
    }

    pub fn writes(&self) -> &BTreeMap<Vec<u8>, Option<Vec<u8>>> {
        &self.writes
    }

    pub fn is_empty(&self) -> bool {
        self.writes.is_empty()
    }

    /// Takes over the changes of an inner overlay that committed.
    pub fn absorb(&mut self, writes: BTreeMap<Vec<u8>, Option<Vec<u8>>>) {
        self.writes.extend(writes);
    }
}

impl<B: StateRead + ?Sized> StateRead for Overlay<'_, B> {
    fn get(&self, key: &[u8]) -> Result<Option<Vec<u8>>, StateError> {
        match self.writes.get(key) {
            Some(value) => Ok(value.clone()),
            None => self.base.get(key),
        }
    }

    fn scan(
        &self,
        start: &[u8],
        end: &[u8],
        visit: &mut ScanVisitor<'_>,
    ) -> Result<(), StateError> {
        merge_scan(&self.writes, self.base, start, end, visit)
    }
}

impl<B: StateRead + ?Sized> StateTxn for Overlay<'_, B> {
    fn put(&mut self, key: &[u8], value: &[u8]) {
        self.writes.insert(key.to_vec(), Some(value.to_vec()));
    }

    fn delete(&mut self, key: &[u8]) {
        self.writes.insert(key.to_vec(), None);
    }
}

/// Scans `base` and the buffered `writes` together, writes shadowing base entries.
pub fn merge_scan<B: StateRead + ?Sized>(
    writes: &BTreeMap<Vec<u8>, Option<Vec<u8>>>,
    base: &B,
    start: &[u8],
    end: &[u8],
    visit: &mut ScanVisitor<'_>,
) -> Result<(), StateError> {
    let mut pending = writes.range(range(start, end)).peekable();
    let mut stopped = false;
    base.scan(start, end, &mut |key, value| {
        // Emit buffered entries that sort before this base entry.
        while let Some((wk, wv)) = pending.peek() {
            if wk.as_slice() < key {
                if let Some(wv) = wv
                    && visit(wk, wv).is_break()
                {
                    stopped = true;
                    return ControlFlow::Break(());
                }
                pending.next();
            } else {
                break;
            }
        }
        match pending.peek() {
            Some((wk, wv)) if wk.as_slice() == key => {
                let flow = match wv {
                    Some(wv) => visit(wk, wv),
                    None => ControlFlow::Continue(()),
                };
                pending.next();
                if flow.is_break() {
                    stopped = true;
                }
                flow
            }
            _ => {
                let flow = visit(key, value);
                if flow.is_break() {
                    stopped = true;
                }
                flow
            }
        }
    })?;
    if stopped {
        return Ok(());
    }
    for (wk, wv) in pending {
        if let Some(wv) = wv
            && visit(wk, wv).is_break()
        {
            break;
        }
    }
    Ok(())
}

/// State held in memory: for tests, simulations and the engine benchmark.
#[derive(Default, Clone, Debug, PartialEq, Eq)]
pub struct MemoryState {
    entries: BTreeMap<Vec<u8>, Vec<u8>>,
}

impl MemoryState {
    pub fn new() -> Self {
        Self::default()
    }

    /// Applies buffered writes (as produced by [`Overlay::into_writes`]).
    pub fn apply(&mut self, writes: BTreeMap<Vec<u8>, Option<Vec<u8>>>) {
        for (key, value) in writes {
            match value {
                Some(value) => {
                    self.entries.insert(key, value);
                }
                None => {
                    self.entries.remove(&key);
                }
            }
        }
    }

    pub fn len(&self) -> usize {
        self.entries.len()
    }

    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    pub fn iter(&self) -> impl Iterator<Item = (&Vec<u8>, &Vec<u8>)> {
        self.entries.iter()
    }
}

impl StateRead for MemoryState {
    fn get(&self, key: &[u8]) -> Result<Option<Vec<u8>>, StateError> {
        Ok(self.entries.get(key).cloned())
    }

    fn scan(
        &self,
        start: &[u8],
        end: &[u8],
        visit: &mut ScanVisitor<'_>,
    ) -> Result<(), StateError> {
        for (key, value) in self.entries.range(range(start, end)) {
            if visit(key, value).is_break() {
                break;
            }
        }
        Ok(())
    }
}

impl StateTxn for MemoryState {
    fn put(&mut self, key: &[u8], value: &[u8]) {
        self.entries.insert(key.to_vec(), value.to_vec());
    }

    fn delete(&mut self, key: &[u8]) {
        self.entries.remove(key);
    }
}

/// A digest of all state, for replicas to compare at the same applied index
/// (FNV-1a over length-prefixed keys and values, in key order).
pub fn state_digest(state: &dyn StateRead) -> Result<u64, StateError> {
    let mut hash: u64 = 0xcbf2_9ce4_8422_2325;
    let mut feed = |bytes: &[u8]| {
        for &b in (bytes.len() as u64).to_le_bytes().iter().chain(bytes) {
            hash ^= u64::from(b);
            hash = hash.wrapping_mul(0x0100_0000_01b3);
        }
    };
    state.scan(&[], &[], &mut |k, v| {
        feed(k);
        feed(v);
        ControlFlow::Continue(())
    })?;
    Ok(hash)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn collect(state: &dyn StateRead, start: &[u8], end: &[u8]) -> Vec<(Vec<u8>, Vec<u8>)> {
        let mut out = Vec::new();
        state
            .scan(start, end, &mut |k, v| {
                out.push((k.to_vec(), v.to_vec()));
                ControlFlow::Continue(())
            })
            .unwrap();
        out
    }

    #[test]
    fn overlay_reads_its_writes_and_shadows_base() {
        let mut base = MemoryState::new();
        base.put(b"a", b"1");
        base.put(b"b", b"2");
        base.put(b"d", b"4");
        let mut overlay = Overlay::new(&base);
        overlay.put(b"c", b"3");
        overlay.put(b"b", b"20");
        overlay.delete(b"d");
        overlay.put(b"e", b"5");
        assert_eq!(overlay.get(b"b").unwrap(), Some(b"20".to_vec()));
        assert_eq!(overlay.get(b"d").unwrap(), None);
        let all = collect(&overlay, b"", b"");
        let keys: Vec<_> = all.iter().map(|(k, v)| (k[0], v.clone())).collect();
        assert_eq!(
            keys,
            vec![
                (b'a', b"1".to_vec()),
                (b'b', b"20".to_vec()),
                (b'c', b"3".to_vec()),
                (b'e', b"5".to_vec()),
            ]
        );
        assert_eq!(collect(&overlay, b"b", b"d").len(), 2);
    }

    #[test]
    fn overlay_scan_stops_when_asked() {
        let mut base = MemoryState::new();
        for k in [b"a", b"c", b"e"] {
            base.put(k, b"x");
        }
        let mut overlay = Overlay::new(&base);
        overlay.put(b"b", b"y");
        overlay.put(b"f", b"y");
        let mut seen = Vec::new();
        overlay
            .scan(b"", b"", &mut |k, _| {
                seen.push(k[0]);
                if seen.len() == 3 {
                    ControlFlow::Break(())
                } else {
                    ControlFlow::Continue(())
                }
            })
            .unwrap();
        assert_eq!(seen, vec![b'a', b'b', b'c']);
    }

    #[test]
    fn nested_overlays_roll_back_by_dropping() {
        let base = MemoryState::new();
        let mut batch = Overlay::new(&base);
        batch.put(b"k", b"batch");
        {
            let mut cmd = Overlay::new(&batch);
            cmd.put(b"k", b"cmd");
            assert_eq!(cmd.get(b"k").unwrap(), Some(b"cmd".to_vec()));
            // dropped: rolled back
        }
        assert_eq!(batch.get(b"k").unwrap(), Some(b"batch".to_vec()));
    }

    #[test]
    fn prefix_end_handles_ff() {
        assert_eq!(prefix_end(b"ab"), b"ac".to_vec());
        assert_eq!(prefix_end(&[1, 0xff]), vec![2]);
        assert_eq!(prefix_end(&[0xff, 0xff]), Vec::<u8>::new());
    }

    #[test]
    fn digest_depends_on_content() {
        let mut a = MemoryState::new();
        a.put(b"k", b"v");
        let mut b = MemoryState::new();
        b.put(b"k", b"w");
        assert_ne!(state_digest(&a).unwrap(), state_digest(&b).unwrap());
        b.put(b"k", b"v");
        assert_eq!(state_digest(&a).unwrap(), state_digest(&b).unwrap());
    }
}
