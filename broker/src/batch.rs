//! The bytes of a raft log entry: a batch of commands stamped with the leader's clock.
//!
//! ```text
//! u8 version (1) | i64 timestamp (ms) | u32 count |
//!   per command: u64 request id (0 = none) | u32 length | command (rill codec)
//! ```
//! Little endian. Commands are framed one by one so the leader can stop adding to a
//! batch when it reaches `raft.max-batch-size`, and a replica decodes each on its own.

use rill_engine_api::RequestId;
use rill_protocol::{Timestamp, codec};
use serde::Serialize;
use serde::de::DeserializeOwned;

use crate::error::Error;

const VERSION: u8 = 1;
const HEADER: usize = 1 + 8 + 4;

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

    /// Appends a command.
    pub fn push<C: Serialize>(
        &mut self,
        request: Option<RequestId>,
        command: &C,
    ) -> Result<(), Error> {
        let start = self.buf.len();
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
        if bytes[0] != VERSION {
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
            remaining: count,
            rest: &bytes[HEADER..],
        })
    }

    /// The next command, or `None` at the end.
    pub fn next_command<C: DeserializeOwned>(
        &mut self,
    ) -> Option<Result<(Option<RequestId>, C), Error>> {
        if self.rest.is_empty() {
            return None;
        }
        Some(self.read_one())
    }

    fn read_one<C: DeserializeOwned>(&mut self) -> Result<(Option<RequestId>, C), Error> {
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
        let command = codec::decode(command)?;
        Ok(((request != 0).then_some(RequestId(request)), command))
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
        let (r, c): (_, String) = view.next_command().unwrap().unwrap();
        assert_eq!((r, c.as_str()), (Some(RequestId(7)), "first"));
        let (r, c): (_, String) = view.next_command().unwrap().unwrap();
        assert_eq!((r, c.as_str()), (None, "second"));
        assert!(view.next_command::<String>().is_none());
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
                    let got = view.next_command::<Vec<u32>>();
                    assert!(matches!(got, Some(Err(_)) | None), "cut {cut}");
                }
            }
        }
    }
}
