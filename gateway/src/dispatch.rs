//! Routing requests to partitions and sending them through the backend: retries while
//! a partition has no leader, timeouts, and turning rejections into problems.
//!
//! Routing follows ARCHITECTURE.md: create → round-robin over partitions, passing over
//! one without a leader for the next (never waiting on it while another has one); anything
//! addressed by key → the partition that generated the key; publish message →
//! correlation-key hash; deploy → partition 1 (which distributes).

use std::sync::Arc;
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::Duration;

use rill_protocol::{Command, CommandResponse, Key, PartitionId, Query, QueryResult, RecordValue};
use tokio::time::Instant;

use crate::backend::{Answered, BackendError, GatewayBackend};
use crate::problem::Problem;

/// First pause before sending a command again to a partition without a leader.
const FIRST_RETRY_DELAY: Duration = Duration::from_millis(25);
const MAX_RETRY_DELAY: Duration = Duration::from_millis(500);

/// An accepted command: the key of the answering event, and its value.
pub struct Accepted {
    pub key: Key,
    pub value: RecordValue,
}

pub struct Dispatcher {
    backend: Arc<dyn GatewayBackend>,
    next_partition: AtomicU32,
}

impl Dispatcher {
    pub fn new(backend: Arc<dyn GatewayBackend>) -> Self {
        Dispatcher {
            backend,
            next_partition: AtomicU32::new(0),
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

    /// The next partition for a new process instance.
    pub fn round_robin(&self) -> PartitionId {
        let count = u32::from(self.partition_count());
        let n = self.next_partition.fetch_add(1, Ordering::Relaxed);
        PartitionId((n % count) as u16 + 1)
    }

    /// The partition that owns `key`. A key from a partition this cluster does not have
    /// cannot name anything, so it is a 404 naming what was looked for.
    pub fn partition_of(&self, key: Key, what: &str) -> Result<PartitionId, Problem> {
        let partition = key.partition();
        if partition.get() == 0 || partition.get() > self.partition_count() {
            return Err(Problem::not_found(format!(
                "Expected to find {what} with key '{key}', but none was found (the key names \
                 partition {partition}, and this cluster has {} partitions)",
                self.partition_count()
            )));
        }
        Ok(partition)
    }

    /// Submits a command and waits for the answer, retrying while the partition has no
    /// leader. Rejections become problems with Camunda's status mapping.
    pub async fn submit(
        &self,
        partition: PartitionId,
        command: Command,
        timeout: Duration,
    ) -> Result<Accepted, Problem> {
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
    ) -> (PartitionId, Result<Accepted, Problem>) {
        let deadline = Instant::now() + timeout;
        let count = self.partition_count();
        let first = self.round_robin();
        let mut delay = FIRST_RETRY_DELAY;
        let mut last_error = None;
        loop {
            for offset in 0..count {
                let partition = PartitionId((first.get() - 1 + offset) % count + 1);
                let remaining = deadline.saturating_duration_since(Instant::now());
                if remaining.is_zero() {
                    let error = last_error.unwrap_or(BackendError::Timeout);
                    return (partition, accepted(&command, Err(error)));
                }
                match self.attempt(partition, &command, remaining).await {
                    Err(error) if error.is_retryable() => {
                        tracing::debug!(%partition, %error, "trying the next partition");
                        last_error = Some(error);
                    }
                    other => return (partition, accepted(&command, other.map(|a| a.response))),
                }
            }
            // No partition could take it: wait for an election somewhere.
            let remaining = deadline.saturating_duration_since(Instant::now());
            let error = last_error.take().unwrap_or(BackendError::Timeout);
            if remaining <= delay {
                return (first, accepted(&command, Err(error)));
            }
            last_error = Some(error);
            tokio::time::sleep(delay).await;
            delay = (delay * 2).min(MAX_RETRY_DELAY);
        }
    }

    /// Like [`Dispatcher::submit`], but hands back the backend's own result.
    pub async fn submit_raw(
        &self,
        partition: PartitionId,
        command: &Command,
        timeout: Duration,
    ) -> Result<Answered, BackendError> {
        let deadline = Instant::now() + timeout;
        let mut delay = FIRST_RETRY_DELAY;
        // Once time is up after retries, the answer is why the partition was unusable.
        let mut last_error = None;
        loop {
            let remaining = deadline.saturating_duration_since(Instant::now());
            if remaining.is_zero() {
                return Err(last_error.unwrap_or(BackendError::Timeout));
            }
            match self.attempt(partition, command, remaining).await {
                Err(error) if error.is_retryable() => {
                    let remaining = deadline.saturating_duration_since(Instant::now());
                    if remaining <= delay {
                        return Err(error);
                    }
                    tracing::debug!(%partition, %error, "retrying command");
                    last_error = Some(error);
                    tokio::time::sleep(delay).await;
                    delay = (delay * 2).min(MAX_RETRY_DELAY);
                }
                other => return other,
            }
        }
    }

    /// Sends a command to a partition once, giving up when `remaining` has passed: a
    /// partition without a leader is not waited for.
    pub async fn attempt(
        &self,
        partition: PartitionId,
        command: &Command,
        remaining: Duration,
    ) -> Result<Answered, BackendError> {
        let attempt = self.backend.submit(partition, command.clone(), remaining);
        match tokio::time::timeout(remaining, attempt).await {
            Ok(result) => result,
            Err(_) => Err(BackendError::Timeout),
        }
    }

    /// Asks a partition a read-only question, retrying while it has no leader.
    pub async fn query(
        &self,
        partition: PartitionId,
        query: Query,
        timeout: Duration,
    ) -> Result<QueryResult, Problem> {
        let deadline = Instant::now() + timeout;
        let mut delay = FIRST_RETRY_DELAY;
        let mut last_error = None;
        loop {
            let remaining = deadline.saturating_duration_since(Instant::now());
            if remaining.is_zero() {
                return Err(Problem::from_backend(
                    &last_error.unwrap_or(BackendError::Timeout),
                ));
            }
            let attempt = self.backend.query(partition, query.clone(), remaining);
            let result = match tokio::time::timeout(remaining, attempt).await {
                Ok(result) => result,
                Err(_) => Err(BackendError::Timeout),
            };
            match result {
                Ok(answer) => return Ok(answer),
                Err(error) if error.is_retryable() => {
                    let remaining = deadline.saturating_duration_since(Instant::now());
                    if remaining <= delay {
                        return Err(Problem::from_backend(&error));
                    }
                    last_error = Some(error);
                    tokio::time::sleep(delay).await;
                    delay = (delay * 2).min(MAX_RETRY_DELAY);
                }
                Err(error) => return Err(Problem::from_backend(&error)),
            }
        }
    }
}

/// A command's answer as the REST API sees it: accepted, or a problem with Camunda's
/// status mapping.
fn accepted(
    command: &Command,
    result: Result<CommandResponse, BackendError>,
) -> Result<Accepted, Problem> {
    match result {
        Ok(CommandResponse::Accepted { key, value, .. }) => Ok(Accepted { key, value }),
        Ok(CommandResponse::Rejected(rejection)) => Err(Problem::from_rejection(
            command,
            rejection.rejection_type,
            &rejection.reason,
        )),
        Err(error) => Err(Problem::from_backend(&error)),
    }
}
