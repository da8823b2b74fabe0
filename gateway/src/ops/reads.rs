//! Reads from the partitions' history stores: searches over every partition that holds
//! entries of a kind, and gets of one entry from its key's partition.

use std::collections::BTreeMap;

use rill_protocol::history::{
    Condition, ElementStatistics, FieldValue, FormField, Historic, HistoricDecisionDefinition,
    HistoricDecisionInstance, HistoricDecisionRequirements, HistoricElementInstance, HistoricForm,
    HistoricIncident, HistoricJob, HistoricMessageSubscription, HistoricProcessDefinition,
    HistoricProcessInstance, HistoricResource, HistoricUser, HistoricUserTask, HistoricVariable,
    HistoryQuery, HistoryResult, Page, ProcessInstanceField, Search, SortBy,
};
use rill_protocol::{Key, PartitionId, Query, QueryResult};

use super::deployments::DEPLOYMENT_PARTITION;
use super::{AppState, ClientError, operation};

/// A kind of history entry that can be searched.
pub trait Searchable: Historic {
    /// What it is called in messages ("process instance").
    const WHAT: &'static str;
    /// The operation's name in its span (`SearchProcessInstances`).
    const OPERATION: &'static str;

    /// The partition query for a search.
    fn query(search: Search<Self::Field>) -> Query;
    /// The page in a partition's answer (`None`: another kind of answer).
    fn page(result: QueryResult) -> Option<Page<Self>>;

    /// The partitions whose stores hold the entries: every one, unless the entries are
    /// the same on every partition (then one is asked, so none is counted twice).
    fn partitions(count: u16) -> Vec<PartitionId> {
        (1..=count).map(PartitionId).collect()
    }
}

macro_rules! searchable {
    ($entry:ty, $what:literal, $operation:literal, $query:path, $page:pat => $found:ident) => {
        searchable!($entry, $what, $operation, $query, $page => $found, every_partition);
    };
    ($entry:ty, $what:literal, $operation:literal, $query:path, $page:pat => $found:ident, $where:ident) => {
        impl Searchable for $entry {
            const WHAT: &'static str = $what;
            const OPERATION: &'static str = $operation;

            fn query(search: Search<Self::Field>) -> Query {
                $query(search)
            }

            fn page(result: QueryResult) -> Option<Page<Self>> {
                match result {
                    $page => Some($found),
                    _ => None,
                }
            }

            fn partitions(count: u16) -> Vec<PartitionId> {
                $where(count)
            }
        }
    };
}

fn every_partition(count: u16) -> Vec<PartitionId> {
    (1..=count).map(PartitionId).collect()
}

/// Definitions are deployed to every partition, and each stores every one: asking the
/// deployment partition alone (it takes every deployment first) counts each once.
fn deployment_partition(_count: u16) -> Vec<PartitionId> {
    vec![DEPLOYMENT_PARTITION]
}

fn history(query: HistoryQuery) -> Query {
    Query::History(query)
}

searchable!(HistoricProcessInstance, "process instance", "SearchProcessInstances",
    Query::SearchProcessInstances, QueryResult::ProcessInstancePage(page) => page);
searchable!(HistoricProcessDefinition, "process definition", "SearchProcessDefinitions",
    search_process_definitions,
    QueryResult::History(HistoryResult::ProcessDefinitions(page)) => page, deployment_partition);
searchable!(HistoricDecisionDefinition, "decision definition", "SearchDecisionDefinitions",
    search_decision_definitions,
    QueryResult::History(HistoryResult::DecisionDefinitions(page)) => page, deployment_partition);
searchable!(HistoricDecisionRequirements, "decision requirements", "SearchDecisionRequirements",
    search_decision_requirements,
    QueryResult::History(HistoryResult::DecisionRequirementsPage(page)) => page,
    deployment_partition);
