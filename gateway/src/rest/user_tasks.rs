//! Camunda user tasks: `POST /v2/user-tasks/search` and `GET /v2/user-tasks/{key}` from
//! every partition's history store; assignment, unassignment, update and completion as
//! commands to the task's partition (204, or the engine's rejection: 404 for a missing
//! task, 409 for a task in another transition or assigned to someone else);
//! `POST …/variables/search` (the variables of the task's scopes) and `GET …/form` (the
//! linked form, 204 without one).

use std::collections::BTreeMap;

use axum::Json;
use axum::extract::State;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use rill_protocol::history::{
    Condition, FieldValue, HistoricForm, HistoricUserTask, UserTaskField as F, UserTaskState,
    VariableField, date_millis,
};
use rill_protocol::{Key, Timestamp, UserTaskChanges};
use serde::{Deserialize, Serialize};

use super::history_search::{Kind, SearchEntity, SearchResult, run};
use super::json::{Variables, parse_optional_body};
use super::{Body, KeyParam, SharedState, date_text, key_text};
use crate::ops::{self, ClientError};

/// Camunda's `UserTaskResult`. Fields without a value are left out (8.8 marks none of
/// them required).
#[derive(Serialize, Debug)]
#[serde(rename_all = "camelCase")]
pub struct UserTaskResult {
    name: String,
    state: &'static str,
    #[serde(skip_serializing_if = "Option::is_none")]
    assignee: Option<String>,
    element_id: String,
    element_instance_key: String,
    candidate_groups: Vec<String>,
    candidate_users: Vec<String>,
    process_definition_id: String,
    creation_date: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    completion_date: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    follow_up_date: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    due_date: Option<String>,
    tenant_id: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    external_form_reference: Option<String>,
    process_definition_version: i32,
    custom_headers: BTreeMap<String, String>,
    priority: i32,
    user_task_key: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    process_name: Option<String>,
    process_definition_key: String,
    process_instance_key: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    form_key: Option<String>,
    tags: Vec<String>,
}

fn non_empty(text: String) -> Option<String> {
    (!text.is_empty()).then_some(text)
}

/// A date as the model or a client gave it (any offset), as Camunda writes dates: UTC
/// with milliseconds.
fn normalized_date(text: String) -> Option<String> {
    let text = non_empty(text)?;
    Some(match date_millis(&text) {
        Some(millis) => date_text(Timestamp(millis)),
        None => text,
    })
}

impl From<HistoricUserTask> for UserTaskResult {
    fn from(task: HistoricUserTask) -> Self {
        UserTaskResult {
            name: task.name,
            state: task.state.name(),
            assignee: non_empty(task.assignee),
            element_id: task.element_id,
            element_instance_key: key_text(task.element_instance_key),
            candidate_groups: task.candidate_groups,
            candidate_users: task.candidate_users,
            process_definition_id: task.bpmn_process_id,
            creation_date: date_text(task.creation_date),
            completion_date: task.completion_date.map(date_text),
            follow_up_date: normalized_date(task.follow_up_date),
            due_date: normalized_date(task.due_date),
            tenant_id: task.tenant_id,
            external_form_reference: non_empty(task.external_form_reference),
            process_definition_version: task.process_definition_version,
            custom_headers: task.custom_headers,
            priority: task.priority,
            user_task_key: key_text(task.key),
            process_name: task.process_name,
            process_definition_key: key_text(task.process_definition_key),
            process_instance_key: key_text(task.process_instance_key),
            form_key: task.form_key.map(key_text),
            tags: task.tags,
        }
    }
}

impl SearchEntity for HistoricUserTask {
    const KEY_FIELD: F = F::UserTaskKey;
    const TIME_FIELD: Option<F> = Some(F::CreationDate);
    type Item = UserTaskResult;

    fn kind(field: F) -> Kind {
        match field {
            F::CreationDate | F::CompletionDate | F::DueDate | F::FollowUpDate => Kind::Date,
            F::Assignee
            | F::ElementId
            | F::Name
            | F::CandidateGroup
            | F::CandidateUser
            | F::ProcessDefinitionId
            | F::TenantId => Kind::Text,
            F::UserTaskKey
            | F::ProcessDefinitionKey
            | F::ProcessInstanceKey
            | F::ElementInstanceKey => Kind::Key,
            F::Priority => Kind::Int,
            F::State => Kind::Enum(UserTaskState::NAMES),
            F::Tags => Kind::Tags,
        }
    }
}

pub async fn search(
    State(state): State<SharedState>,
    Body(body): Body,
) -> Result<Json<SearchResult<UserTaskResult>>, ClientError> {
    let (body, extra) = variable_conditions(&state, &body).await?;
    run::<HistoricUserTask>(&state, &body, extra)
        .await
        .map(Json)
}

/// Most variables one variable condition of a user-task search may match.
const MAX_VARIABLE_MATCHES: u32 = 10_000;

