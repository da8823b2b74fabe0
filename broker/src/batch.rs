//! The bytes of a raft log entry: a batch of commands stamped with the leader's clock.
//!
//! ```text
//! u8 version (2) | i64 timestamp (ms) | u32 count |
//!   per command: u8 kind | u64 request id (0 = none) | u32 length | command (rill codec)
//! ```
//! Little endian. Commands are framed one by one so the leader can stop adding to a
//! batch when it reaches `raft.max-batch-size`, and a replica decodes each on its own.
//! The kind tells an engine command (0) from one of the partition core's own (1, e.g.
//! the exporters' positions). Version 1 entries (no kind byte, engine commands only)
//! are still read.

use rill_engine_api::RequestId;
use rill_protocol::{Timestamp, codec};
use serde::Serialize;
use serde::de::DeserializeOwned;

use crate::error::Error;

const VERSION: u8 = 2;
const VERSION_WITHOUT_KIND: u8 = 1;
const HEADER: usize = 1 + 8 + 4;
const KIND_ENGINE: u8 = 0;
const KIND_CORE: u8 = 1;

/// One command of an entry.
#[derive(Debug)]
pub(crate) enum Item<C> {
    /// For the engine, with the client request waiting for it on the leader.
    Engine(Option<RequestId>, C),
    /// For the partition core itself.
    Core(CoreCommand),
}

/// Commands the partition core proposes for itself and applies without the engine.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub(crate) enum CoreCommand {
    /// The exporters' positions as the leader's director knows them (every configured
    /// exporter, by id). Export entries at or below the lowest are deleted; with no
    /// exporters, every entry written so far.
    Exported { positions: Vec<(String, u64)> },
}

/// Builds the bytes of one entry.
pub(crate) struct BatchBuilder {
    buf: Vec<u8>,
    count: u32,
}

impl BatchBuilder {
    pub fn new(timestamp: Timestamp) -> Self {
        let mut buf = Vec::with_capacity(4096);
        buf.push(VERSION);
        buf.extend_from_slice(&timestamp.millis().to_le_bytes());
        buf.extend_from_slice(&0u32.to_le_bytes());
        BatchBuilder { buf, count: 0 }
    }

    /// Appends an engine command.
    pub fn push<C: Serialize>(
        &mut self,
        request: Option<RequestId>,
        command: &C,
    ) -> Result<(), Error> {
        self.push_kind(KIND_ENGINE, request, command)
    }

    /// Appends a command of the partition core.
    pub fn push_core(&mut self, command: &CoreCommand) -> Result<(), Error> {
        self.push_kind(KIND_CORE, None, command)
    }

    fn push_kind<C: Serialize>(
        &mut self,
        kind: u8,
        request: Option<RequestId>,
        command: &C,
    ) -> Result<(), Error> {
        let start = self.buf.len();
        self.buf.push(kind);
        self.buf
            .extend_from_slice(&request.map_or(0, |r| r.0).to_le_bytes());
        self.buf.extend_from_slice(&0u32.to_le_bytes());
        let body = self.buf.len();
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
        self.buf[9..13].copy_from_slice(&self.count.to_le_bytes());
        self.buf
    }
}

/// A decoded entry: its timestamp and its commands, each still to be decoded.
pub(crate) struct BatchView<'a> {
    pub timestamp: Timestamp,
    /// Whether each command starts with a kind byte (version 2 on).
    has_kind: bool,
    /// Commands not yet read.
    remaining: u32,
    rest: &'a [u8],
}

fn corrupt(reason: impl Into<String>) -> Error {
    Error::CorruptEntry(reason.into())
}

