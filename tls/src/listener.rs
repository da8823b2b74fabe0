//! A TLS listener for axum and tonic servers. Handshakes run in tasks of their own, so a
//! slow or silent client never holds up the others; a failed handshake closes only its
//! connection. At most [`MAX_HANDSHAKES`] run at once, each within [`HANDSHAKE_TIMEOUT`].

use std::io;
use std::net::SocketAddr;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Duration;

use futures::Stream;
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::{Semaphore, mpsc};
use tokio::task::JoinHandle;
use tokio_rustls::TlsAcceptor;
use tokio_rustls::server::TlsStream;
use tracing::{debug, warn};

/// Handshakes in progress at once; more connections wait in the kernel's backlog.
pub const MAX_HANDSHAKES: usize = 256;
/// A client that has not finished its handshake by then is disconnected.
pub const HANDSHAKE_TIMEOUT: Duration = Duration::from_secs(10);
/// Pause after a failed `accept` (e.g. out of file descriptors) so the loop does not spin.
const ACCEPT_RETRY_DELAY: Duration = Duration::from_millis(50);

/// A bound listener that hands out connections once their TLS handshake is done.
pub struct TlsListener {
    local_addr: SocketAddr,
    accepted: mpsc::Receiver<TlsConnection>,
    accept_task: JoinHandle<()>,
}

impl Drop for TlsListener {
    fn drop(&mut self) {
        self.accept_task.abort();
    }
}

impl TlsListener {
    /// Starts accepting on `listener`; `api` names the port in logs ("REST", "gRPC").
    /// Must be called on a tokio runtime.
    pub fn new(
        listener: TcpListener,
        acceptor: TlsAcceptor,
        api: &'static str,
    ) -> io::Result<Self> {
        let local_addr = listener.local_addr()?;
        let (sender, accepted) = mpsc::channel(MAX_HANDSHAKES);
        let accept_task = tokio::spawn(accept_loop(listener, acceptor, sender, api));
        Ok(TlsListener {
            local_addr,
            accepted,
            accept_task,
        })
    }

    pub fn local_addr(&self) -> SocketAddr {
        self.local_addr
    }

    /// The connections as a stream, as tonic's `serve_with_incoming` takes them.
    pub fn into_incoming(self) -> impl Stream<Item = io::Result<TlsConnection>> + Send {
        futures::stream::unfold(self, |mut listener| async move {
            let connection = listener.accepted.recv().await?;
            Some((Ok(connection), listener))
        })
    }
}

async fn accept_loop(
    listener: TcpListener,
    acceptor: TlsAcceptor,
    sender: mpsc::Sender<TlsConnection>,
    api: &'static str,
) {
    let handshakes = Arc::new(Semaphore::new(MAX_HANDSHAKES));
    loop {
        let Ok(slot) = handshakes.clone().acquire_owned().await else {
            return;
        };
        let (stream, remote_addr) = match listener.accept().await {
            Ok(accepted) => accepted,
            Err(error) => {
                warn!(api, %error, "accepting a connection failed");
                tokio::time::sleep(ACCEPT_RETRY_DELAY).await;
                continue;
            }
        };
        if sender.is_closed() {
            return;
        }
        let acceptor = acceptor.clone();
        let sender = sender.clone();
        tokio::spawn(async move {
            let _slot = slot;
            // TLS records carry small requests; do not let Nagle hold them back.
            let _ = stream.set_nodelay(true);
            let local_addr = stream.local_addr().ok();
            match tokio::time::timeout(HANDSHAKE_TIMEOUT, acceptor.accept(stream)).await {
                Ok(Ok(stream)) => {
                    let _ = sender
                        .send(TlsConnection {
                            stream,
                            local_addr,
                            remote_addr,
                        })
                        .await;
                }
                Ok(Err(error)) => {
                    debug!(api, remote = %remote_addr, %error, "TLS handshake failed");
                }
                Err(_elapsed) => {
                    debug!(api, remote = %remote_addr, "no TLS handshake within {HANDSHAKE_TIMEOUT:?}");
                }
            }
        });
    }
}

/// One accepted connection, after its handshake.
pub struct TlsConnection {
    stream: TlsStream<TcpStream>,
    local_addr: Option<SocketAddr>,
    remote_addr: SocketAddr,
}

impl TlsConnection {
    pub fn remote_addr(&self) -> SocketAddr {
        self.remote_addr
    }

    /// The ALPN protocol agreed on (`h2`, `http/1.1`), if any.
    pub fn alpn_protocol(&self) -> Option<&[u8]> {
        self.stream.get_ref().1.alpn_protocol()
    }
}

impl AsyncRead for TlsConnection {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        Pin::new(&mut self.stream).poll_read(cx, buf)
    }
}

impl AsyncWrite for TlsConnection {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.stream).poll_write(cx, buf)
    }

    fn poll_write_vectored(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.stream).poll_write_vectored(cx, bufs)
    }

    fn is_write_vectored(&self) -> bool {
        self.stream.is_write_vectored()
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.stream).poll_flush(cx)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.stream).poll_shutdown(cx)
    }
}

impl tonic::transport::server::Connected for TlsConnection {
    type ConnectInfo = tonic::transport::server::TcpConnectInfo;

    fn connect_info(&self) -> Self::ConnectInfo {
        tonic::transport::server::TcpConnectInfo {
            local_addr: self.local_addr,
            remote_addr: Some(self.remote_addr),
        }
    }
}

/// The peer of a connection, plain or TLS, as the REST and monitoring servers hand it to
/// handlers (`ConnectInfo<PeerAddr>`): axum's own `SocketAddr` connect info exists for
/// plain TCP listeners only, and both kinds of listener must look the same to a handler.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PeerAddr(pub SocketAddr);

impl axum::extract::connect_info::Connected<axum::serve::IncomingStream<'_, TlsListener>>
    for PeerAddr
{
    fn connect_info(stream: axum::serve::IncomingStream<'_, TlsListener>) -> PeerAddr {
        PeerAddr(*stream.remote_addr())
    }
}

impl axum::extract::connect_info::Connected<axum::serve::IncomingStream<'_, TcpListener>>
    for PeerAddr
{
    fn connect_info(stream: axum::serve::IncomingStream<'_, TcpListener>) -> PeerAddr {
        PeerAddr(*stream.remote_addr())
    }
}

impl axum::serve::Listener for TlsListener {
    type Io = TlsConnection;
    type Addr = SocketAddr;

    async fn accept(&mut self) -> (Self::Io, Self::Addr) {
        match self.accepted.recv().await {
            Some(connection) => {
                let remote = connection.remote_addr;
                (connection, remote)
            }
            // The accept loop ended (only when it is aborted, at drop): nothing more
            // will arrive.
            None => std::future::pending().await,
        }
    }

    fn local_addr(&self) -> io::Result<Self::Addr> {
        Ok(self.local_addr)
    }
}
