//! Decisions: evaluate one, by id or key.
//!
//! Decisions are deployed to every partition, so an evaluation goes to any partition
//! (round-robin), falling back to the deployment partition when a decision deployed a
//! moment ago has not reached the first one yet.

use rill_protocol::value::DecisionEvaluationRecord;
use rill_protocol::{
    Command, DecisionSelector, EvaluateDecision, JsonValue, Key, RecordValue, RejectionType,
};

use super::deployments::DEPLOYMENT_PARTITION;
use super::{AppState, ClientError, operation};

/// Evaluates a decision with `variables`: the DECISION_EVALUATION event's key and
/// record, EVALUATED or FAILED (a failure to evaluate is an answer, not an error).
pub async fn evaluate_decision(
    state: &AppState,
    decision: DecisionSelector,
    variables: JsonValue,
) -> Result<(Key, DecisionEvaluationRecord), ClientError> {
    let key = match &decision {
        DecisionSelector::ByKey(key) => Some(*key),
        DecisionSelector::ById(_) => None,
    };
    operation("EvaluateDecision", key, async {
        if let Some(key) = key {
            state.dispatch.partition_of(key, "decision definition")?;
        }
        let command = Command::EvaluateDecision(EvaluateDecision {
            decision,
            variables,
        });
        let timeout = state.settings.request_timeout;
        let (partition, answered) = state.dispatch.submit_to_any(command.clone(), timeout).await;
        let accepted = match answered {
            Err(ClientError::Rejected {
                kind: RejectionType::NotFound,
                ..
            }) if partition != DEPLOYMENT_PARTITION => {
                state
                    .dispatch
                    .submit(DEPLOYMENT_PARTITION, command, timeout)
                    .await?
            }
            other => other?,
        };
        match accepted.value {
            RecordValue::DecisionEvaluation(record) => Ok((accepted.key, record)),
            other => Err(ClientError::unexpected_answer(
                "decision evaluation",
                &other,
            )),
        }
    })
    .await
}
