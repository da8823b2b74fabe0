//! The wire format. Every frame is a fixed 24-byte header followed by the payload:
//!
//! ```text
//! offset size  field
//!   0     2    magic "RL"
//!   2     1    protocol version (1)
//!   3     1    kind: 1 hello, 2 hello-ack, 3 hello-reject, 4 request, 5 response,
//!                6 failure, 7 heartbeat
//!   4     2    service id
//!   6     2    partition id
//!   8     8    request id
//!  16     4    payload length
//!  20     4    CRC-32 (IEEE) of bytes 0..20 and the payload
//!  24     …    payload
//! ```
//!
//! All integers are big-endian. Magic and version come first so that a future version may
//! change everything after them and still be recognised (and refused) by this one.

use bytes::{Buf, BufMut, Bytes, BytesMut};
use rill_protocol::{NodeId, PartitionId};
use tokio_util::codec::Decoder;

use crate::{ServiceId, TransportError};

/// Bytes of header before each payload.
pub const FRAME_HEADER_LEN: usize = 24;
/// The transport protocol version this build speaks.
pub const PROTOCOL_VERSION: u8 = 1;

/// In a hello's target field: "whichever node listens here" (used to discover a node id).
pub(crate) const ANY_NODE: u32 = u32::MAX;

const MAGIC: [u8; 2] = *b"RL";
const CHECKSUMMED_HEADER_LEN: usize = 20;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum FrameKind {
    /// Client → server, payload: sender node id (u32), node id it expects to reach (u32;
    /// `u32::MAX` for any), sender instance id (u64).
    Hello = 1,
    /// Server → client, payload: server node id (u32), server instance id (u64).
    HelloAck = 2,
    /// Server → client, payload: UTF-8 reason; the server closes the connection after it.
    HelloReject = 3,
    Request = 4,
    /// Handler succeeded, payload is its result.
    Response = 5,
    /// Handler failed, payload is its UTF-8 error message.
    Failure = 6,
    /// Either direction, every keepalive interval, empty: proves the sender is alive even
    /// when it has nothing else to say (or its reader is paused by back-pressure).
    Heartbeat = 7,
}

impl FrameKind {
    fn from_byte(byte: u8) -> Option<FrameKind> {
        Some(match byte {
            1 => FrameKind::Hello,
            2 => FrameKind::HelloAck,
            3 => FrameKind::HelloReject,
            4 => FrameKind::Request,
            5 => FrameKind::Response,
            6 => FrameKind::Failure,
            7 => FrameKind::Heartbeat,
            _ => return None,
        })
    }
}

#[derive(Debug)]
pub(crate) struct Frame {
    pub kind: FrameKind,
    pub service: ServiceId,
    pub partition: PartitionId,
    pub request_id: u64,
    pub payload: Bytes,
}

impl Frame {
    pub fn heartbeat() -> Frame {
        Frame::control(FrameKind::Heartbeat, Bytes::new())
    }

    pub fn control(kind: FrameKind, payload: Bytes) -> Frame {
        Frame {
            kind,
            service: ServiceId(0),
            partition: PartitionId(0),
            request_id: 0,
            payload,
        }
    }

    /// Bytes this frame takes on the wire.
    pub fn wire_len(&self) -> usize {
        FRAME_HEADER_LEN + self.payload.len()
    }

    /// Appends the encoded frame to `dst`. The caller has checked the size against the
    /// maximum frame size (so the payload length fits the u32 field).
    pub fn encode(&self, dst: &mut BytesMut) {
        dst.reserve(self.wire_len());
        let start = dst.len();
        dst.put_slice(&MAGIC);
        dst.put_u8(PROTOCOL_VERSION);
        dst.put_u8(self.kind as u8);
        dst.put_u16(self.service.0);
        dst.put_u16(self.partition.0);
        dst.put_u64(self.request_id);
        dst.put_u32(self.payload.len() as u32);
        let mut crc = crc32fast::Hasher::new();
        crc.update(&dst[start..start + CHECKSUMMED_HEADER_LEN]);
        crc.update(&self.payload);
        dst.put_u32(crc.finalize());
        dst.put_slice(&self.payload);
    }
}

/// Splits a byte stream into frames. Checks magic, version, kind and size from the header
/// before buffering the payload, so a hostile length never turns into an allocation, and
/// checks the CRC once the payload is in.
pub(crate) struct FrameDecoder {
    max_frame_size: usize,
}

impl FrameDecoder {
    pub fn new(max_frame_size: usize) -> FrameDecoder {
        FrameDecoder { max_frame_size }
    }
}

impl Decoder for FrameDecoder {
    type Item = Frame;
    type Error = TransportError;