/// The filter's `processInstanceVariables` and `localVariables` (8.8's lists of
/// `{name, value}`, each a variable that must exist with a value matching `value`, a
/// JSON text or a string filter) as conditions on the task's process instance and
/// element instance keys, found with variable searches over every partition; and the
/// body without them.
async fn variable_conditions(
    state: &SharedState,
    body: &[u8],
) -> Result<(Vec<u8>, Vec<(F, Condition)>), ClientError> {
    if body.iter().all(u8::is_ascii_whitespace) {
        return Ok((body.to_vec(), Vec::new()));
    }
    let Ok(mut parsed) = serde_json::from_slice::<serde_json::Value>(body) else {
        // The search reports what is wrong with the body.
        return Ok((body.to_vec(), Vec::new()));
    };
    let Some(filter) = parsed.get_mut("filter").and_then(|f| f.as_object_mut()) else {
        return Ok((body.to_vec(), Vec::new()));
    };
    let mut extra = Vec::new();
    for (name, field, local) in [
        ("processInstanceVariables", F::ProcessInstanceKey, false),
        ("localVariables", F::ElementInstanceKey, true),
    ] {
        let Some(conditions) = filter.remove(name) else {
            continue;
        };
        let keys = matching_scopes(state, name, &conditions, local).await?;
        let keys = keys
            .into_iter()
            .map(|key| FieldValue::Int(key.get()))
            .collect();
        extra.push((field, Condition::In(keys)));
    }
    let body = serde_json::to_vec(&parsed).unwrap_or_default();
    Ok((body, extra))
}

/// The scopes that have every variable of `conditions`: process instances (their own
/// variables), or with `local` the element instances holding them.
async fn matching_scopes(
    state: &SharedState,
    name: &str,
    conditions: &serde_json::Value,
    local: bool,
) -> Result<std::collections::BTreeSet<Key>, ClientError> {
    let bad = |why: &str| {
        ClientError::invalid_argument(format!(
            "Expected 'filter.{name}' to be a list of {{\"name\": …, \"value\": …}} objects, \
             but {why}"
        ))
    };
    let list = conditions
        .as_array()
        .ok_or_else(|| bad("it is not a list"))?;
    let mut found: Option<std::collections::BTreeSet<Key>> = None;
    for (i, condition) in list.iter().enumerate() {
        let variable = condition
            .get("name")
            .and_then(|n| n.as_str())
            .filter(|n| !n.is_empty())
            .ok_or_else(|| bad(&format!("item {i} has no name")))?;
        let value = condition
            .get("value")
            .filter(|v| v.is_string() || v.is_object())
            .ok_or_else(|| {
                bad(&format!(
                    "item {i} has no value (a JSON text or a string filter)"
                ))
            })?;
        let search = serde_json::json!({
            "filter": {"name": variable, "value": value},
            "page": {"limit": MAX_VARIABLE_MATCHES},
        });
        let search = serde_json::to_vec(&search).unwrap_or_default();
        let page = run::<rill_protocol::history::HistoricVariable>(state, &search, None).await?;
        if !page.is_complete() {
            return Err(ClientError::invalid_argument(format!(
                "'filter.{name}[{i}]' matches more than {MAX_VARIABLE_MATCHES} variables; \
                 narrow its value"
            )));
        }
        let scopes: std::collections::BTreeSet<Key> = page
            .items
            .iter()
            .filter_map(|item| {
                let (scope, instance) = item.scopes();
                (local || scope == instance).then_some(scope)
            })
            .collect();
        found = Some(match found {
            None => scopes,
            Some(before) => before.intersection(&scopes).copied().collect(),
        });
    }
    Ok(found.unwrap_or_default())
}

/// `GET /v2/user-tasks/{userTaskKey}`.
pub async fn get(
    State(state): State<SharedState>,
    KeyParam(key): KeyParam,
) -> Result<Json<UserTaskResult>, ClientError> {
    Ok(Json(ops::user_task(&state, key).await?.into()))
}

fn no_content() -> Response {
    StatusCode::NO_CONTENT.into_response()
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct AssignmentRequest {
    assignee: Option<String>,
    allow_override: Option<bool>,
    action: Option<String>,
}

/// `POST /v2/user-tasks/{userTaskKey}/assignment`.
pub async fn assign(
    State(state): State<SharedState>,
    KeyParam(key): KeyParam,
    Body(body): Body,
) -> Result<Response, ClientError> {
    let request: AssignmentRequest = parse_optional_body(&body)?;
    let assignee = match request.assignee {
        Some(assignee) if !assignee.trim().is_empty() => assignee,
        _ => {
            return Err(ClientError::invalid_argument(
                "No assignee provided; set 'assignee' (to unassign, DELETE the task's assignee)",
            ));
        }
    };
    ops::assign_user_task(
        &state,
        key,
        assignee,
        request.action.unwrap_or_default(),
        request.allow_override.unwrap_or(true),
    )
    .await?;
    Ok(no_content())
}

#[derive(Deserialize, Default)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct ActionRequest {
    action: Option<String>,
}

