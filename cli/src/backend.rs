//! The gateway's view of brokers running in this process (`rill standalone`): requests
//! go straight to the local partitions, no network hop.

use std::sync::Arc;
use std::time::Duration;

use futures::future::BoxFuture;
use rill_broker::{BrokerNode, JobPushes, Partition, Role, forward_jobs_available};
use rill_engine::BpmnEngine;
use rill_gateway::{
    Answered, BackendError, BrokerInfo, GatewayBackend, JobsAvailable, JobsNotice, PartitionHealth,
    PartitionInfo, PartitionRole, Topology, stream_answer,
};
use rill_protocol::{ActivateJobs, BROKER_VERSION, Command, PartitionId, Query, QueryResult};
use tokio::sync::broadcast;

/// Serves the gateway from the partitions of a node in this process.
pub struct LocalBackend {
    node: Arc<BrokerNode<BpmnEngine>>,
    jobs: broadcast::Sender<JobsNotice>,
    push: Arc<JobPushes>,
    advertised_host: String,
}

impl LocalBackend {
    /// Must be called inside a tokio runtime: it forwards each partition's
    /// jobs-available notifications into one channel, and starts the partitions' job
    /// push (its metrics in `registry`).
    pub fn new(
        node: Arc<BrokerNode<BpmnEngine>>,
        advertised_host: String,
        registry: &prometheus::Registry,
    ) -> Result<LocalBackend, prometheus::Error> {
        let push = JobPushes::start(node.partitions().clone(), Some(registry))?;
        let (jobs, _) = broadcast::channel(4096);
        let tx = jobs.clone();
        forward_jobs_available(node.partitions(), move |event| {
            let _ = tx.send(JobsNotice::Available(JobsAvailable {
                partition: event.partition_id,
                job_type: event.job_type,
            }));
        });
        Ok(LocalBackend {
            node,
            jobs,
            push,
            advertised_host,
        })
    }

    fn partition(&self, id: PartitionId) -> Result<Partition<BpmnEngine>, BackendError> {
        self.node.partition(id).ok_or(BackendError::Unavailable {
            partition: id,
            reason: format!("partition {id} is not hosted by this node"),
        })
    }
}

impl GatewayBackend for LocalBackend {
    fn partition_count(&self) -> u16 {
        self.node.config().cluster.partitions_count
    }

    fn submit(
        &self,
        partition: PartitionId,
        command: Command,
        timeout: Duration,
    ) -> BoxFuture<'_, Result<Answered, BackendError>> {
        Box::pin(async move {
            let target = self.partition(partition)?;
            match tokio::time::timeout(timeout, target.submit_answered(command, timeout)).await {
                Ok(Ok(answered)) => Ok(Answered {
                    response: answered.response,
                    term: Some(answered.term),
                }),
                Ok(Err(e)) => Err(BackendError::from_local(partition, e)),
                Err(_) => Err(BackendError::Timeout),
            }
        })
    }

    fn current_term(&self, partition: PartitionId) -> Option<u64> {
        let status = self.node.partition(partition)?.status();
        (status.role == Role::Leader).then_some(status.term)
    }

    fn query(
        &self,
        partition: PartitionId,
        query: Query,
        timeout: Duration,
    ) -> BoxFuture<'_, Result<QueryResult, BackendError>> {
        Box::pin(async move {
            let target = self.partition(partition)?;
            match tokio::time::timeout(timeout, target.answer(query)).await {
                Ok(result) => result.map_err(|e| BackendError::from_local(partition, e)),
                Err(_) => Err(BackendError::Timeout),
            }
        })
    }

    fn subscribe_jobs_available(&self) -> broadcast::Receiver<JobsNotice> {
        self.jobs.subscribe()
    }

    fn pushes_jobs(&self) -> bool {
        true
    }

    fn stream_jobs(
        &self,
        partition: PartitionId,
        stream: ActivateJobs,
        wait: Duration,
    ) -> BoxFuture<'_, Result<Option<Answered>, BackendError>> {
        let pushed = self.push.stream(partition, stream, wait);
        Box::pin(async move { stream_answer(partition, pushed.await) })
    }

    fn topology(&self) -> BoxFuture<'_, Result<Topology, BackendError>> {
        Box::pin(async move {
            let config = self.node.config();
            let partitions = self
                .node
                .statuses()
                .into_iter()
                .map(|status| PartitionInfo {
                    partition: status.partition_id,
                    role: match status.role {
                        Role::Leader => PartitionRole::Leader,
                        Role::Follower | Role::Candidate => PartitionRole::Follower,
                        Role::Inactive => PartitionRole::Inactive,
                    },
                    health: if status.healthy {
                        PartitionHealth::Healthy
                    } else {
                        PartitionHealth::Dead
                    },
                })
                .collect();
            Ok(Topology {
                cluster_size: config.cluster.size,
                partitions_count: config.cluster.partitions_count,
                replication_factor: u32::from(config.cluster.replication_factor),
                brokers: vec![BrokerInfo {
                    node_id: self.node.node_id(),
                    host: self.advertised_host.clone(),
                    port: config.cluster.command_port,
                    version: BROKER_VERSION.to_owned(),
                    partitions,
                }],
            })
        })
    }
}
