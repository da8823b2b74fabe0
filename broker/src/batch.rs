//! The bytes of a raft log entry: a batch of commands stamped with the leader's clock
//! and the term it was built in.
//!
//! ```text
//! version 3: u8 version | u64 term | i64 timestamp (ms) | u32 max records | u64 max bytes
//!            | u32 count | commands
//!   per command: u8 kind | u64 request id (0 = none) | u32 length | command (rill codec)
//! version 2: u8 version | u64 term | i64 timestamp (ms) | u32 count | commands (read only)
//!   per command: as in version 3
//! version 1: u8 version | i64 timestamp (ms) | u32 count | commands   (read only)
//!   per command: u64 request id (0 = none) | u32 length | command (rill codec)
//! ```
//! The kind tells an engine command (0) from one of the partition core's own (1, e.g.
//! the exporters' positions) and from an engine command that may only be applied once
//! the partition has recorded a backup checkpoint (2: a command from another partition
//! or an acknowledgement, with the other side's checkpoint id as a u64 before the
//! command; docs/decisions/backup.md); version 1 has engine commands only. The limits are the
//! leader's bounds on one command's work (`engine.max-*-per-command`): they travel in
//! the entry so every replica stops a command at the same record; entries of versions
//! 1 and 2 apply under the default limits.
//! Little endian. Commands are framed one by one so the leader can stop adding to a
//! batch when it reaches `raft.max-batch-size`, and a replica decodes each on its own.
//!
//! The term lets every replica refuse, deterministically, a batch that raft appended in a
//! later term than the one it was built for (a proposal that reached raft after its
//! proposer lost leadership and won it again): such a batch is skipped, so a request
//! its proposer has given up on as "not applied" can never be applied after all.

use rill_engine_api::{CommandLimits, RequestId};
use rill_protocol::{Term, Timestamp, codec};
use serde::Serialize;
use serde::de::DeserializeOwned;

use crate::error::Error;

const VERSION: u8 = 3;
const HEADER: usize = 1 + 8 + 8 + 4 + 8 + 4;
const COUNT_AT: usize = 29;
const V2: u8 = 2;
const V2_HEADER: usize = 1 + 8 + 8 + 4;
const V1: u8 = 1;
const V1_HEADER: usize = 1 + 8 + 4;
const KIND_ENGINE: u8 = 0;
const KIND_CORE: u8 = 1;
const KIND_AFTER_CHECKPOINT: u8 = 2;

/// One command of an entry.
#[derive(Debug)]
pub(crate) enum Item<C> {
    /// For the engine, with the client request waiting for it on the leader.
    Engine(Option<RequestId>, C),
    /// For the partition core itself.
    Core(CoreCommand),
    /// For the engine, but only once the partition's latest checkpoint is at least
    /// `checkpoint_id`: a command from another partition, or the acknowledgement of one
    /// this partition sent, with the other side's checkpoint id. Every replica refuses
    /// it alike if the partition has not recorded that checkpoint yet (the leader
    /// proposes the checkpoint ahead of it, so this is a safeguard).
    AfterCheckpoint {
        request: Option<RequestId>,
        checkpoint_id: u64,
        command: C,
    },
}

