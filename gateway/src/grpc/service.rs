//! The `gateway_protocol.Gateway` service. Each RPC checks its request, turns it into
//! protocol types and calls the operation of `crate::ops` for it (the same one the REST
//! endpoint calls); job streams are fed by the brokers' job push (`push`).

use std::pin::Pin;
use std::time::Duration;

use futures::Stream;
use rill_protocol::value::{
    DEFAULT_TENANT, DeploymentRecord, JobRecord, MigrationMappingInstruction, ProcessMetadata,
};
use rill_protocol::{
    ActivateInstruction, ActivateJobs, Blob, BroadcastSignal, CreateProcessInstance, FailJob,
    MigrateProcessInstance, ModifyProcessInstance, ProcessSelector, PublishMessage, Resource,
    SetVariables, ThrowError, UpdateJob, VariableInstruction,
};
use tokio::sync::mpsc;
use tokio::time::Instant;
use tonic::{Request, Response, Status};

use super::convert::{
    activated_job, invalid, job_result, json_text, key, operation_reference, split_batch, tenant,
    tenant_text, unsupported, variables, within_limits,
};
use super::decisions;
use super::proto::gateway_server::Gateway;
use super::proto::*;
use super::push::{JobStreams, give_back};
use crate::auth::Principal;
use crate::backend::{PartitionHealth, PartitionRole};
use crate::ops::{self, ActivatedBatches, SharedState, client_timeout};

/// The engine command of a migration request, its fields checked.
fn migration(
    request: MigrateProcessInstanceRequest,
    process_instance_key: rill_protocol::Key,
) -> Result<MigrateProcessInstance, Status> {
    let Some(plan) = request.migration_plan else {
        return Err(invalid("migrationPlan", "a migration plan is required"));
    };
    let target_process_definition_key = key(
        "migrationPlan.targetProcessDefinitionKey",
        plan.target_process_definition_key,
    )?;
    let mut mapping_instructions = Vec::with_capacity(plan.mapping_instructions.len());
    for (index, mapping) in plan.mapping_instructions.into_iter().enumerate() {
        for (field, value) in [
            ("sourceElementId", &mapping.source_element_id),
            ("targetElementId", &mapping.target_element_id),
        ] {
            if value.trim().is_empty() {
                return Err(invalid(
                    &format!("migrationPlan.mappingInstructions[{index}].{field}"),
                    "the element id must not be blank",
                ));
            }
        }
        mapping_instructions.push(MigrationMappingInstruction {
            source_element_id: mapping.source_element_id,
            target_element_id: mapping.target_element_id,
        });
    }
    Ok(MigrateProcessInstance {
        process_instance_key,
        target_process_definition_key,
        mapping_instructions,
    })
}

/// The engine command of a modification request, its fields checked.
fn modification(
    request: ModifyProcessInstanceRequest,
    process_instance_key: rill_protocol::Key,
    max_document_size: u64,
) -> Result<ModifyProcessInstance, Status> {
    let mut activate_instructions = Vec::with_capacity(request.activate_instructions.len());
    for (index, instruction) in request.activate_instructions.into_iter().enumerate() {
        let field = format!("activateInstructions[{index}]");
        if instruction.element_id.trim().is_empty() {
            return Err(invalid(
                &format!("{field}.elementId"),
                "the element id must not be blank",
            ));
        }
        let ancestor = match instruction.ancestor_element_instance_key {
            0 | -1 => rill_protocol::Key::NONE,
            other => key(&format!("{field}.ancestorElementInstanceKey"), other)?,
        };
        let mut variable_instructions = Vec::new();
        for (v, variable) in instruction.variable_instructions.into_iter().enumerate() {
            variable_instructions.push(VariableInstruction {
                variables: variables(
                    &format!("{field}.variableInstructions[{v}].variables"),
                    &variable.variables,
                    max_document_size,
                )?,
                scope_id: variable.scope_id,
            });
        }
        activate_instructions.push(ActivateInstruction {
            element_id: instruction.element_id,
            ancestor_element_instance_key: ancestor,
            variable_instructions,
        });
    }
    let mut terminate_instructions = Vec::with_capacity(request.terminate_instructions.len());
    for (index, instruction) in request.terminate_instructions.into_iter().enumerate() {
        terminate_instructions.push(key(
            &format!("terminateInstructions[{index}].elementInstanceKey"),
            instruction.element_instance_key,
        )?);
    }
    Ok(ModifyProcessInstance {
        process_instance_key,
        activate_instructions,
        terminate_instructions,
    })
}

