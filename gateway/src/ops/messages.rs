//! Messages and signals: publish (routed by the correlation key's hash, as in Zeebe)
//! and broadcast (taken by any partition, which passes the signal on to every other).

use rill_protocol::{BroadcastSignal, Command, Key, PublishMessage, message_partition};

use super::{AppState, ClientError, operation};

/// Publishes a message to the partition of its correlation key: the message's key.
pub async fn publish_message(
    state: &AppState,
    message: PublishMessage,
) -> Result<Key, ClientError> {
    operation("PublishMessage", None, async {
        let partition = message_partition(
            &message.correlation_key,
            state.dispatch.message_partition_count(),
        );
        let command = Command::PublishMessage(message);
        let accepted = state
            .dispatch
            .submit(partition, command, state.settings.request_timeout)
            .await?;
        Ok(accepted.key)
    })
    .await
}

/// Broadcasts a signal: the signal's key.
pub async fn broadcast_signal(
    state: &AppState,
    signal: BroadcastSignal,
) -> Result<Key, ClientError> {
    operation("BroadcastSignal", None, async {
        let command = Command::BroadcastSignal(signal);
        let (_, accepted) = state
            .dispatch
            .submit_to_any(command, state.settings.request_timeout)
            .await;
        Ok(accepted?.key)
    })
    .await
}