searchable!(HistoricDecisionInstance, "decision instance", "SearchDecisionInstances",
    search_decision_instances,
    QueryResult::History(HistoryResult::DecisionInstances(page)) => page);
searchable!(HistoricElementInstance, "element instance", "SearchElementInstances",
    search_element_instances,
    QueryResult::History(HistoryResult::ElementInstances(page)) => page);
searchable!(HistoricIncident, "incident", "SearchIncidents", search_incidents,
    QueryResult::History(HistoryResult::Incidents(page)) => page);
searchable!(HistoricJob, "job", "SearchJobs", search_jobs,
    QueryResult::History(HistoryResult::Jobs(page)) => page);
searchable!(HistoricMessageSubscription, "message subscription", "SearchMessageSubscriptions",
    search_message_subscriptions,
    QueryResult::History(HistoryResult::MessageSubscriptions(page)) => page);
searchable!(HistoricUserTask, "user task", "SearchUserTasks", search_user_tasks,
    QueryResult::History(HistoryResult::UserTasks(page)) => page);
searchable!(HistoricVariable, "variable", "SearchVariables", search_variables,
    QueryResult::History(HistoryResult::Variables(page)) => page);
searchable!(HistoricUser, "user", "SearchUsers", search_users,
    QueryResult::History(HistoryResult::Users(page)) => page, deployment_partition);

fn search_process_definitions(
    search: Search<<HistoricProcessDefinition as Historic>::Field>,
) -> Query {
    history(HistoryQuery::SearchProcessDefinitions(search))
}
fn search_decision_definitions(
    search: Search<<HistoricDecisionDefinition as Historic>::Field>,
) -> Query {
    history(HistoryQuery::SearchDecisionDefinitions(search))
}
fn search_decision_requirements(
    search: Search<<HistoricDecisionRequirements as Historic>::Field>,
) -> Query {
    history(HistoryQuery::SearchDecisionRequirements(search))
}
fn search_decision_instances(
    search: Search<<HistoricDecisionInstance as Historic>::Field>,
) -> Query {
    history(HistoryQuery::SearchDecisionInstances(search))
}
fn search_element_instances(search: Search<<HistoricElementInstance as Historic>::Field>) -> Query {
    history(HistoryQuery::SearchElementInstances(search))
}
fn search_incidents(search: Search<<HistoricIncident as Historic>::Field>) -> Query {
    history(HistoryQuery::SearchIncidents(search))
}
fn search_jobs(search: Search<<HistoricJob as Historic>::Field>) -> Query {
    history(HistoryQuery::SearchJobs(search))
}
fn search_message_subscriptions(
    search: Search<<HistoricMessageSubscription as Historic>::Field>,
) -> Query {
    history(HistoryQuery::SearchMessageSubscriptions(search))
}
fn search_user_tasks(search: Search<<HistoricUserTask as Historic>::Field>) -> Query {
    history(HistoryQuery::SearchUserTasks(search))
}
fn search_users(search: Search<<HistoricUser as Historic>::Field>) -> Query {
    history(HistoryQuery::SearchUsers(search))
}
fn search_variables(search: Search<<HistoricVariable as Historic>::Field>) -> Query {
    history(HistoryQuery::SearchVariables(search))
}

/// Runs `search` on every partition that holds entries of its kind: one page from
/// each, to be merged by the caller (each partition answers its first matches after
/// the search's cursor, and its count).
pub async fn search<E: Searchable>(
    state: &AppState,
    search: Search<E::Field>,
) -> Result<Vec<Page<E>>, ClientError> {
    operation(E::OPERATION, None, async {
        let dispatch = &state.dispatch;
        let timeout = state.settings.request_timeout;
        let partitions = E::partitions(dispatch.partition_count());
        let asks = partitions.iter().map(|p| {
            let query = E::query(search.clone());
            async move { dispatch.query(*p, query, timeout).await }
        });
        let mut pages = Vec::with_capacity(partitions.len());
        for answer in futures::future::join_all(asks).await {
            match E::page(answer?) {
                Some(page) => pages.push(page),
                None => {
                    return Err(ClientError::wrong_answer(&format!("{} search", E::WHAT)));
                }
            }
        }
        Ok(pages)
    })
    .await
}