/// Commands the partition core proposes for itself and applies without the engine.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub(crate) enum CoreCommand {
    /// The exporters' positions as the leader's director knows them (every configured
    /// exporter, by id). Export entries at or below the lowest are deleted; with no
    /// exporters, every entry written so far.
    Exported { positions: Vec<(String, u64)> },
    /// Removes finished instances that ended before `before` (epoch milliseconds), with
    /// their jobs and incidents, from the history store, at most
    /// `rill_history::EXPIRE_LIMIT` entries in all (the leader
    /// proposes it again while more are due). The cutoff travels in the log, so every
    /// replica removes the same ones.
    ExpireHistory { before: i64 },
    /// The next cluster configuration (partition 1 only; see
    /// docs/decisions/cluster-scaling.md): `json` at `version`, stored if the stored one
    /// is still at `expected_version`.
    ClusterConfiguration {
        expected_version: u64,
        version: u64,
        json: String,
    },
    /// The cluster has `count` partitions (added ones included): deployments and
    /// signals go to all of them from here on. Never lowers the stored count; raising
    /// it hands the engine `Engine::partitions_added` (docs/decisions/cluster-scaling.md).
    PartitionCount { count: u16 },
    /// Marks a backup: every replica records `backup_id` as the partition's latest
    /// checkpoint if it is greater than the one recorded (else the command is refused,
    /// on every replica alike). The entry carrying it is the backup's cut: the leader
    /// ends an entry after a checkpoint, and the replica applies and writes the entries
    /// up to it apart from the rest of the batch (docs/decisions/backup.md).
    Checkpoint { backup_id: u64 },
    /// Raises the partition's replicated engine version to `version` (never lowers it),
    /// proposed by the leader once every broker of the cluster announced that it
    /// applies `version` (docs/decisions/versions.md). A replica that does not stops
    /// the partition instead of diverging. (Appended: variants keep their encoding.)
    RaiseEngineVersion { version: u32 },
}

impl CoreCommand {
    /// The engine version the log must be at before a leader writes this command: the
    /// ones a replica of the first release cannot read need version 2.
    pub(crate) fn required_engine_version(&self) -> u32 {
        use rill_protocol::version::{ENGINE_VERSION_1, ENGINE_VERSION_2};
        match self {
            CoreCommand::ExpireHistory { .. } | CoreCommand::Checkpoint { .. } => ENGINE_VERSION_2,
            CoreCommand::Exported { .. }
            | CoreCommand::ClusterConfiguration { .. }
            | CoreCommand::PartitionCount { .. }
            | CoreCommand::RaiseEngineVersion { .. } => ENGINE_VERSION_1,
        }
    }
}

/// Builds the bytes of one entry.
pub(crate) struct BatchBuilder {
    buf: Vec<u8>,
    count: u32,
}

impl BatchBuilder {
    /// A batch built while leading in `term`, whose commands apply under `limits`.
    pub fn new(timestamp: Timestamp, term: Term, limits: CommandLimits) -> Self {
        let mut buf = Vec::with_capacity(4096);
        buf.push(VERSION);
        buf.extend_from_slice(&term.get().to_le_bytes());
        buf.extend_from_slice(&timestamp.millis().to_le_bytes());
        buf.extend_from_slice(&limits.max_records.to_le_bytes());
        buf.extend_from_slice(&limits.max_bytes.to_le_bytes());
        buf.extend_from_slice(&0u32.to_le_bytes());
        BatchBuilder { buf, count: 0 }
    }

    /// Appends an engine command.
    pub fn push<C: Serialize>(
        &mut self,
        request: Option<RequestId>,
        command: &C,
    ) -> Result<(), Error> {
        self.push_kind(KIND_ENGINE, request, None, command)
    }

    /// Appends a command of the partition core.
    pub fn push_core(&mut self, command: &CoreCommand) -> Result<(), Error> {
        self.push_kind(KIND_CORE, None, None, command)
    }

    /// Appends an engine command to be applied only once the partition has recorded
    /// checkpoint `checkpoint_id` ([`Item::AfterCheckpoint`]); with 0 (no backup taken
    /// anywhere yet), a plain engine command, which any version reads.
    pub fn push_after_checkpoint<C: Serialize>(
        &mut self,
        request: Option<RequestId>,
        checkpoint_id: u64,
        command: &C,
    ) -> Result<(), Error> {
        if checkpoint_id == 0 {
            return self.push(request, command);
        }
        self.push_kind(KIND_AFTER_CHECKPOINT, request, Some(checkpoint_id), command)
    }