/// Jobs a job stream asks for at a time.
const STREAM_BATCH: i32 = 32;

/// How long a job stream waits before polling again after no partition could answer.
const STREAM_RETRY_DELAY: Duration = Duration::from_millis(250);

type ResponseStream<T> = Pin<Box<dyn Stream<Item = Result<T, Status>> + Send>>;

/// `stream` until the caller's credentials expire (a bearer token's `exp`): then it
/// ends with UNAUTHENTICATED, and the stream under it is dropped (its queued jobs are
/// given back). Credentials that do not expire leave it as it is.
fn until_credentials_expire<T: Send + 'static>(
    stream: ResponseStream<T>,
    valid_until: Option<std::time::Instant>,
) -> ResponseStream<T> {
    let Some(valid_until) = valid_until else {
        return stream;
    };
    let expiry = Box::pin(tokio::time::sleep_until(Instant::from_std(valid_until)));
    Box::pin(futures::stream::unfold(
        Some((stream, expiry)),
        |state| async move {
            let (mut stream, mut expiry) = state?;
            tokio::select! {
                item = futures::StreamExt::next(&mut stream) => {
                    item.map(|item| (item, Some((stream, expiry))))
                }
                () = &mut expiry => {
                    tracing::info!("job stream closed: the caller's token expired");
                    let status = Status::unauthenticated(
                        "The bearer token of this stream has expired: open the stream again \
                         with a new token",
                    );
                    Some((Err(status), None))
                }
            }
        },
    ))
}

pub struct GatewayService {
    state: SharedState,
    /// Job streams fed by the brokers' push.
    streams: JobStreams,
}

impl GatewayService {
    pub fn new(state: SharedState) -> Self {
        GatewayService {
            streams: JobStreams::new(state.clone()),
            state,
        }
    }

    /// `gateway.max-variable-document-size`.
    fn document_limit(&self) -> u64 {
        self.state.settings.max_variable_document_size
    }

    /// Refuses a request over `gateway.max-message-size`, or with one of its variable
    /// `documents` (field, JSON text) over `gateway.max-variable-document-size`.
    fn within_limits(
        &self,
        request: &impl prost::Message,
        documents: &[(&str, &str)],
    ) -> Result<(), Status> {
        let settings = &self.state.settings;
        within_limits(
            request,
            documents,
            settings.max_message_size,
            settings.max_variable_document_size,
        )
        .map_err(Status::from)
    }

    async fn deploy(&self, resources: Vec<Resource>) -> Result<(i64, DeploymentRecord), Status> {
        if resources.is_empty() {
            return Err(invalid(
                "resources",
                "no resources given; deploy at least one",
            ));
        }
        let (key, record) = ops::deploy(&self.state, resources).await?;
        Ok((key.get(), record))
    }