    fn decode(&mut self, src: &mut BytesMut) -> Result<Option<Frame>, TransportError> {
        // Magic and version are checked as soon as they arrive, before the rest of the
        // header: a peer speaking something else is told so, not kept waiting.
        if src.len() >= 2 && src[..2] != MAGIC {
            return Err(TransportError::InvalidFrame {
                reason: format!("bad magic {:02x}{:02x}, expected \"RL\"", src[0], src[1]),
            });
        }
        if src.len() >= 3 && src[2] != PROTOCOL_VERSION {
            return Err(TransportError::VersionMismatch {
                theirs: src[2],
                ours: PROTOCOL_VERSION,
            });
        }
        if src.len() < FRAME_HEADER_LEN {
            return Ok(None);
        }
        let kind = FrameKind::from_byte(src[3]).ok_or_else(|| TransportError::InvalidFrame {
            reason: format!("unknown frame kind {}", src[3]),
        })?;
        let payload_len = u32::from_be_bytes([src[16], src[17], src[18], src[19]]) as usize;
        let size = FRAME_HEADER_LEN + payload_len;
        if size > self.max_frame_size {
            return Err(TransportError::FrameTooLarge {
                size,
                max: self.max_frame_size,
            });
        }
        if src.len() < size {
            // Bounded by max_frame_size, checked above.
            src.reserve(size - src.len());
            return Ok(None);
        }
        let mut header = src.split_to(FRAME_HEADER_LEN);
        let payload = src.split_to(payload_len).freeze();
        let mut crc = crc32fast::Hasher::new();
        crc.update(&header[..CHECKSUMMED_HEADER_LEN]);
        crc.update(&payload);
        let computed = crc.finalize();
        header.advance(4);
        let service = ServiceId(header.get_u16());
        let partition = PartitionId(header.get_u16());
        let request_id = header.get_u64();
        header.advance(4);
        let expected = header.get_u32();
        if computed != expected {
            return Err(TransportError::InvalidFrame {
                reason: format!(
                    "checksum mismatch on request {request_id}: frame says {expected:08x}, \
                     content gives {computed:08x}"
                ),
            });
        }
        Ok(Some(Frame {
            kind,
            service,
            partition,
            request_id,
            payload,
        }))
    }

    fn decode_eof(&mut self, src: &mut BytesMut) -> Result<Option<Frame>, TransportError> {
        match self.decode(src)? {
            Some(frame) => Ok(Some(frame)),
            None if src.is_empty() => Ok(None),
            None => Err(TransportError::InvalidFrame {
                reason: format!(
                    "connection closed in the middle of a frame ({} bytes left over)",
                    src.len()
                ),
            }),
        }
    }
}

/// The dialer's first frame.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Hello {
    pub from: NodeId,
    /// The node the dialer expects to reach, or [`ANY_NODE`].
    pub target: u32,
    /// Identifies the dialing process, so that a node meeting its own id from another
    /// process knows two nodes share an id.
    pub instance: u64,
}

/// The listener's answer to a hello it accepts.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct HelloAck {
    pub node: NodeId,
    pub instance: u64,
}

impl Hello {
    const LEN: usize = 16;

    pub fn encode(&self) -> Bytes {
        let mut payload = BytesMut::with_capacity(Self::LEN);
        payload.put_u32(self.from.0);
        payload.put_u32(self.target);
        payload.put_u64(self.instance);
        payload.freeze()
    }

    pub fn decode(mut payload: Bytes) -> Result<Hello, TransportError> {
        check_len(&payload, Self::LEN, "hello")?;
        Ok(Hello {
            from: NodeId(payload.get_u32()),
            target: payload.get_u32(),
            instance: payload.get_u64(),
        })
    }
}

impl HelloAck {
    const LEN: usize = 12;

    pub fn encode(&self) -> Bytes {
        let mut payload = BytesMut::with_capacity(Self::LEN);
        payload.put_u32(self.node.0);
        payload.put_u64(self.instance);
        payload.freeze()
    }

    pub fn decode(mut payload: Bytes) -> Result<HelloAck, TransportError> {
        check_len(&payload, Self::LEN, "hello-ack")?;
        Ok(HelloAck {
            node: NodeId(payload.get_u32()),
            instance: payload.get_u64(),
        })
    }
}

