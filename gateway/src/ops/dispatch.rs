//! Routing requests to partitions and sending them through the backend: the one retry
//! loop for partitions without a leader, timeouts, and turning the answers into typed
//! results or [`ClientError`]s.
//!
//! Routing follows ARCHITECTURE.md: create → round-robin over partitions, passing over
//! one without a leader for the next (never waiting on it while another has one); anything
//! addressed by key → the partition that generated the key; publish message →
//! correlation-key hash; deploy → partition 1 (which distributes).
//!
//! ```text
//!  route ─► [p, p+1, …] ─► attempt(p, remaining) ─► answer / error that is not "no leader"
//!             ▲                   │ no leader (nothing applied)
//!             │                   ▼
//!             └── back off ◄── next partition of the round; round done, time left
//! ```

use std::future::Future;
use std::sync::Arc;
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::Duration;

use rill_protocol::{Command, CommandResponse, Key, PartitionId, Query, QueryResult, RecordValue};
use tokio::time::Instant;

use super::ClientError;
use crate::backend::{Answered, GatewayBackend};

/// First pause before sending a command again to a partition without a leader.
const FIRST_RETRY_DELAY: Duration = Duration::from_millis(25);
const MAX_RETRY_DELAY: Duration = Duration::from_millis(500);

/// An accepted command: the key of the answering event, and its value.
pub struct Accepted {
    pub key: Key,
    pub value: RecordValue,
}

/// Pauses between tries that double up to a maximum: the one back-off of the gateway's
/// retries (requests here, job streams in `grpc`).
#[derive(Clone, Debug)]
pub struct Backoff {
    first: Duration,
    next: Duration,
    max: Duration,
}

impl Backoff {
    pub fn new(first: Duration, max: Duration) -> Backoff {
        Backoff {
            first,
            next: first,
            max,
        }
    }

    /// The pause before the next try, without taking it.
    pub fn peek(&self) -> Duration {
        self.next
    }

    /// The pause before the next try; the one after it is twice as long (up to the
    /// maximum).
    pub fn next_delay(&mut self) -> Duration {
        let delay = self.next;
        self.next = (self.next * 2).min(self.max);
        delay
    }

    /// Back to the first pause (after a success).
    pub fn reset(&mut self) {
        self.next = self.first;
    }
}

/// Where a request may go.
#[derive(Clone, Copy, Debug)]
enum Route {
    /// The one partition that owns what the request is about.
    Partition(PartitionId),
    /// Any partition, starting at the next one in round-robin order.
    AnyPartition,
}

pub struct Dispatcher {
    backend: Arc<dyn GatewayBackend>,
    /// Where the next command that any partition can take goes (a new instance, a
    /// decision evaluation, a broadcast signal).
    next_any_partition: AtomicU32,
    /// Where the next job poll starts. Apart from the instances' counter, so that
    /// workers polling between creates do not bias which partitions get the instances.
    next_poll_partition: AtomicU32,
}

impl Dispatcher {
    pub fn new(backend: Arc<dyn GatewayBackend>) -> Self {
        Dispatcher {
            backend,
            next_any_partition: AtomicU32::new(0),
            next_poll_partition: AtomicU32::new(0),
        }
    }

    pub fn backend(&self) -> &dyn GatewayBackend {
        self.backend.as_ref()
    }

    pub fn partition_count(&self) -> u16 {
        self.backend.partition_count().max(1)
    }

    /// The partition count messages are routed over (see
    /// [`GatewayBackend::message_partition_count`]).
    pub fn message_partition_count(&self) -> u16 {
        self.backend.message_partition_count().max(1)
    }

    /// The next partition for a command that any partition can take, in round-robin
    /// order.
    fn next_any_partition(&self) -> PartitionId {
        self.next_from(&self.next_any_partition)
    }

    /// The partition a job poll starts at, in round-robin order.
    pub fn next_poll_partition(&self) -> PartitionId {
        self.next_from(&self.next_poll_partition)
    }

    fn next_from(&self, counter: &AtomicU32) -> PartitionId {
        let count = u32::from(self.partition_count());
        let n = counter.fetch_add(1, Ordering::Relaxed);
        PartitionId((n % count) as u16 + 1)
    }

    /// The partition that owns `key`. A key from a partition this cluster does not have
    /// cannot name anything, so it is not found, naming what was looked for.
    pub fn partition_of(&self, key: Key, what: &str) -> Result<PartitionId, ClientError> {
        let partition = key.partition();
        if partition.get() == 0 || partition.get() > self.partition_count() {
            return Err(ClientError::not_found(format!(
                "Expected to find {what} with key '{key}', but none was found (the key names \
                 partition {partition}, and this cluster has {} partitions)",
                self.partition_count()
            )));
        }
        Ok(partition)
    }

    /// Submits a command and waits for the answer, retrying while the partition has no
    /// leader.
    pub async fn submit(
        &self,
        partition: PartitionId,
        command: Command,
        timeout: Duration,
    ) -> Result<Accepted, ClientError> {
        let result = self.submit_raw(partition, &command, timeout).await;
        accepted(&command, result.map(|a| a.response))
    }