    /// The new process instance of either create request, and its operation reference.
    fn creation(
        &self,
        request: CreateProcessInstanceRequest,
        field_prefix: &str,
        fetch_variables: Vec<String>,
    ) -> Result<(CreateProcessInstance, Option<u64>), Status> {
        tenant(&format!("{field_prefix}tenantId"), &request.tenant_id)?;
        unsupported(!request.start_instructions.is_empty(), "startInstructions")?;
        unsupported(
            !request.runtime_instructions.is_empty(),
            "runtimeInstructions",
        )?;
        let tags = rill_protocol::tags::validate_tags(&request.tags)
            .map_err(|reason| invalid(&format!("{field_prefix}tags"), reason))?;
        let reference = operation_reference(
            &format!("{field_prefix}operationReference"),
            request.operation_reference,
        )?;
        let process = if request.process_definition_key > 0 {
            ProcessSelector::ByKey(rill_protocol::Key(request.process_definition_key))
        } else {
            if request.bpmn_process_id.trim().is_empty() {
                return Err(invalid(
                    &format!("{field_prefix}bpmnProcessId"),
                    "give a BPMN process id or a processDefinitionKey",
                ));
            }
            // Versions start at 1: -1 (and 0, the field's default) mean the latest.
            ProcessSelector::ById {
                bpmn_process_id: request.bpmn_process_id,
                version: (request.version > 0).then_some(request.version),
            }
        };
        let create = CreateProcessInstance {
            process,
            variables: variables(
                &format!("{field_prefix}variables"),
                &request.variables,
                self.document_limit(),
            )?,
            await_result: false,
            fetch_variables,
            tags,
        };
        Ok((create, reference))
    }
}

fn process_metadata(process: ProcessMetadata) -> super::proto::ProcessMetadata {
    super::proto::ProcessMetadata {
        bpmn_process_id: process.bpmn_process_id,
        version: process.version,
        process_definition_key: process.process_definition_key,
        resource_name: process.resource_name,
        tenant_id: tenant_text(process.tenant_id),
    }
}

fn checked_job_type(job_type: &str) -> Result<(), Status> {
    if job_type.trim().is_empty() {
        return Err(invalid("type", "the job type must not be blank"));
    }
    Ok(())
}

fn checked_job_timeout(timeout: i64) -> Result<(), Status> {
    if timeout < 1 {
        return Err(invalid(
            "timeout",
            format!(
                "expected a job timeout of at least 1 ms, but got \
             {timeout}"
            ),
        ));
    }
    Ok(())
}

/// A stream message that carries jobs: their keys and retries, to give them back.
trait CarriesJobs {
    fn job_keys(&self) -> Vec<i64>;
}

impl CarriesJobs for ActivateJobsResponse {
    fn job_keys(&self) -> Vec<i64> {
        self.jobs.iter().map(|job| job.key).collect()
    }
}

impl CarriesJobs for ActivatedJob {
    fn job_keys(&self) -> Vec<i64> {
        vec![self.key]
    }
}

/// Sends messages of activated jobs down a stream; false if the client went away. Jobs
/// that cannot be sent because it did are given back at once (yielded, as Zeebe's
/// gateway does), so they do not wait out their timeout.
async fn deliver<T: CarriesJobs>(
    state: &SharedState,
    sender: &mpsc::Sender<Result<T, Status>>,
    messages: Vec<T>,
) -> bool {
    let mut undelivered: Vec<i64> = Vec::new();
    for message in messages {
        let jobs = message.job_keys();
        if !undelivered.is_empty() || sender.send(Ok(message)).await.is_err() {
            undelivered.extend(jobs);
        }
    }
    let delivered = undelivered.is_empty();
    for job_key in undelivered {
        give_back(state, job_key).await;
    }
    delivered
}

fn activated(batches: ActivatedBatches) -> impl Iterator<Item = Vec<ActivatedJob>> {
    batches.into_iter().map(|batch| {
        batch
            .into_iter()
            .map(|(key, job): (i64, JobRecord)| activated_job(key, job))
            .collect()
    })
}

#[tonic::async_trait]
impl Gateway for GatewayService {
    type ActivateJobsStream = ResponseStream<ActivateJobsResponse>;

