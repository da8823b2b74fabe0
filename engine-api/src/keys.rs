//! Key generation from a counter in replicated state: `(partition << 51) | n`.

use rill_protocol::{Key, PartitionId};

use crate::state::{StateError, StateRead, StateTxn};

/// Where the key counter lives. Reserved prefix `0x00` belongs to the partition core.
pub const KEY_COUNTER: &[u8] = b"\x00core/next-key";

/// Returns a fresh key and advances the counter in `state`.
pub fn next_key(state: &mut dyn StateTxn, partition: PartitionId) -> Result<Key, StateError> {
    let next = peek_counter(state)?;
    state.put(KEY_COUNTER, &(next + 1).to_be_bytes());
    Ok(Key::new(partition, next))
}

/// The local counter value the next key will get (keys start at 1).
pub fn peek_counter(state: &dyn StateRead) -> Result<u64, StateError> {
    match state.get(KEY_COUNTER)? {
        Some(bytes) => {
            let raw: [u8; 8] = bytes.as_slice().try_into().map_err(|e| {
                StateError::corrupt(format!("key counter has {} bytes", bytes.len()), e)
            })?;
            Ok(u64::from_be_bytes(raw))
        }
        None => Ok(1),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::state::MemoryState;

    #[test]
    fn keys_are_dense_and_carry_the_partition() {
        let mut state = MemoryState::new();
        let a = next_key(&mut state, PartitionId(2)).unwrap();
        let b = next_key(&mut state, PartitionId(2)).unwrap();
        assert_eq!(a.partition(), PartitionId(2));
        assert_eq!(a.local(), 1);
        assert_eq!(b.local(), 2);
    }

    #[test]
    fn a_corrupt_counter_is_reported_with_its_cause() {
        let mut state = MemoryState::new();
        state.put(KEY_COUNTER, &[1, 2, 3]);
        let error = peek_counter(&state).unwrap_err();
        assert!(matches!(error, StateError::Corrupt { .. }), "{error:?}");
        assert!(
            error
                .to_string()
                .starts_with("corrupt state: key counter has 3 bytes: "),
            "{error}"
        );
        assert!(std::error::Error::source(&error).is_some());
    }
}
