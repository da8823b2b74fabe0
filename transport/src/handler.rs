//! The receiving side's entry point: one handler per transport serves every service.

use bytes::Bytes;
use futures::future::BoxFuture;
use rill_protocol::{NodeId, PartitionId};

use crate::ServiceId;

/// Serves requests that arrive over the transport. `from` is the node id the peer gave in
/// its handshake. An `Err` travels back to the requester as
/// [`TransportError::Remote`](crate::TransportError::Remote).
///
/// Handlers of one connection run concurrently (up to
/// [`TransportConfig::max_concurrent_handlers_per_connection`](crate::TransportConfig)),
/// so two requests for the same partition may complete in either order.
pub trait Handler: Send + Sync + 'static {
    fn handle(
        &self,
        from: NodeId,
        service: ServiceId,
        partition: PartitionId,
        payload: Bytes,
    ) -> BoxFuture<'static, Result<Bytes, String>>;
}

/// Any suitable closure is a handler (handy in tests and small binaries).
impl<F> Handler for F
where
    F: Fn(NodeId, ServiceId, PartitionId, Bytes) -> BoxFuture<'static, Result<Bytes, String>>
        + Send
        + Sync
        + 'static,
{
    fn handle(
        &self,
        from: NodeId,
        service: ServiceId,
        partition: PartitionId,
        payload: Bytes,
    ) -> BoxFuture<'static, Result<Bytes, String>> {
        self(from, service, partition, payload)
    }
}
