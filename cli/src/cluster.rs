//! Wiring of a broker's command API (`rill_broker::CommandApi`) to the gateway's
//! cluster client: the client hands requests for partitions led here straight to the
//! API, and the broker's router reaches partitions led elsewhere through the client.

use std::sync::Arc;
use std::time::Duration;

use futures::future::BoxFuture;
use rill_broker::{CommandApi, Error as BrokerError, PartitionRouter};
use rill_engine::BpmnEngine;
use rill_gateway::BackendError;
use rill_gateway::cluster::{ClusterClient, LocalCommandApi};
use rill_protocol::{ApiAnswer, ApiRequest, Command, CommandResponse, NodeId, PartitionId};

/// The partitions a broker hosts.
pub type Partitions = rill_broker::Partitions<BpmnEngine>;

/// The command API of this broker, as the gateway's client calls it in-process.
pub struct LocalApi(pub Arc<CommandApi<BpmnEngine>>);

impl LocalCommandApi for LocalApi {
    fn node_id(&self) -> NodeId {
        self.0.node_id()
    }

    fn serve(&self, partition: PartitionId, request: ApiRequest) -> BoxFuture<'static, ApiAnswer> {
        self.0.serve(partition, request)
    }
}

/// Delivers cross-partition commands to partitions led by other brokers.
pub struct RemoteRouter {
    pub client: Arc<ClusterClient>,
}

impl PartitionRouter<BpmnEngine> for RemoteRouter {
    fn deliver(
        &self,
        target: PartitionId,
        command: Command,
        timeout: Duration,
    ) -> BoxFuture<'static, rill_broker::Result<CommandResponse>> {
        let client = self.client.clone();
        Box::pin(async move {
            client
                .submit(target, command, timeout)
                .await
                .map_err(|e| delivery_error(target, timeout, e))
        })
    }
}

/// What a failed delivery to `target` means for the sending partition's courier (which
/// delivers again in any case).
fn delivery_error(target: PartitionId, timeout: Duration, error: BackendError) -> BrokerError {
    match error {
        BackendError::NotLeader { .. } | BackendError::Unavailable { .. } => {
            BrokerError::NotLeader {
                partition: target,
                leader: None,
            }
        }
        BackendError::ResourceExhausted { limit, .. } => BrokerError::ResourceExhausted {
            partition: target,
            limit,
        },
        BackendError::Timeout => BrokerError::Timeout {
            partition: target,
            timeout,
        },
        BackendError::Shutdown => BrokerError::ShuttingDown { partition: target },
        other => BrokerError::Delivery {
            partition: target,
            source: Box::new(other),
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_failed_delivery_keeps_the_limit_and_is_no_timeout_unless_it_timed_out() {
        let target = PartitionId(2);
        let timeout = Duration::from_secs(10);
        let exhausted = BackendError::ResourceExhausted {
            partition: target,
            limit: 12,
        };
        assert!(matches!(
            delivery_error(target, timeout, exhausted),
            BrokerError::ResourceExhausted { partition, limit: 12 } if partition == target
        ));
        assert!(matches!(
            delivery_error(target, timeout, BackendError::Timeout),
            BrokerError::Timeout { timeout: t, .. } if t == timeout
        ));
        let broken = BackendError::Internal("unexpected answer".to_owned());
        match delivery_error(target, timeout, broken) {
            BrokerError::Delivery { partition, source } => {
                assert_eq!(partition, target);
                assert!(source.to_string().contains("unexpected answer"), "{source}");
            }
            other => panic!("{other:?}"),
        }
    }
}
