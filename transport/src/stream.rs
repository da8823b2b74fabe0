//! A connection's two halves, whether plain TCP or TLS (`TransportConfig::tls`): the
//! reader and the writer run side by side in one connection's tasks.

use tokio::io::{AsyncRead, AsyncWrite};
use tokio::net::TcpStream;
use tokio_util::codec::FramedRead;

use crate::frame::FrameDecoder;

pub(crate) type ReadHalf = Box<dyn AsyncRead + Send + Unpin>;
pub(crate) type WriteHalf = Box<dyn AsyncWrite + Send + Unpin>;
pub(crate) type Reader = FramedRead<ReadHalf, FrameDecoder>;

const READ_BUFFER_BYTES: usize = 64 * 1024;

/// Plain TCP splits without a lock.
pub(crate) fn split_tcp(stream: TcpStream) -> (ReadHalf, WriteHalf) {
    let (read, write) = stream.into_split();
    (Box::new(read), Box::new(write))
}

/// A TLS stream's halves share its session (behind tokio's split lock).
pub(crate) fn split_any<S>(stream: S) -> (ReadHalf, WriteHalf)
where
    S: AsyncRead + AsyncWrite + Send + Unpin + 'static,
{
    let (read, write) = tokio::io::split(stream);
    (Box::new(read), Box::new(write))
}

pub(crate) fn reader(read: ReadHalf, max_frame_size: usize) -> Reader {
    FramedRead::with_capacity(read, FrameDecoder::new(max_frame_size), READ_BUFFER_BYTES)
}