/// One history entry from its key's partition; `None` when the store has none (or the
/// key names no partition of the cluster).
async fn fetch<T>(
    state: &AppState,
    key: Key,
    what: &str,
    query: HistoryQuery,
    pick: impl FnOnce(HistoryResult) -> Option<Option<T>>,
) -> Result<Option<T>, ClientError> {
    let Ok(partition) = state.dispatch.partition_of(key, what) else {
        return Ok(None);
    };
    let timeout = state.settings.request_timeout;
    match state
        .dispatch
        .query(partition, Query::History(query), timeout)
        .await?
    {
        QueryResult::History(result) => pick(result).ok_or_else(|| ClientError::wrong_answer(what)),
        _ => Err(ClientError::wrong_answer(what)),
    }
}

/// `fetch`, in the span of the operation `name`.
macro_rules! get {
    ($name:literal, $state:expr, $key:expr, $what:literal, $query:expr, $answer:ident) => {{
        let key = $key;
        operation($name, Some(key), async {
            fetch($state, key, $what, $query, |result| match result {
                HistoryResult::$answer(found) => Some(found),
                _ => None,
            })
            .await
        })
        .await
    }};
}

fn process_definition_not_found(key: Key) -> ClientError {
    ClientError::not_found(format!("Process definition with key '{key}' not found"))
}

/// A process definition.
pub async fn process_definition(
    state: &AppState,
    key: Key,
) -> Result<HistoricProcessDefinition, ClientError> {
    let found = get!(
        "GetProcessDefinition",
        state,
        key,
        "process definition",
        HistoryQuery::ProcessDefinition { key },
        ProcessDefinition
    )?;
    found.ok_or_else(|| process_definition_not_found(key))
}

/// A process definition's resource, as deployed.
pub async fn process_definition_xml(state: &AppState, key: Key) -> Result<String, ClientError> {
    let found = get!(
        "GetProcessDefinitionXml",
        state,
        key,
        "process definition",
        HistoryQuery::ProcessDefinitionXml { key },
        ProcessDefinitionXml
    )?;
    found.ok_or_else(|| process_definition_not_found(key))
}

/// The form linked on a process definition's none start event, in its latest version
/// (as Camunda's API serves it, whatever the binding); `None` when the definition links
/// none or the form is not deployed.
pub async fn process_definition_form(
    state: &AppState,
    key: Key,
) -> Result<Option<HistoricForm>, ClientError> {
    let definition = process_definition(state, key).await?;
    let Some(form_id) = definition.start_form_id else {
        return Ok(None);
    };
    operation("GetProcessDefinitionForm", Some(key), async {
        // Forms come with deployments to every partition, the definition's too.
        let latest = Search {
            filter: vec![
                (FormField::FormId, Condition::Eq(FieldValue::Text(form_id))),
                (
                    FormField::TenantId,
                    Condition::Eq(FieldValue::Text(definition.tenant_id)),
                ),
            ],
            sort: vec![SortBy {
                field: FormField::Version,
                descending: true,
            }],
            after: None,
            limit: 1,
            count_limit: 1,
        };
        let partition = state.dispatch.partition_of(key, "process definition")?;
        let timeout = state.settings.request_timeout;
        let query = Query::History(HistoryQuery::SearchForms(latest));
        let answer = state.dispatch.query(partition, query, timeout).await?;
        let QueryResult::History(HistoryResult::Forms(page)) = answer else {
            return Err(ClientError::wrong_answer("form"));
        };
        Ok(page.items.into_iter().next())
    })
    .await
}