    fn push_kind<C: Serialize>(
        &mut self,
        kind: u8,
        request: Option<RequestId>,
        checkpoint_id: Option<u64>,
        command: &C,
    ) -> Result<(), Error> {
        let start = self.buf.len();
        self.buf.push(kind);
        self.buf
            .extend_from_slice(&request.map_or(0, |r| r.0).to_le_bytes());
        self.buf.extend_from_slice(&0u32.to_le_bytes());
        let body = self.buf.len();
        if let Some(checkpoint_id) = checkpoint_id {
            self.buf.extend_from_slice(&checkpoint_id.to_le_bytes());
        }
        if let Err(e) = codec::encode_into(command, &mut self.buf) {
            self.buf.truncate(start);
            return Err(e.into());
        }
        let len = (self.buf.len() - body) as u32;
        self.buf[body - 4..body].copy_from_slice(&len.to_le_bytes());
        self.count += 1;
        Ok(())
    }

    pub fn len_bytes(&self) -> usize {
        self.buf.len()
    }

    pub fn count(&self) -> u32 {
        self.count
    }

    pub fn finish(mut self) -> Vec<u8> {
        self.buf[COUNT_AT..COUNT_AT + 4].copy_from_slice(&self.count.to_le_bytes());
        self.buf
    }
}

/// A decoded entry: its timestamp and its commands, each still to be decoded.
pub(crate) struct BatchView<'a> {
    pub timestamp: Timestamp,
    /// The term the batch was built in (`None`: a version 1 batch, which has none).
    pub term: Option<Term>,
    /// The bounds on each command's work.
    pub limits: CommandLimits,
    /// Commands not yet read.
    remaining: u32,
    rest: &'a [u8],
}

fn corrupt(reason: impl Into<String>) -> Error {
    Error::CorruptEntry(reason.into())
}