    /// Submits a command that any partition can take (a new process instance), starting
    /// at the next partition in round-robin order. A partition that has no leader to take
    /// it is passed over for the next one at once, so one partition in an election does
    /// not hold up every create; only when no partition takes it does it wait and go
    /// round again, until `timeout`. Returns the partition that answered.
    pub async fn submit_to_any(
        &self,
        command: Command,
        timeout: Duration,
    ) -> (PartitionId, Result<Accepted, ClientError>) {
        let (partition, result) = self
            .with_retries(Route::AnyPartition, timeout, |partition, remaining| {
                self.backend.submit(partition, command.clone(), remaining)
            })
            .await;
        (partition, accepted(&command, result.map(|a| a.response)))
    }

    /// Like [`Dispatcher::submit`], but hands back the backend's own result.
    pub async fn submit_raw(
        &self,
        partition: PartitionId,
        command: &Command,
        timeout: Duration,
    ) -> Result<Answered, rill_client::Error> {
        self.with_retries(
            Route::Partition(partition),
            timeout,
            |partition, remaining| self.backend.submit(partition, command.clone(), remaining),
        )
        .await
        .1
    }

    /// Sends a command to a partition once, giving up when `remaining` has passed: a
    /// partition without a leader is not waited for.
    pub async fn attempt(
        &self,
        partition: PartitionId,
        command: &Command,
        remaining: Duration,
    ) -> Result<Answered, rill_client::Error> {
        let attempt = self.backend.submit(partition, command.clone(), remaining);
        within(remaining, attempt).await
    }

    /// Asks a partition a read-only question, retrying while it has no leader. A broker
    /// whose history store is off answers [`ClientError::HistoryDisabled`].
    pub async fn query(
        &self,
        partition: PartitionId,
        query: Query,
        timeout: Duration,
    ) -> Result<QueryResult, ClientError> {
        let (_, result) = self
            .with_retries(
                Route::Partition(partition),
                timeout,
                |partition, remaining| self.backend.query(partition, query.clone(), remaining),
            )
            .await;
        result.map_err(ClientError::from)
    }

    /// The gateway's one retry loop. Sends with `send` to the partitions of `route` in
    /// turn until one answers with anything but "no leader" (which means nothing was
    /// applied); after a round that none took, backs off and goes round again, until
    /// `timeout`. Once time is up after retries, the answer is why the partition was
    /// unusable. Returns the partition that answered (or was tried last) with the answer.
    async fn with_retries<T, F, Fut>(
        &self,
        route: Route,
        timeout: Duration,
        mut send: F,
    ) -> (PartitionId, Result<T, rill_client::Error>)
    where
        F: FnMut(PartitionId, Duration) -> Fut,
        Fut: Future<Output = Result<T, rill_client::Error>>,
    {
        let deadline = Instant::now() + timeout;
        let round: Vec<PartitionId> = match route {
            Route::Partition(partition) => vec![partition],
            Route::AnyPartition => {
                let count = self.partition_count();
                let first = self.next_any_partition().get();
                (0..count)
                    .map(|offset| PartitionId((first - 1 + offset) % count + 1))
                    .collect()
            }
        };
        let mut backoff = Backoff::new(FIRST_RETRY_DELAY, MAX_RETRY_DELAY);
        let mut last_error = None;
        loop {
            for &partition in &round {
                let remaining = deadline.saturating_duration_since(Instant::now());
                if remaining.is_zero() {
                    return (
                        partition,
                        Err(last_error.unwrap_or(rill_client::Error::Timeout)),
                    );
                }
                super::note_partition(partition);
                match within(remaining, send(partition, remaining)).await {
                    Err(error) if error.is_retryable() => {
                        tracing::debug!(%partition, %error, "partition cannot take it now");
                        last_error = Some(error);
                    }
                    other => return (partition, other),
                }
            }
            // No partition could take it: wait for an election somewhere.
            let remaining = deadline.saturating_duration_since(Instant::now());
            let error = last_error.take().unwrap_or(rill_client::Error::Timeout);
            if remaining <= backoff.peek() {
                return (round[0], Err(error));
            }
            last_error = Some(error);
            tokio::time::sleep(backoff.next_delay()).await;
        }
    }
}

/// `attempt`'s answer, or a timeout once `remaining` has passed.
async fn within<T>(
    remaining: Duration,
    attempt: impl Future<Output = Result<T, rill_client::Error>>,
) -> Result<T, rill_client::Error> {
    tokio::time::timeout(remaining, attempt)
        .await
        .unwrap_or(Err(rill_client::Error::Timeout))
}

/// A command's answer: accepted, or why not.
fn accepted(
    command: &Command,
    result: Result<CommandResponse, rill_client::Error>,
) -> Result<Accepted, ClientError> {
    match result {
        Ok(CommandResponse::Accepted { key, value, .. }) => Ok(Accepted { key, value }),
        Ok(CommandResponse::Rejected(rejection)) => Err(ClientError::rejected(command, &rejection)),
        // Refused before the log, as the engine would reject a command in the wrong state.
        Err(error @ rill_client::Error::EngineVersionTooLow { .. }) => Err(ClientError::rejected(
            command,
            &rill_protocol::Rejection::new(
                rill_protocol::RejectionType::InvalidState,
                error.to_string(),
            ),
        )),
        Err(error) => Err(ClientError::from(error)),
    }
}
