//! `POST /v2/message-subscriptions/search`: the subscriptions of waiting elements, from
//! every partition's history store (each is kept on its process instance's partition).

use axum::Json;
use axum::extract::State;
use rill_protocol::history::{
    HistoricMessageSubscription, MessageSubscriptionField as F, MessageSubscriptionState,
};
use serde::Serialize;

use super::history_search::{Kind, SearchEntity, SearchResult, run};
use super::{Body, SharedState, date_text, key_text};
use crate::ops::ClientError;

/// Camunda's `MessageSubscriptionResult`. `processDefinitionKey` is left out when the
/// store did not know the element instance (it started before the store was on).
#[derive(Serialize, Debug)]
#[serde(rename_all = "camelCase")]
pub struct MessageSubscriptionResult {
    message_subscription_key: String,
    process_definition_id: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    process_definition_key: Option<String>,
    process_instance_key: String,
    element_id: String,
    element_instance_key: String,
    message_subscription_state: &'static str,
    last_updated_date: String,
    message_name: String,
    correlation_key: String,
    tenant_id: String,
}

impl From<HistoricMessageSubscription> for MessageSubscriptionResult {
    fn from(subscription: HistoricMessageSubscription) -> Self {
        MessageSubscriptionResult {
            message_subscription_key: key_text(subscription.key),
            process_definition_id: subscription.bpmn_process_id,
            process_definition_key: subscription.process_definition_key.map(key_text),
            process_instance_key: key_text(subscription.process_instance_key),
            element_id: subscription.element_id,
            element_instance_key: key_text(subscription.element_instance_key),
            message_subscription_state: subscription.state.name(),
            last_updated_date: date_text(subscription.last_updated),
            message_name: subscription.message_name,
            correlation_key: subscription.correlation_key,
            tenant_id: subscription.tenant_id,
        }
    }
}

impl SearchEntity for HistoricMessageSubscription {
    const KEY_FIELD: F = F::MessageSubscriptionKey;
    type Item = MessageSubscriptionResult;

    fn kind(field: F) -> Kind {
        match field {
            F::MessageSubscriptionKey | F::ProcessInstanceKey | F::ElementInstanceKey => Kind::Key,
            F::ProcessDefinitionId
            | F::ElementId
            | F::MessageName
            | F::CorrelationKey
            | F::TenantId => Kind::Text,
            F::MessageSubscriptionState => Kind::Enum(MessageSubscriptionState::NAMES),
            F::LastUpdatedDate => Kind::Date,
        }
    }
}

/// `POST /v2/message-subscriptions/search`.
pub async fn search(
    State(state): State<SharedState>,
    Body(body): Body,
) -> Result<Json<SearchResult<MessageSubscriptionResult>>, ClientError> {
    run::<HistoricMessageSubscription>(&state, &body, None)
        .await
        .map(Json)
}