impl<'a> BatchView<'a> {
    pub fn parse(bytes: &'a [u8]) -> Result<BatchView<'a>, Error> {
        let version = *bytes.first().ok_or_else(|| corrupt("empty entry"))?;
        let header = match version {
            VERSION => HEADER,
            V2 => V2_HEADER,
            V1 => V1_HEADER,
            other => return Err(corrupt(format!("unknown command batch version {other}"))),
        };
        if bytes.len() < header {
            return Err(corrupt(format!(
                "entry of {} bytes has no header",
                bytes.len()
            )));
        }
        let u64_at = |at: usize| u64::from_le_bytes(bytes[at..at + 8].try_into().expect("8 bytes"));
        let u32_at = |at: usize| u32::from_le_bytes(bytes[at..at + 4].try_into().expect("4 bytes"));
        let (term, timestamp_at) = if version == V1 {
            (None, 1)
        } else {
            (Some(Term(u64_at(1))), 9)
        };
        let limits = if version == VERSION {
            CommandLimits {
                max_records: u32_at(17),
                max_bytes: u64_at(21),
            }
        } else {
            CommandLimits::default()
        };
        Ok(BatchView {
            timestamp: Timestamp(u64_at(timestamp_at) as i64),
            term,
            limits,
            remaining: u32_at(header - 4),
            rest: &bytes[header..],
        })
    }

    /// Whether the batch may be applied as an entry raft appended in `entry_term`.
    #[must_use]
    pub fn built_for(&self, entry_term: Term) -> bool {
        self.term.is_none_or(|term| term == entry_term)
    }

    /// The requests of the batch's commands, without decoding the commands.
    pub fn requests(mut self) -> Result<Vec<RequestId>, Error> {
        let mut requests = Vec::new();
        while !self.rest.is_empty() {
            if self.term.is_some() {
                self.rest = &self.rest[1..]; // the kind
            }
            if self.rest.len() < 12 {
                return Err(corrupt("truncated command frame"));
            }
            let request = u64::from_le_bytes(
                self.rest[..8]
                    .try_into()
                    .map_err(|_| corrupt("request id"))?,
            );
            let len =
                u32::from_le_bytes(self.rest[8..12].try_into().map_err(|_| corrupt("length"))?)
                    as usize;
            let Some(rest) = self.rest.get(12 + len..) else {
                return Err(corrupt(format!("command of {len} bytes is cut off")));
            };
            self.rest = rest;
            if request != 0 {
                requests.push(RequestId(request));
            }
        }
        Ok(requests)
    }

    /// Whether the batch carries a [`CoreCommand::Checkpoint`], decoding only the core
    /// commands.
    pub fn has_checkpoint(mut self) -> Result<bool, Error> {
        if self.term.is_none() {
            return Ok(false); // version 1 carries engine commands only
        }
        while !self.rest.is_empty() {
            let kind = self.rest[0];
            self.rest = &self.rest[1..];
            if self.rest.len() < 12 {
                return Err(corrupt("truncated command frame"));
            }
            let len =
                u32::from_le_bytes(self.rest[8..12].try_into().map_err(|_| corrupt("length"))?)
                    as usize;
            let Some(command) = self.rest.get(12..12 + len) else {
                return Err(corrupt(format!("command of {len} bytes is cut off")));
            };
            if kind == KIND_CORE
                && matches!(
                    codec::decode::<CoreCommand>(command)?,
                    CoreCommand::Checkpoint { .. }
                )
            {
                return Ok(true);
            }
            self.rest = &self.rest[12 + len..];
        }
        Ok(false)
    }

    /// The next command, or `None` at the end.
    pub fn next_item<C: DeserializeOwned>(&mut self) -> Option<Result<Item<C>, Error>> {
        if self.rest.is_empty() {
            return None;
        }
        Some(self.read_one())
    }

    fn read_one<C: DeserializeOwned>(&mut self) -> Result<Item<C>, Error> {
        // Version 2 (with a term) frames each command with its kind.
        let kind = if self.term.is_some() {
            let kind = self.rest[0];
            self.rest = &self.rest[1..];
            kind
        } else {
            KIND_ENGINE
        };
        if self.rest.len() < 12 {
            self.rest = &[];
            self.remaining = 0;
            return Err(corrupt("truncated command frame"));
        }
        let request = u64::from_le_bytes(
            self.rest[..8]
                .try_into()
                .map_err(|_| corrupt("request id"))?,
        );
        let len = u32::from_le_bytes(self.rest[8..12].try_into().map_err(|_| corrupt("length"))?)
            as usize;
        let body = &self.rest[12..];
        if body.len() < len {
            self.rest = &[];
            self.remaining = 0;
            return Err(corrupt(format!(
                "command of {len} bytes, {} left",
                body.len()
            )));
        }
        let (command, rest) = body.split_at(len);
        self.rest = rest;
        match kind {
            KIND_ENGINE => Ok(Item::Engine(
                (request != 0).then_some(RequestId(request)),
                codec::decode(command)?,
            )),
            KIND_CORE => Ok(Item::Core(codec::decode(command)?)),
            KIND_AFTER_CHECKPOINT => {
                let Some((id, command)) = command.split_first_chunk::<8>() else {
                    return Err(corrupt("a command without its checkpoint id"));
                };
                Ok(Item::AfterCheckpoint {
                    request: (request != 0).then_some(RequestId(request)),
                    checkpoint_id: u64::from_le_bytes(*id),
                    command: codec::decode(command)?,
                })
            }
            other => Err(corrupt(format!("unknown command kind {other}"))),
        }
    }

    /// The next engine command (tests of the frame format).
    #[cfg(test)]
    fn next_command<C: DeserializeOwned>(
        &mut self,
    ) -> Option<Result<(Option<RequestId>, C), Error>> {
        self.next_item().map(|item| match item? {
            Item::Engine(request, command) => Ok((request, command)),
            Item::Core(core) => Err(corrupt(format!("a core command {core:?}"))),
            Item::AfterCheckpoint { checkpoint_id, .. } => Err(corrupt(format!(
                "a command after checkpoint {checkpoint_id}"
            ))),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn core_commands_travel_beside_engine_commands() {
        let exported = CoreCommand::Exported {
            positions: vec![("jsonl".to_owned(), 42)],
        };
        let mut b = BatchBuilder::new(Timestamp(5), Term(3), CommandLimits::default());
        b.push(Some(RequestId(4)), &"engine".to_owned()).unwrap();
        b.push_core(&exported).unwrap();
        let bytes = b.finish();
        assert_eq!(
            BatchView::parse(&bytes).unwrap().requests().unwrap(),
            vec![RequestId(4)]
        );
        let mut view = BatchView::parse(&bytes).unwrap();
        assert!(
            matches!(view.next_item::<String>(), Some(Ok(Item::Engine(Some(RequestId(4)), c))) if c == "engine")
        );
        assert!(matches!(view.next_item::<String>(), Some(Ok(Item::Core(c))) if c == exported));
        assert!(view.next_item::<String>().is_none());
    }

    #[test]
    fn a_command_after_a_checkpoint_carries_its_id_and_none_is_a_plain_command() {
        let mut b = BatchBuilder::new(Timestamp(5), Term(3), CommandLimits::default());
        b.push_after_checkpoint(Some(RequestId(9)), 12, &"delivered".to_owned())
            .unwrap();
        b.push_after_checkpoint(None, 0, &"before any backup".to_owned())
            .unwrap();
        b.push_after_checkpoint(None, u64::MAX, &"ack".to_owned())
            .unwrap();
        let bytes = b.finish();
        assert_eq!(
            BatchView::parse(&bytes).unwrap().requests().unwrap(),
            vec![RequestId(9)]
        );
        assert!(!BatchView::parse(&bytes).unwrap().has_checkpoint().unwrap());
        let mut view = BatchView::parse(&bytes).unwrap();
        assert!(matches!(
            view.next_item::<String>(),
            Some(Ok(Item::AfterCheckpoint { request: Some(RequestId(9)), checkpoint_id: 12, command }))
                if command == "delivered"
        ));
        assert!(
            matches!(view.next_item::<String>(), Some(Ok(Item::Engine(None, c))) if c == "before any backup")
        );
        assert!(matches!(
            view.next_item::<String>(),
            Some(Ok(Item::AfterCheckpoint { request: None, checkpoint_id: u64::MAX, command }))
                if command == "ack"
        ));
        assert!(view.next_item::<String>().is_none());

        // Cut anywhere, it is an error, never a panic.
        for cut in HEADER..bytes.len() {
            let mut view = BatchView::parse(&bytes[..cut]).unwrap();
            while let Some(item) = view.next_item::<String>() {
                if item.is_err() {
                    break;
                }
            }
        }
    }

    #[test]
    fn round_trips_commands_with_and_without_requests() {
        let mut b = BatchBuilder::new(Timestamp(1234), Term(5), CommandLimits::default());
        b.push(Some(RequestId(7)), &"first".to_owned()).unwrap();
        b.push(None, &"second".to_owned()).unwrap();
        assert_eq!(b.count(), 2);
        let bytes = b.finish();
        assert_eq!(
            BatchView::parse(&bytes).unwrap().requests().unwrap(),
            vec![RequestId(7)]
        );
        let mut view = BatchView::parse(&bytes).unwrap();
        assert_eq!(view.timestamp, Timestamp(1234));
        assert_eq!(view.term, Some(Term(5)));
        assert!(view.built_for(Term(5)));
        assert!(
            !view.built_for(Term(6)),
            "appended in a later term than built for"
        );
        let (r, c): (_, String) = view.next_command().unwrap().unwrap();
        assert_eq!((r, c.as_str()), (Some(RequestId(7)), "first"));
        let (r, c): (_, String) = view.next_command().unwrap().unwrap();
        assert_eq!((r, c.as_str()), (None, "second"));
        assert!(view.next_command::<String>().is_none());
    }

    #[test]
    fn truncated_entries_are_errors_not_panics() {
        let mut b = BatchBuilder::new(Timestamp(1), Term(1), CommandLimits::default());
        b.push(Some(RequestId(1)), &vec![1u32, 2, 3]).unwrap();
        let bytes = b.finish();
        for cut in 0..bytes.len() {
            match BatchView::parse(&bytes[..cut]) {
                Err(_) => {}
                Ok(mut view) => {
                    let got = view.next_command::<Vec<u32>>();
                    assert!(matches!(got, Some(Err(_)) | None), "cut {cut}");
                    let requests = BatchView::parse(&bytes[..cut]).unwrap().requests();
                    assert!(requests.is_err() || cut == HEADER, "cut {cut}");
                }
            }
        }
    }

    #[test]
    fn the_leaders_limits_travel_in_the_entry() {
        let limits = CommandLimits {
            max_records: 1234,
            max_bytes: 5 << 30,
        };
        let mut b = BatchBuilder::new(Timestamp(8), Term(2), limits);
        b.push(None, &"x".to_owned()).unwrap();
        let bytes = b.finish();
        let mut view = BatchView::parse(&bytes).unwrap();
        assert_eq!(view.limits, limits);
        assert_eq!((view.timestamp, view.term), (Timestamp(8), Some(Term(2))));
        let (_, c): (_, String) = view.next_command().unwrap().unwrap();
        assert_eq!(c, "x");
    }

    #[test]
    fn the_default_limits_are_the_configurations_defaults() {
        let config = rill_config::RillConfig::default();
        let partition = crate::PartitionConfig::from_config(
            &config,
            rill_protocol::PartitionId(1),
            rill_protocol::NodeId(0),
            Default::default(),
        );
        assert_eq!(partition.command_limits, CommandLimits::default());
    }

    #[test]
    fn version_2_batches_are_still_read_under_the_default_limits() {
        let mut bytes = vec![V2];
        bytes.extend_from_slice(&4u64.to_le_bytes());
        bytes.extend_from_slice(&66i64.to_le_bytes());
        bytes.extend_from_slice(&1u32.to_le_bytes());
        bytes.push(KIND_ENGINE);
        bytes.extend_from_slice(&3u64.to_le_bytes());
        let body = codec::encode(&"v2".to_owned()).unwrap();
        bytes.extend_from_slice(&(body.len() as u32).to_le_bytes());
        bytes.extend_from_slice(&body);
        assert_eq!(
            BatchView::parse(&bytes).unwrap().requests().unwrap(),
            vec![RequestId(3)]
        );
        let mut view = BatchView::parse(&bytes).unwrap();
        assert_eq!((view.timestamp, view.term), (Timestamp(66), Some(Term(4))));
        assert_eq!(view.limits, CommandLimits::default());
        let (r, c): (_, String) = view.next_command().unwrap().unwrap();
        assert_eq!((r, c.as_str()), (Some(RequestId(3)), "v2"));
    }

    #[test]
    fn version_1_batches_are_still_read_and_apply_in_any_term() {
        let mut bytes = vec![V1];
        bytes.extend_from_slice(&77i64.to_le_bytes());
        bytes.extend_from_slice(&1u32.to_le_bytes());
        bytes.extend_from_slice(&9u64.to_le_bytes());
        let body = codec::encode(&"old".to_owned()).unwrap();
        bytes.extend_from_slice(&(body.len() as u32).to_le_bytes());
        bytes.extend_from_slice(&body);
        let mut view = BatchView::parse(&bytes).unwrap();
        assert_eq!((view.timestamp, view.term), (Timestamp(77), None));
        assert!(view.built_for(Term(3)));
        let (r, c): (_, String) = view.next_command().unwrap().unwrap();
        assert_eq!((r, c.as_str()), (Some(RequestId(9)), "old"));
    }
}