/// Per element of a process definition, its instances by state over the definition's
/// process instances that match `filter`, added up over every partition.
pub async fn element_statistics(
    state: &AppState,
    process_definition_key: Key,
    filter: Vec<(ProcessInstanceField, Condition)>,
) -> Result<Vec<ElementStatistics>, ClientError> {
    operation(
        "GetProcessDefinitionElementStatistics",
        Some(process_definition_key),
        async {
            let dispatch = &state.dispatch;
            let timeout = state.settings.request_timeout;
            let asks = (1..=dispatch.partition_count()).map(|p| {
                let query = Query::History(HistoryQuery::ElementStatistics {
                    process_definition_key,
                    filter: filter.clone(),
                });
                async move { dispatch.query(PartitionId(p), query, timeout).await }
            });
            let mut by_element: BTreeMap<String, ElementStatistics> = BTreeMap::new();
            for answer in futures::future::join_all(asks).await {
                let QueryResult::History(HistoryResult::ElementStatistics(counts)) = answer? else {
                    return Err(ClientError::wrong_answer("element statistics"));
                };
                for counts in counts {
                    by_element
                        .entry(counts.element_id.clone())
                        .or_insert_with(|| ElementStatistics {
                            element_id: counts.element_id.clone(),
                            ..ElementStatistics::default()
                        })
                        .add(&counts);
                }
            }
            Ok(by_element.into_values().collect())
        },
    )
    .await
}

fn decision_definition_not_found(key: Key) -> ClientError {
    ClientError::not_found(format!("Decision definition with key '{key}' not found"))
}

fn decision_requirements_not_found(key: Key) -> ClientError {
    ClientError::not_found(format!("Decision requirements with key '{key}' not found"))
}

/// A decision definition.
pub async fn decision_definition(
    state: &AppState,
    key: Key,
) -> Result<HistoricDecisionDefinition, ClientError> {
    let found = get!(
        "GetDecisionDefinition",
        state,
        key,
        "decision definition",
        HistoryQuery::DecisionDefinition { key },
        DecisionDefinition
    )?;
    found.ok_or_else(|| decision_definition_not_found(key))
}

/// Decision requirements (a DRG).
pub async fn decision_requirements(
    state: &AppState,
    key: Key,
) -> Result<HistoricDecisionRequirements, ClientError> {
    let found = get!(
        "GetDecisionRequirements",
        state,
        key,
        "decision requirements",
        HistoryQuery::DecisionRequirements { key },
        DecisionRequirements
    )?;
    found.ok_or_else(|| decision_requirements_not_found(key))
}

/// The DMN resource a decision definition was deployed in.
pub async fn decision_definition_xml(state: &AppState, key: Key) -> Result<String, ClientError> {
    let found = get!(
        "GetDecisionDefinitionXml",
        state,
        key,
        "decision definition",
        HistoryQuery::DecisionXml { key },
        DecisionXml
    )?;
    // The key of a decision requirements graph also finds its XML: only a decision's.
    let is_decision = get!(
        "GetDecisionDefinition",
        state,
        key,
        "decision definition",
        HistoryQuery::DecisionDefinition { key },
        DecisionDefinition
    )?
    .is_some();
    match found {
        Some(xml) if is_decision => Ok(xml),
        _ => Err(decision_definition_not_found(key)),
    }
}

/// A deployed resource other than a process, decision or form (an RPA script), with
/// its content.
pub async fn resource(state: &AppState, key: Key) -> Result<HistoricResource, ClientError> {
    let found = get!(
        "GetResource",
        state,
        key,
        "resource",
        HistoryQuery::Resource { key },
        Resource
    )?;
    found.ok_or_else(|| ClientError::not_found(format!("Resource with key '{key}' not found")))
}

