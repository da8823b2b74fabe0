//! Identifiers with meaning: partitions, keys, positions, timestamps.

use std::fmt;

use serde::{Deserialize, Serialize};

/// Number of low bits of a [`Key`] that hold the partition-local counter (Zeebe's layout:
/// 13 partition bits above 51 counter bits).
pub const KEY_LOCAL_BITS: u32 = 51;
/// The largest partition id whose keys stay positive. Zeebe reserves 13 bits, but with
/// a signed 64-bit key only 12 of them keep the sign bit clear.
pub const MAX_PARTITION_ID: u16 = (1 << 12) - 1;

/// A partition, numbered from 1 as in Zeebe.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(transparent)]
pub struct PartitionId(pub u16);

impl PartitionId {
    pub const fn get(self) -> u16 {
        self.0
    }
}

impl fmt::Display for PartitionId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.0.fmt(f)
    }
}

/// A broker in the cluster, numbered from 0.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(transparent)]
pub struct NodeId(pub u32);

impl fmt::Display for NodeId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.0.fmt(f)
    }
}

/// A globally unique key: `(partition_id << 51) | local counter`.
///
/// Keys travel as JSON strings in the REST API; inside records they are plain `i64`s as
/// in Zeebe, where `-1` means "no key".
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(transparent)]
pub struct Key(pub i64);

impl Key {
    /// The "no key" marker used in record values, as in Zeebe.
    pub const NONE: Key = Key(-1);

    /// Builds the key for `local` on `partition`.
    pub const fn new(partition: PartitionId, local: u64) -> Key {
        Key(((partition.0 as i64) << KEY_LOCAL_BITS) | (local as i64 & ((1 << KEY_LOCAL_BITS) - 1)))
    }

    /// The partition that generated this key (and owns what it names).
    pub const fn partition(self) -> PartitionId {
        PartitionId((self.0 >> KEY_LOCAL_BITS) as u16)
    }

    /// The partition-local counter value.
    pub const fn local(self) -> u64 {
        (self.0 & ((1 << KEY_LOCAL_BITS) - 1)) as u64
    }

    pub const fn get(self) -> i64 {
        self.0
    }

    pub const fn is_none(self) -> bool {
        self.0 < 0
    }

    /// Parses a key as a client sends it (a decimal string). Returns `None` for anything
    /// that is not a positive key with a valid partition.
    pub fn parse(text: &str) -> Option<Key> {
        let value: i64 = text.trim().parse().ok()?;
        let key = Key(value);
        if value <= 0 || key.partition().0 == 0 {
            return None;
        }
        Some(key)
    }
}

impl fmt::Display for Key {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.0.fmt(f)
    }
}

/// The position of a record in a partition's record stream. Dense, starting at 1, and
/// identical on every replica.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(transparent)]
pub struct Position(pub u64);

impl Position {
    pub const ZERO: Position = Position(0);

    pub const fn get(self) -> u64 {
        self.0
    }

    pub const fn next(self) -> Position {
        Position(self.0 + 1)
    }
}

impl fmt::Display for Position {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.0.fmt(f)
    }
}

/// A raft leadership term of a partition. Terms only grow: an answer from an earlier term
/// than the partition's current one outlived the leader that gave it. Encoded as the bare
/// `u64` (the wire and the log did not change when the type came).
#[derive(
    Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize,
)]
#[serde(transparent)]
pub struct Term(pub u64);

impl Term {
    pub const ZERO: Term = Term(0);

    pub const fn get(self) -> u64 {
        self.0
    }
}

impl fmt::Display for Term {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.0.fmt(f)
    }
}

/// (year, month 1-12, day 1-31) of a day count since 1970-01-01, in the proleptic
/// Gregorian calendar: days are counted in 400-year eras of 146,097 days that start on
/// March 1st, so that a leap day is the last day of its era year.
pub fn civil_from_days(days: i64) -> (i64, u32, u32) {
    let shifted = days + 719_468; // days from 0000-03-01 to 1970-01-01
    let era = shifted.div_euclid(146_097);
    let day_of_era = shifted.rem_euclid(146_097);
    let year_of_era =
        (day_of_era - day_of_era / 1460 + day_of_era / 36_524 - day_of_era / 146_096) / 365;
    let day_of_year = day_of_era - (365 * year_of_era + year_of_era / 4 - year_of_era / 100);
    let month_from_march = (5 * day_of_year + 2) / 153;
    let day = (day_of_year - (153 * month_from_march + 2) / 5 + 1) as u32;
    let month = if month_from_march < 10 {
        month_from_march + 3
    } else {
        month_from_march - 9
    } as u32;
    let year = year_of_era + era * 400 + i64::from(month <= 2);
    (year, month, day)
}

/// Milliseconds since the Unix epoch. Inside the engine this only ever comes from a log
/// entry (stamped by the leader), never from the machine clock.
#[derive(
    Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize,
)]
#[serde(transparent)]
pub struct Timestamp(pub i64);

impl Timestamp {
    pub const fn millis(self) -> i64 {
        self.0
    }

    pub const fn plus_millis(self, millis: i64) -> Timestamp {
        Timestamp(self.0.saturating_add(millis))
    }
}

impl fmt::Display for Timestamp {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.0.fmt(f)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn key_round_trips_partition_and_local() {
        let key = Key::new(PartitionId(3), 42);
        assert_eq!(key.partition(), PartitionId(3));
        assert_eq!(key.local(), 42);
        assert_eq!(key.get(), (3_i64 << 51) | 42);
    }

    #[test]
    fn key_matches_zeebe_layout_for_max_partition() {
        let key = Key::new(PartitionId(MAX_PARTITION_ID), (1 << 51) - 1);
        assert_eq!(key.partition(), PartitionId(MAX_PARTITION_ID));
        assert_eq!(key.local(), (1 << 51) - 1);
        assert!(key.get() > 0);
    }

    #[test]
    fn a_term_encodes_as_its_bare_u64() {
        // Answers and topologies carried terms as `u64` before the type existed.
        for value in [0, 1, 250, 251, 65_536, u64::MAX] {
            assert_eq!(
                crate::codec::encode(&Term(value)).unwrap(),
                crate::codec::encode(&value).unwrap(),
                "term {value}"
            );
            let old_bytes = crate::codec::encode(&value).unwrap();
            assert_eq!(
                crate::codec::decode::<Term>(&old_bytes).unwrap(),
                Term(value)
            );
        }
        assert_eq!(serde_json::to_string(&Term(7)).unwrap(), "7");
    }

    #[test]
    fn key_parse_rejects_garbage_and_partition_zero() {
        assert_eq!(Key::parse("2251799813685249"), Some(Key(2251799813685249)));
        assert_eq!(Key::parse("abc"), None);
        assert_eq!(Key::parse("-5"), None);
        assert_eq!(Key::parse("17"), None, "partition 0 does not exist");
    }
}