    async fn activate_jobs(
        &self,
        request: Request<ActivateJobsRequest>,
    ) -> Result<Response<Self::ActivateJobsStream>, Status> {
        let request = request.into_inner();
        self.within_limits(&request, &[])?;
        checked_job_type(&request.r#type)?;
        checked_job_timeout(request.timeout)?;
        if request.max_jobs_to_activate < 1 {
            return Err(invalid(
                "maxJobsToActivate",
                format!(
                    "expected at least 1, but got {}",
                    request.max_jobs_to_activate
                ),
            ));
        }
        for id in &request.tenant_ids {
            tenant("tenantIds", id)?;
        }
        let settings = &self.state.settings;
        let long_poll_until = match request.request_timeout {
            ms if ms < 0 => None,
            ms => Some(
                Instant::now()
                    + client_timeout(Some(ms), settings).unwrap_or(settings.long_polling_timeout),
            ),
        };
        let template = ActivateJobs {
            job_type: request.r#type,
            worker: request.worker,
            timeout: request.timeout,
            max_jobs: request.max_jobs_to_activate,
            fetch_variables: request.fetch_variable,
        };
        let max_bytes = usize::try_from(settings.max_message_size).unwrap_or(usize::MAX);
        let (sender, receiver) = mpsc::channel(4);
        let state = self.state.clone();
        tokio::spawn(async move {
            let activation = ops::activate_jobs(&state, &template, long_poll_until);
            // A client that goes away ends its long poll.
            let result = tokio::select! {
                result = activation => result,
                _ = sender.closed() => return,
            };
            match result {
                Ok(batches) => {
                    // Each partition's answer in messages of its own, as Zeebe sends them.
                    let messages = activated(batches)
                        .flat_map(|jobs| split_batch(jobs, max_bytes))
                        .collect();
                    deliver(&state, &sender, messages).await;
                }
                Err(error) => {
                    let _ = sender.send(Err(error.into())).await;
                }
            }
        });
        Ok(Response::new(receiver_stream(receiver)))
    }

    type StreamActivatedJobsStream = ResponseStream<ActivatedJob>;

    async fn stream_activated_jobs(
        &self,
        request: Request<StreamActivatedJobsRequest>,
    ) -> Result<Response<Self::StreamActivatedJobsStream>, Status> {
        let valid_until = request
            .extensions()
            .get::<Principal>()
            .and_then(|principal| principal.valid_until);
        let request = request.into_inner();
        self.within_limits(&request, &[])?;
        checked_job_type(&request.r#type)?;
        checked_job_timeout(request.timeout)?;
        for id in &request.tenant_ids {
            tenant("tenantIds", id)?;
        }
        let template = ActivateJobs {
            job_type: request.r#type,
            worker: request.worker,
            timeout: request.timeout,
            max_jobs: STREAM_BATCH,
            fetch_variables: request.fetch_variable,
        };
        if self.state.dispatch.backend().pushes_jobs() {
            let pushed = self.streams.open(template, STREAM_BATCH as usize);
            return Ok(Response::new(until_credentials_expire(
                Box::pin(pushed),
                valid_until,
            )));
        }
        // A backend without job push: the stream long-polls.
        let (sender, receiver) = mpsc::channel(STREAM_BATCH as usize);
        let state = self.state.clone();
        let mut shutdown = state.shutdown.clone();
        tokio::spawn(async move {
            loop {
                let until = Instant::now() + state.settings.long_polling_timeout;
                let activation = ops::activate_jobs(&state, &template, Some(until));
                let result = tokio::select! {
                    result = activation => result,
                    _ = sender.closed() => return,
                    _ = shutdown.wait_for(|stopping| *stopping) => return,
                };
                match result {
                    Ok(batches) => {
                        let messages = activated(batches).flatten().collect();
                        if !deliver(&state, &sender, messages).await {
                            return;
                        }
                    }
                    Err(error) => {
                        if !error.is_transient() {
                            let _ = sender.send(Err(error.into())).await;
                            return;
                        }
                        // No partition could be asked (an election, back-pressure): a
                        // stream outlives that, as a worker expects, and looks again.
                        tracing::debug!(%error, "job stream waits to poll again");
                        tokio::select! {
                            _ = tokio::time::sleep(STREAM_RETRY_DELAY) => {}
                            _ = sender.closed() => return,
                            _ = shutdown.wait_for(|stopping| *stopping) => return,
                        }
                    }
                }
            }
        });
        Ok(Response::new(until_credentials_expire(
            receiver_stream(receiver),
            valid_until,
        )))
    }

    async fn cancel_process_instance(
        &self,
        request: Request<CancelProcessInstanceRequest>,
    ) -> Result<Response<CancelProcessInstanceResponse>, Status> {
        let request = request.into_inner();
        self.within_limits(&request, &[])?;
        let key = key("processInstanceKey", request.process_instance_key)?;
        let reference = operation_reference("operationReference", request.operation_reference)?;
        ops::cancel_instance(&self.state, key, reference).await?;
        Ok(Response::new(CancelProcessInstanceResponse {}))
    }

    async fn complete_job(
        &self,
        request: Request<CompleteJobRequest>,
    ) -> Result<Response<CompleteJobResponse>, Status> {
        let request = request.into_inner();
        self.within_limits(&request, &[("variables", &request.variables)])?;
        let result = match request.result {
            Some(result) => job_result(result, self.document_limit())?,
            None => Default::default(),
        };
        let job_key = key("jobKey", request.job_key)?;
        let variables = variables("variables", &request.variables, self.document_limit())?;
        ops::complete_job(&self.state, job_key, variables, result).await?;
        Ok(Response::new(CompleteJobResponse {}))
    }

    async fn create_process_instance(
        &self,
        request: Request<CreateProcessInstanceRequest>,
    ) -> Result<Response<CreateProcessInstanceResponse>, Status> {
        let request = request.into_inner();
        self.within_limits(&request, &[("variables", &request.variables)])?;
        let (create, reference) = self.creation(request, "", Vec::new())?;
        let record = ops::create_instance(&self.state, create, reference).await?;
        Ok(Response::new(CreateProcessInstanceResponse {
            process_definition_key: record.process_definition_key,
            bpmn_process_id: record.bpmn_process_id,
            version: record.version,
            process_instance_key: record.process_instance_key,
            tenant_id: tenant_text(record.tenant_id),
            tags: record.tags,
        }))
    }

    async fn create_process_instance_with_result(
        &self,
        request: Request<CreateProcessInstanceWithResultRequest>,
    ) -> Result<Response<CreateProcessInstanceWithResultResponse>, Status> {
        let request = request.into_inner();
        let documents = [(
            "request.variables",
            request
                .request
                .as_ref()
                .map_or("", |r| r.variables.as_str()),
        )];
        self.within_limits(&request, &documents)?;
        let Some(create) = request.request else {
            return Err(invalid(
                "request",
                "the process instance to create is missing",
            ));
        };
        let (create, reference) = self.creation(create, "request.", request.fetch_variables)?;
        let tags = create.tags.clone();
        // 0 (or less) means the gateway's default; longer than the maximum is cut to it.
        let timeout = client_timeout(Some(request.request_timeout), &self.state.settings)
            .unwrap_or(self.state.settings.request_timeout);
        let record =
            ops::create_instance_with_result(&self.state, create, reference, timeout).await?;
        Ok(Response::new(CreateProcessInstanceWithResultResponse {
            process_definition_key: record.process_definition_key,
            bpmn_process_id: record.bpmn_process_id,
            version: record.version,
            process_instance_key: record.process_instance_key,
            variables: json_text(&record.variables),
            tenant_id: tenant_text(record.tenant_id),
            // The result record has no tags: the instance's are the ones asked for.
            tags,
        }))
    }

    async fn evaluate_decision(
        &self,
        request: Request<EvaluateDecisionRequest>,
    ) -> Result<Response<EvaluateDecisionResponse>, Status> {
        let request = request.into_inner();
        self.within_limits(&request, &[("variables", &request.variables)])?;
        decisions::evaluate(&self.state, request)
            .await
            .map(Response::new)
    }

    async fn deploy_process(
        &self,
        request: Request<DeployProcessRequest>,
    ) -> Result<Response<DeployProcessResponse>, Status> {
        let request = request.into_inner();
        self.within_limits(&request, &[])?;
        let resources = request
            .processes
            .into_iter()
            .map(|process| Resource {
                name: process.name,
                content: Blob(process.definition),
            })
            .collect();
        let (key, deployment) = self.deploy(resources).await?;
        Ok(Response::new(DeployProcessResponse {
            key,
            processes: deployment
                .processes_metadata
                .into_iter()
                .map(process_metadata)
                .collect(),
        }))
    }

    async fn deploy_resource(
        &self,
        request: Request<DeployResourceRequest>,
    ) -> Result<Response<DeployResourceResponse>, Status> {
        let request = request.into_inner();
        self.within_limits(&request, &[])?;
        tenant("tenantId", &request.tenant_id)?;
        let resources = request
            .resources
            .into_iter()
            .map(|resource| Resource {
                name: resource.name,
                content: Blob(resource.content),
            })
            .collect();
        let (key, record) = self.deploy(resources).await?;
        let entry = |metadata| Deployment {
            metadata: Some(metadata),
        };
        let processes = record
            .processes_metadata
            .into_iter()
            .map(|process| entry(deployment::Metadata::Process(process_metadata(process))));
        let forms = record
            .form_metadata
            .into_iter()
            .map(|form| entry(deployment::Metadata::Form(decisions::form_metadata(form))));
        let decisions = record.decisions_metadata.into_iter().map(|decision| {
            entry(deployment::Metadata::Decision(
                decisions::decision_metadata(decision),
            ))
        });
        let requirements = record
            .decision_requirements_metadata
            .into_iter()
            .map(|drg| {
                entry(deployment::Metadata::DecisionRequirements(
                    decisions::decision_requirements_metadata(drg),
                ))
            });
        Ok(Response::new(DeployResourceResponse {
            key,
            deployments: processes
                .chain(forms)
                .chain(decisions)
                .chain(requirements)
                .collect(),
            tenant_id: DEFAULT_TENANT.to_owned(),
        }))
    }

    async fn fail_job(
        &self,
        request: Request<FailJobRequest>,
    ) -> Result<Response<FailJobResponse>, Status> {
        let request = request.into_inner();
        self.within_limits(&request, &[("variables", &request.variables)])?;
        let job_key = key("jobKey", request.job_key)?;
        if request.retry_back_off < 0 {
            return Err(invalid(
                "retryBackOff",
                format!("expected 0 or more ms, but got {}", request.retry_back_off),
            ));
        }
        let fail = FailJob {
            job_key,
            // No retries left (zero or less) raises an incident.
            retries: request.retries.max(0),
            error_message: request.error_message,
            retry_backoff: request.retry_back_off,
            variables: variables("variables", &request.variables, self.document_limit())?,
        };
        ops::fail_job(&self.state, fail).await?;
        Ok(Response::new(FailJobResponse {}))
    }

    async fn throw_error(
        &self,
        request: Request<ThrowErrorRequest>,
    ) -> Result<Response<ThrowErrorResponse>, Status> {
        let request = request.into_inner();
        self.within_limits(&request, &[("variables", &request.variables)])?;
        let job_key = key("jobKey", request.job_key)?;
        if request.error_code.trim().is_empty() {
            return Err(invalid("errorCode", "the error code must not be blank"));
        }
        let error = ThrowError {
            job_key,
            error_code: request.error_code,
            error_message: request.error_message,
            variables: variables("variables", &request.variables, self.document_limit())?,
        };
        ops::throw_error(&self.state, error).await?;
        Ok(Response::new(ThrowErrorResponse {}))
    }

    async fn publish_message(
        &self,
        request: Request<PublishMessageRequest>,
    ) -> Result<Response<PublishMessageResponse>, Status> {
        let request = request.into_inner();
        self.within_limits(&request, &[("variables", &request.variables)])?;
        tenant("tenantId", &request.tenant_id)?;
        if request.name.trim().is_empty() {
            return Err(invalid("name", "the message name must not be blank"));
        }
        if request.time_to_live < 0 {
            return Err(invalid(
                "timeToLive",
                format!("expected 0 or more ms, but got {}", request.time_to_live),
            ));
        }
        let message = PublishMessage {
            name: request.name,
            correlation_key: request.correlation_key,
            time_to_live: request.time_to_live,
            message_id: request.message_id,
            variables: variables("variables", &request.variables, self.document_limit())?,
        };
        let key = ops::publish_message(&self.state, message).await?;
        Ok(Response::new(PublishMessageResponse {
            key: key.get(),
            tenant_id: DEFAULT_TENANT.to_owned(),
        }))
    }

    async fn resolve_incident(
        &self,
        request: Request<ResolveIncidentRequest>,
    ) -> Result<Response<ResolveIncidentResponse>, Status> {
        let request = request.into_inner();
        self.within_limits(&request, &[])?;
        let incident_key = key("incidentKey", request.incident_key)?;
        let reference = operation_reference("operationReference", request.operation_reference)?;
        ops::resolve_incident(&self.state, incident_key, reference).await?;
        Ok(Response::new(ResolveIncidentResponse {}))
    }

    async fn set_variables(
        &self,
        request: Request<SetVariablesRequest>,
    ) -> Result<Response<SetVariablesResponse>, Status> {
        let request = request.into_inner();
        self.within_limits(&request, &[("variables", &request.variables)])?;
        let element_instance_key = key("elementInstanceKey", request.element_instance_key)?;
        let reference = operation_reference("operationReference", request.operation_reference)?;
        let set = SetVariables {
            element_instance_key,
            variables: variables("variables", &request.variables, self.document_limit())?,
            local: request.local,
        };
        let key = ops::set_variables(&self.state, set, reference).await?;
        Ok(Response::new(SetVariablesResponse { key: key.get() }))
    }

    async fn topology(
        &self,
        _request: Request<TopologyRequest>,
    ) -> Result<Response<TopologyResponse>, Status> {
        let topology = ops::topology(&self.state).await?;
        let brokers = topology
            .brokers
            .into_iter()
            .map(|broker| BrokerInfo {
                node_id: broker.node_id.0 as i32,
                host: broker.host,
                port: i32::from(broker.port),
                version: broker.version,
                partitions: broker
                    .partitions
                    .into_iter()
                    .map(|p| Partition {
                        partition_id: i32::from(p.partition.get()),
                        role: match p.role {
                            PartitionRole::Leader => partition::PartitionBrokerRole::Leader,
                            PartitionRole::Follower => partition::PartitionBrokerRole::Follower,
                            PartitionRole::Inactive => partition::PartitionBrokerRole::Inactive,
                        } as i32,
                        health: match p.health {
                            PartitionHealth::Healthy => partition::PartitionBrokerHealth::Healthy,
                            PartitionHealth::Unhealthy => {
                                partition::PartitionBrokerHealth::Unhealthy
                            }
                            PartitionHealth::Dead => partition::PartitionBrokerHealth::Dead,
                        } as i32,
                    })
                    .collect(),
            })
            .collect();
        Ok(Response::new(TopologyResponse {
            brokers,
            cluster_size: topology.cluster_size as i32,
            partitions_count: i32::from(topology.partitions_count),
            replication_factor: topology.replication_factor as i32,
            gateway_version: env!("CARGO_PKG_VERSION").to_owned(),
            cluster_id: String::new(),
        }))
    }

    async fn update_job_retries(
        &self,
        request: Request<UpdateJobRetriesRequest>,
    ) -> Result<Response<UpdateJobRetriesResponse>, Status> {
        let request = request.into_inner();
        self.within_limits(&request, &[])?;
        let job_key = key("jobKey", request.job_key)?;
        if request.retries < 1 {
            return Err(invalid(
                "retries",
                format!("expected at least 1, but got {}", request.retries),
            ));
        }
        let reference = operation_reference("operationReference", request.operation_reference)?;
        let update = UpdateJob {
            job_key,
            retries: Some(request.retries),
            timeout: None,
        };
        ops::update_job(&self.state, update, reference).await?;
        Ok(Response::new(UpdateJobRetriesResponse {}))
    }

    async fn modify_process_instance(
        &self,
        request: Request<ModifyProcessInstanceRequest>,
    ) -> Result<Response<ModifyProcessInstanceResponse>, Status> {
        let request = request.into_inner();
        let fields: Vec<(String, &str)> = request
            .activate_instructions
            .iter()
            .enumerate()
            .flat_map(|(index, instruction)| {
                instruction
                    .variable_instructions
                    .iter()
                    .enumerate()
                    .map(move |(v, variable)| {
                        (
                            format!(
                                "activateInstructions[{index}].variableInstructions[{v}].variables"
                            ),
                            variable.variables.as_str(),
                        )
                    })
            })
            .collect();
        let documents: Vec<(&str, &str)> = fields.iter().map(|(f, t)| (f.as_str(), *t)).collect();
        self.within_limits(&request, &documents)?;
        let process_instance_key = key("processInstanceKey", request.process_instance_key)?;
        let reference = operation_reference("operationReference", request.operation_reference)?;
        let modification = modification(request, process_instance_key, self.document_limit())?;
        ops::modify_instance(&self.state, modification, reference).await?;
        Ok(Response::new(ModifyProcessInstanceResponse {}))
    }

    async fn migrate_process_instance(
        &self,
        request: Request<MigrateProcessInstanceRequest>,
    ) -> Result<Response<MigrateProcessInstanceResponse>, Status> {
        let request = request.into_inner();
        self.within_limits(&request, &[])?;
        let process_instance_key = key("processInstanceKey", request.process_instance_key)?;
        let reference = operation_reference("operationReference", request.operation_reference)?;
        let migration = migration(request, process_instance_key)?;
        ops::migrate_instance(&self.state, migration, reference).await?;
        Ok(Response::new(MigrateProcessInstanceResponse {}))
    }

    async fn update_job_timeout(
        &self,
        request: Request<UpdateJobTimeoutRequest>,
    ) -> Result<Response<UpdateJobTimeoutResponse>, Status> {
        let request = request.into_inner();
        self.within_limits(&request, &[])?;
        let job_key = key("jobKey", request.job_key)?;
        if request.timeout < 1 {
            return Err(invalid(
                "timeout",
                format!("expected at least 1 ms, but got {}", request.timeout),
            ));
        }
        let reference = operation_reference("operationReference", request.operation_reference)?;
        let update = UpdateJob {
            job_key,
            retries: None,
            timeout: Some(request.timeout),
        };
        ops::update_job(&self.state, update, reference).await?;
        Ok(Response::new(UpdateJobTimeoutResponse {}))
    }

    async fn delete_resource(
        &self,
        request: Request<DeleteResourceRequest>,
    ) -> Result<Response<DeleteResourceResponse>, Status> {
        let request = request.into_inner();
        self.within_limits(&request, &[])?;
        let resource_key = key("resourceKey", request.resource_key)?;
        let reference = operation_reference("operationReference", request.operation_reference)?;
        ops::delete_resource(&self.state, resource_key, reference).await?;
        Ok(Response::new(DeleteResourceResponse {}))
    }

    async fn broadcast_signal(
        &self,
        request: Request<BroadcastSignalRequest>,
    ) -> Result<Response<BroadcastSignalResponse>, Status> {
        let request = request.into_inner();
        self.within_limits(&request, &[("variables", &request.variables)])?;
        tenant("tenantId", &request.tenant_id)?;
        if request.signal_name.trim().is_empty() {
            return Err(invalid("signalName", "the signal name must not be blank"));
        }
        // Any partition takes a broadcast and passes it on to every other one.
        let signal = BroadcastSignal {
            signal_name: request.signal_name,
            variables: variables("variables", &request.variables, self.document_limit())?,
        };
        let key = ops::broadcast_signal(&self.state, signal).await?;
        Ok(Response::new(BroadcastSignalResponse {
            key: key.get(),
            tenant_id: DEFAULT_TENANT.to_owned(),
        }))
    }
}

fn receiver_stream<T: Send + 'static>(
    receiver: mpsc::Receiver<Result<T, Status>>,
) -> ResponseStream<T> {
    Box::pin(futures::stream::unfold(
        receiver,
        |mut receiver| async move { receiver.recv().await.map(|item| (item, receiver)) },
    ))
}