/// `DELETE /v2/user-tasks/{userTaskKey}/assignee`.
pub async fn unassign(
    State(state): State<SharedState>,
    KeyParam(key): KeyParam,
    Body(body): Body,
) -> Result<Response, ClientError> {
    let request: ActionRequest = parse_optional_body(&body)?;
    ops::unassign_user_task(&state, key, request.action.unwrap_or_default()).await?;
    Ok(no_content())
}

#[derive(Deserialize, Default)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct Changeset {
    due_date: Option<String>,
    follow_up_date: Option<String>,
    candidate_users: Option<Vec<String>>,
    candidate_groups: Option<Vec<String>>,
    priority: Option<i32>,
}

#[derive(Deserialize, Default)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct UpdateRequest {
    changeset: Option<Changeset>,
    action: Option<String>,
}

/// `PATCH /v2/user-tasks/{userTaskKey}`: the changeset's attributes (absent or `null`:
/// unchanged; an empty date or list clears it).
pub async fn update(
    State(state): State<SharedState>,
    KeyParam(key): KeyParam,
    Body(body): Body,
) -> Result<Response, ClientError> {
    let request: UpdateRequest = parse_optional_body(&body)?;
    let changeset = request.changeset.unwrap_or_default();
    if let Some(priority) = changeset.priority
        && !(0..=100).contains(&priority)
    {
        return Err(ClientError::invalid_field(
            "priority",
            format!("The value for priority is '{priority}' but must be within the [0,100] range."),
        ));
    }
    let changes = UserTaskChanges {
        candidate_groups: changeset.candidate_groups,
        candidate_users: changeset.candidate_users,
        due_date: changeset.due_date,
        follow_up_date: changeset.follow_up_date,
        priority: changeset.priority,
    };
    if changes == UserTaskChanges::default() && request.action.is_none() {
        return Err(ClientError::invalid_argument(
            "No update data provided; set at least one changeset attribute or an action",
        ));
    }
    ops::update_user_task(&state, key, changes, request.action.unwrap_or_default()).await?;
    Ok(no_content())
}

#[derive(Deserialize, Default)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct CompletionRequest {
    #[serde(default)]
    variables: Option<Variables>,
    action: Option<String>,
}

/// `POST /v2/user-tasks/{userTaskKey}/completion`.
pub async fn complete(
    State(state): State<SharedState>,
    KeyParam(key): KeyParam,
    Body(body): Body,
) -> Result<Response, ClientError> {
    let request: CompletionRequest = parse_optional_body(&body)?;
    let variables = request
        .variables
        .unwrap_or_default()
        .checked("variables", &state.settings)?;
    ops::complete_user_task(&state, key, variables, request.action.unwrap_or_default()).await?;
    Ok(no_content())
}

/// `POST /v2/user-tasks/{userTaskKey}/variables/search`: the variables of the task's
/// own scope and the scopes around it, with the body's filter, sort and page.
pub async fn search_variables(
    State(state): State<SharedState>,
    params: Result<
        axum::extract::Query<super::variables::SearchParams>,
        axum::extract::rejection::QueryRejection,
    >,
    KeyParam(key): KeyParam,
    Body(body): Body,
) -> Result<Response, ClientError> {
    let scopes = ops::user_task_scopes(&state, key)
        .await?
        .into_iter()
        .map(|scope| FieldValue::Int(scope.get()))
        .collect();
    let scoped = (VariableField::ScopeKey, Condition::In(scopes));
    super::variables::search_in(&state, params, &body, Some(scoped))
        .await
        .map(IntoResponse::into_response)
}

/// Camunda's `FormResult`. The 8.8 spec (and the SDKs generated from it) have `schema`
/// as an object: the form's JSON itself.
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
pub(super) struct FormResult {
    tenant_id: String,
    form_id: String,
    schema: serde_json::Value,
    version: i64,
    form_key: String,
}

/// `GET /v2/user-tasks/{userTaskKey}/form`: the linked form; 204 when the task has none.
pub async fn form(
    State(state): State<SharedState>,
    KeyParam(key): KeyParam,
) -> Result<Response, ClientError> {
    match ops::user_task_form(&state, key).await? {
        Some(form) => Ok(Json(FormResult::from(form)).into_response()),
        None => Ok(no_content()),
    }
}

impl From<HistoricForm> for FormResult {
    fn from(form: HistoricForm) -> FormResult {
        FormResult {
            tenant_id: form.tenant_id,
            form_id: form.form_id,
            // The engine accepted it as a JSON object at deploy.
            schema: serde_json::from_str(&form.schema).unwrap_or(serde_json::Value::Null),
            version: i64::from(form.version),
            form_key: key_text(form.key),
        }
    }
}