fn check_len(payload: &[u8], expected: usize, what: &str) -> Result<(), TransportError> {
    if payload.len() == expected {
        Ok(())
    } else {
        Err(TransportError::InvalidFrame {
            reason: format!(
                "{what} payload of {} bytes, expected {expected}",
                payload.len()
            ),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn request(payload: &'static [u8]) -> Frame {
        Frame {
            kind: FrameKind::Request,
            service: ServiceId::RAFT_APPEND,
            partition: PartitionId(7),
            request_id: 0x0102_0304_0506_0708,
            payload: Bytes::from_static(payload),
        }
    }

    fn decode_all(bytes: &[u8], max: usize) -> Result<Vec<Frame>, TransportError> {
        let mut decoder = FrameDecoder::new(max);
        let mut buf = BytesMut::from(bytes);
        let mut frames = Vec::new();
        while let Some(frame) = decoder.decode_eof(&mut buf)? {
            frames.push(frame);
        }
        Ok(frames)
    }

    #[test]
    fn header_layout_is_as_documented() {
        let mut buf = BytesMut::new();
        request(b"xyz").encode(&mut buf);
        assert_eq!(buf.len(), FRAME_HEADER_LEN + 3);
        assert_eq!(&buf[..4], &[b'R', b'L', 1, 4]);
        assert_eq!(&buf[4..8], &[0, 1, 0, 7]);
        assert_eq!(&buf[8..16], &[1, 2, 3, 4, 5, 6, 7, 8]);
        assert_eq!(&buf[16..20], &[0, 0, 0, 3]);
        assert_eq!(&buf[24..], b"xyz");
    }

    #[test]
    fn frames_round_trip_even_when_fed_byte_by_byte() {
        let mut wire = BytesMut::new();
        request(b"first").encode(&mut wire);
        request(b"").encode(&mut wire);
        let mut decoder = FrameDecoder::new(1024);
        let mut buf = BytesMut::new();
        let mut frames = Vec::new();
        for byte in wire.iter() {
            buf.put_u8(*byte);
            if let Some(frame) = decoder.decode(&mut buf).expect("valid stream") {
                frames.push(frame);
            }
        }
        assert_eq!(frames.len(), 2);
        assert_eq!(frames[0].payload, Bytes::from_static(b"first"));
        assert_eq!(frames[0].partition, PartitionId(7));
        assert_eq!(frames[0].service, ServiceId::RAFT_APPEND);
        assert_eq!(frames[0].request_id, 0x0102_0304_0506_0708);
        assert!(frames[1].payload.is_empty());
    }

    #[test]
    fn oversized_frame_is_rejected_from_its_header_alone() {
        let mut header = BytesMut::new();
        header.put_slice(b"RL");
        header.put_u8(PROTOCOL_VERSION);
        header.put_u8(FrameKind::Request as u8);
        header.put_slice(&[0; 12]);
        header.put_u32(u32::MAX);
        header.put_u32(0);
        let err = decode_all(&header, 1024).expect_err("oversized");
        assert!(
            matches!(err, TransportError::FrameTooLarge { max: 1024, .. }),
            "{err}"
        );
    }

    #[test]
    fn corrupted_payload_fails_the_checksum() {
        let mut wire = BytesMut::new();
        request(b"payload").encode(&mut wire);
        let last = wire.len() - 1;
        wire[last] ^= 0x40;
        let err = decode_all(&wire, 1024).expect_err("corrupted");
        assert!(err.to_string().contains("checksum mismatch"), "{err}");
    }

    #[test]
    fn bad_magic_unknown_kind_wrong_version_and_truncation_are_errors() {
        let mut wire = BytesMut::new();
        request(b"payload").encode(&mut wire);

        let mut bad_magic = wire.clone();
        bad_magic[0] = b'X';
        assert!(
            decode_all(&bad_magic, 1024)
                .expect_err("magic")
                .to_string()
                .contains("magic")
        );

        let mut bad_version = wire.clone();
        bad_version[2] = 9;
        assert!(matches!(
            decode_all(&bad_version, 1024),
            Err(TransportError::VersionMismatch { theirs: 9, ours: 1 })
        ));

        let mut bad_kind = wire.clone();
        bad_kind[3] = 77;
        assert!(
            decode_all(&bad_kind, 1024)
                .expect_err("kind")
                .to_string()
                .contains("kind 77")
        );

        let truncated = &wire[..wire.len() - 2];
        let err = decode_all(truncated, 1024).expect_err("truncated");
        assert!(err.to_string().contains("middle of a frame"), "{err}");
    }

    #[test]
    fn handshake_payloads_round_trip_and_reject_wrong_lengths() {
        let hello = Hello {
            from: NodeId(3),
            target: ANY_NODE,
            instance: 0xdead_beef_0000_0001,
        };
        assert_eq!(Hello::decode(hello.encode()).expect("valid"), hello);
        let ack = HelloAck {
            node: NodeId(9),
            instance: 7,
        };
        assert_eq!(HelloAck::decode(ack.encode()).expect("valid"), ack);
        let err = Hello::decode(Bytes::from_static(&[0, 0, 0, 1])).expect_err("short");
        assert!(
            err.to_string()
                .contains("hello payload of 4 bytes, expected 16"),
            "{err}"
        );
        assert!(HelloAck::decode(hello.encode()).is_err());
    }
}