impl<'a> BatchView<'a> {
    pub fn parse(bytes: &'a [u8]) -> Result<BatchView<'a>, Error> {
        if bytes.len() < HEADER {
            return Err(corrupt(format!(
                "entry of {} bytes has no header",
                bytes.len()
            )));
        }
        if bytes[0] != VERSION && bytes[0] != VERSION_WITHOUT_KIND {
            return Err(corrupt(format!(
                "unknown command batch version {}",
                bytes[0]
            )));
        }
        let timestamp =
            i64::from_le_bytes(bytes[1..9].try_into().map_err(|_| corrupt("timestamp"))?);
        let count = u32::from_le_bytes(bytes[9..13].try_into().map_err(|_| corrupt("count"))?);
        Ok(BatchView {
            timestamp: Timestamp(timestamp),
            has_kind: bytes[0] != VERSION_WITHOUT_KIND,
            remaining: count,
            rest: &bytes[HEADER..],
        })
    }

    /// The next command, or `None` at the end.
    pub fn next_item<C: DeserializeOwned>(&mut self) -> Option<Result<Item<C>, Error>> {
        if self.rest.is_empty() {
            return None;
        }
        Some(self.read_one())
    }

    fn read_one<C: DeserializeOwned>(&mut self) -> Result<Item<C>, Error> {
        let kind = if self.has_kind {
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
            other => Err(corrupt(format!("unknown command kind {other}"))),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trips_commands_with_and_without_requests() {
        let mut b = BatchBuilder::new(Timestamp(1234));
        b.push(Some(RequestId(7)), &"first".to_owned()).unwrap();
        b.push(None, &"second".to_owned()).unwrap();
        assert_eq!(b.count(), 2);
        let bytes = b.finish();
        let mut view = BatchView::parse(&bytes).unwrap();
        assert_eq!(view.timestamp, Timestamp(1234));
        let engine = |item: Option<Result<Item<String>, Error>>| match item {
            Some(Ok(Item::Engine(r, c))) => (r, c),
            other => panic!("expected an engine command, got {other:?}"),
        };
        assert_eq!(
            engine(view.next_item()),
            (Some(RequestId(7)), "first".to_owned())
        );
        assert_eq!(engine(view.next_item()), (None, "second".to_owned()));
        assert!(view.next_item::<String>().is_none());
    }

    #[test]
    fn core_commands_travel_beside_engine_commands() {
        let exported = CoreCommand::Exported {
            positions: vec![("jsonl".to_owned(), 42)],
        };
        let mut b = BatchBuilder::new(Timestamp(5));
        b.push(None, &"engine".to_owned()).unwrap();
        b.push_core(&exported).unwrap();
        let bytes = b.finish();
        let mut view = BatchView::parse(&bytes).unwrap();
        assert!(
            matches!(view.next_item::<String>(), Some(Ok(Item::Engine(None, c))) if c == "engine")
        );
        assert!(matches!(view.next_item::<String>(), Some(Ok(Item::Core(c))) if c == exported));
        assert!(view.next_item::<String>().is_none());
    }

    #[test]
    fn version_1_entries_are_still_read() {
        // u8 version 1 | timestamp | count | request id | length | command
        let mut bytes = vec![1u8];
        bytes.extend_from_slice(&9i64.to_le_bytes());
        bytes.extend_from_slice(&1u32.to_le_bytes());
        bytes.extend_from_slice(&3u64.to_le_bytes());
        let body = codec::encode(&"old".to_owned()).unwrap();
        bytes.extend_from_slice(&(body.len() as u32).to_le_bytes());
        bytes.extend_from_slice(&body);
        let mut view = BatchView::parse(&bytes).unwrap();
        assert_eq!(view.timestamp, Timestamp(9));
        assert!(
            matches!(view.next_item::<String>(), Some(Ok(Item::Engine(Some(RequestId(3)), c))) if c == "old")
        );
        assert!(view.next_item::<String>().is_none());
    }

    #[test]
    fn truncated_entries_are_errors_not_panics() {
        let mut b = BatchBuilder::new(Timestamp(1));
        b.push(Some(RequestId(1)), &vec![1u32, 2, 3]).unwrap();
        let bytes = b.finish();
        for cut in 0..bytes.len() {
            match BatchView::parse(&bytes[..cut]) {
                Err(_) => {}
                Ok(mut view) => {
                    let got = view.next_item::<Vec<u32>>();
                    assert!(matches!(got, Some(Err(_)) | None), "cut {cut}");
                }
            }
        }
    }
}
