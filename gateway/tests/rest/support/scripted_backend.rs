//! A scripted [`GatewayBackend`] for what the real engine cannot show on its own:
//! routing over several partitions, and broker failures (no leader, backpressure,
//! timeouts, each rejection type). It records every command it receives and answers
//! with a closure the test provides. Behaviour of real commands is tested against the
//! engine-backed backend instead.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use futures::future::BoxFuture;
use rill_gateway::{
    Answered, BrokerInfo, GatewayBackend, JobsNotice, PartitionHealth, PartitionInfo,
    PartitionRole, Topology,
};
use rill_protocol::{Command, CommandResponse, NodeId, PartitionId, Query, QueryResult, Term};
use tokio::sync::broadcast;

type Answer =
    dyn Fn(PartitionId, &Command) -> Result<CommandResponse, rill_client::Error> + Send + Sync;

pub struct ScriptedBackend {
    partitions: u16,
    answer: Box<Answer>,
    pub submitted: Mutex<Vec<(PartitionId, Command)>>,
    pub jobs: broadcast::Sender<JobsNotice>,
    /// The role every broker reports for every partition (for `/v2/status`).
    pub role: Mutex<PartitionRole>,
    /// The term every answer says its entry was in.
    pub answer_term: Mutex<Option<Term>>,
    /// The term the backend reports every partition in.
    pub current_term: Mutex<Option<Term>>,
    /// How long every answer takes (a busy partition).
    pub answer_delay: Mutex<Duration>,
}

impl ScriptedBackend {
    pub fn new(
        partitions: u16,
        answer: impl Fn(PartitionId, &Command) -> Result<CommandResponse, rill_client::Error>
        + Send
        + Sync
        + 'static,
    ) -> Arc<ScriptedBackend> {
        let (jobs, _) = broadcast::channel(16);
        Arc::new(ScriptedBackend {
            partitions,
            answer: Box::new(answer),
            submitted: Mutex::new(Vec::new()),
            jobs,
            role: Mutex::new(PartitionRole::Leader),
            answer_term: Mutex::new(Some(Term(1))),
            current_term: Mutex::new(Some(Term(1))),
            answer_delay: Mutex::new(Duration::ZERO),
        })
    }

    /// The partitions commands went to, in order.
    pub fn partitions_used(&self) -> Vec<u16> {
        self.submitted
            .lock()
            .unwrap()
            .iter()
            .map(|(p, _)| p.get())
            .collect()
    }

    pub fn commands(&self) -> Vec<Command> {
        self.submitted
            .lock()
            .unwrap()
            .iter()
            .map(|(_, c)| c.clone())
            .collect()
    }
}

impl GatewayBackend for ScriptedBackend {
    fn partition_count(&self) -> u16 {
        self.partitions
    }

    fn submit(
        &self,
        partition: PartitionId,
        command: Command,
        _timeout: Duration,
    ) -> BoxFuture<'_, Result<Answered, rill_client::Error>> {
        self.submitted
            .lock()
            .unwrap()
            .push((partition, command.clone()));
        let term = *self.answer_term.lock().unwrap();
        let result = (self.answer)(partition, &command);
        let delay = *self.answer_delay.lock().unwrap();
        Box::pin(async move {
            tokio::time::sleep(delay).await;
            if matches!(result, Err(rill_client::Error::Timeout)) {
                // A broker that never answers: the gateway's own timeout must fire.
                std::future::pending::<()>().await;
            }
            result.map(|response| Answered { response, term })
        })
    }

    fn current_term(&self, _partition: PartitionId) -> Option<Term> {
        *self.current_term.lock().unwrap()
    }

    fn query(
        &self,
        partition: PartitionId,
        _query: Query,
        _timeout: Duration,
    ) -> BoxFuture<'_, Result<QueryResult, rill_client::Error>> {
        Box::pin(async move {
            Err(rill_client::Error::Unavailable {
                partition,
                reason: "the scripted backend answers no queries".into(),
            })
        })
    }

    fn subscribe_jobs_available(&self) -> broadcast::Receiver<JobsNotice> {
        self.jobs.subscribe()
    }

    fn topology(&self) -> BoxFuture<'_, Result<Topology, rill_client::Error>> {
        let role = *self.role.lock().unwrap();
        let count = self.partitions;
        Box::pin(async move {
            Ok(Topology {
                cluster_size: 1,
                partitions_count: count,
                replication_factor: 1,
                brokers: vec![BrokerInfo {
                    node_id: NodeId(0),
                    host: "127.0.0.1".into(),
                    port: 26501,
                    version: "test".into(),
                    partitions: (1..=count)
                        .map(|p| PartitionInfo {
                            partition: PartitionId(p),
                            role,
                            health: PartitionHealth::Healthy,
                        })
                        .collect(),
                }],
            })
        })
    }
}