/// The DMN resource of decision requirements.
pub async fn decision_requirements_xml(state: &AppState, key: Key) -> Result<String, ClientError> {
    let found = get!(
        "GetDecisionRequirementsXml",
        state,
        key,
        "decision requirements",
        HistoryQuery::DecisionXml { key },
        DecisionXml
    )?;
    found.ok_or_else(|| decision_requirements_not_found(key))
}

/// A decision instance, with its inputs and matched rules.
pub async fn decision_instance(
    state: &AppState,
    key: Key,
) -> Result<HistoricDecisionInstance, ClientError> {
    let found = get!(
        "GetDecisionInstance",
        state,
        key,
        "decision instance",
        HistoryQuery::DecisionInstance { key },
        DecisionInstance
    )?;
    found.ok_or_else(|| {
        ClientError::not_found(format!("Decision instance with key '{key}' not found"))
    })
}

/// An element instance; `None` when the store has none.
pub async fn find_element_instance(
    state: &AppState,
    key: Key,
) -> Result<Option<HistoricElementInstance>, ClientError> {
    get!(
        "GetElementInstance",
        state,
        key,
        "element instance",
        HistoryQuery::ElementInstance { key },
        ElementInstance
    )
}

/// An element instance.
pub async fn element_instance(
    state: &AppState,
    key: Key,
) -> Result<HistoricElementInstance, ClientError> {
    find_element_instance(state, key).await?.ok_or_else(|| {
        ClientError::not_found(format!("Element instance with key '{key}' not found"))
    })
}

/// A variable, with its whole value.
pub async fn variable(state: &AppState, key: Key) -> Result<HistoricVariable, ClientError> {
    let found = get!(
        "GetVariable",
        state,
        key,
        "variable",
        HistoryQuery::Variable { key },
        Variable
    )?;
    found.ok_or_else(|| ClientError::not_found(format!("Variable with key '{key}' not found")))
}

/// A user task.
pub async fn user_task(state: &AppState, key: Key) -> Result<HistoricUserTask, ClientError> {
    let found = get!(
        "GetUserTask",
        state,
        key,
        "user task",
        HistoryQuery::UserTask { key },
        UserTask
    )?;
    found.ok_or_else(|| super::user_tasks::not_found(key))
}

/// The form linked to a user task; `None` when the task links none.
pub async fn user_task_form(
    state: &AppState,
    key: Key,
) -> Result<Option<HistoricForm>, ClientError> {
    let task = user_task(state, key).await?;
    let Some(form_key) = task.form_key else {
        return Ok(None);
    };
    operation("GetUserTaskForm", Some(key), async {
        // Forms come with deployments to every partition: the task's has it.
        let partition = state.dispatch.partition_of(key, "user task")?;
        let timeout = state.settings.request_timeout;
        let query = Query::History(HistoryQuery::Form { key: form_key });
        match state.dispatch.query(partition, query, timeout).await? {
            QueryResult::History(HistoryResult::Form(Some(form))) => Ok(Some(form)),
            QueryResult::History(HistoryResult::Form(None)) => Err(ClientError::not_found(
                format!("Form with key '{form_key}' of user task '{key}' not found"),
            )),
            _ => Err(ClientError::wrong_answer("form")),
        }
    })
    .await
}

/// The scopes whose variables a user task sees: its own element instance, the ones
/// around it up to the process instance.
pub async fn user_task_scopes(state: &AppState, key: Key) -> Result<Vec<Key>, ClientError> {
    let task = user_task(state, key).await?;
    let mut scopes = vec![task.element_instance_key];
    let mut scope = task.element_instance_key;
    // Walk up the element instances to the process instance (subprocesses between).
    while scope != task.process_instance_key {
        let Some(element) = find_element_instance(state, scope).await? else {
            break;
        };
        scope = element.flow_scope_key;
        scopes.push(scope);
        if scopes.len() > 1_000 {
            break;
        }
    }
    if !scopes.contains(&task.process_instance_key) {
        scopes.push(task.process_instance_key);
    }
    Ok(scopes)
}
