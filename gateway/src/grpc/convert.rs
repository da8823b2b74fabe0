//! Between Zeebe's protobuf messages and Rill's commands and records: JSON text fields,
//! tenants, activated jobs, and how a batch of jobs is split into stream messages.

use prost::Message;
use rill_protocol::value::{AdHocSubProcessActivateElement, DEFAULT_TENANT, JobRecord};
use rill_protocol::{JsonValue, Key};

use super::proto::{ActivateJobsResponse, ActivatedJob, JobResult, activated_job};
use crate::limits::{DocumentError, MESSAGE_SIZE_SETTING, Unreadable, check_size, parse_document};
use crate::ops::{self, ClientError};

/// A JSON text field that must hold an object of variables, at most `max_size` bytes
/// long (`gateway.max-variable-document-size`). Empty text means none.
pub fn variables(field: &str, text: &str, max_size: u64) -> Result<JsonValue, ClientError> {
    if text.trim().is_empty() {
        return Ok(JsonValue::empty_object());
    }
    check_size(text.len(), max_size).map_err(|error| document_error(field, error))?;
    match parse_document(text) {
        // `null` is taken as no variables, as in the REST API.
        Ok(document) if document.is_null() => Ok(JsonValue::empty_object()),
        Ok(document) if document.is_object() => Ok(document),
        Ok(other) => Err(ClientError::invalid_property(
            field,
            format!(
                "expected a JSON object of variables, e.g. {{\"amount\": 5}}, but got {}",
                other.kind()
            ),
        )),
        Err(Unreadable::Invalid(error)) => Err(ClientError::invalid_property(
            field,
            format!("it is not a JSON document ({error})"),
        )),
        Err(too_deep) => Err(document_error(field, DocumentError::Unreadable(too_deep))),
    }
}

/// A refused variable document, naming the field (and for a size, the limit and its
/// setting).
pub fn document_error(field: &str, error: DocumentError) -> ClientError {
    let detail = error.describe(field);
    let field = Some(field.to_owned());
    match error {
        DocumentError::TooLarge { .. } => ClientError::TooLarge { field, detail },
        DocumentError::Unreadable(_) => ClientError::InvalidArgument { field, detail },
    }
}

/// Refuses a request message larger than `max_size` (`gateway.max-message-size`) after
/// its variable `documents` (field, JSON text): one of those too large is the error
/// then, naming its own field and setting. The transport decodes messages up to twice
/// the limit so that this check sees them (`super::GrpcServer::serve`).
pub fn within_limits(
    request: &impl Message,
    documents: &[(&str, &str)],
    max_size: u64,
    max_document_size: u64,
) -> Result<(), ClientError> {
    for (field, text) in documents {
        check_size(text.len(), max_document_size).map_err(|error| document_error(field, error))?;
    }
    let size = request.encoded_len();
    if u64::try_from(size).map_or(true, |size| size > max_size) {
        return Err(message_too_large(Some(size), max_size));
    }
    Ok(())
}

/// A request message over `gateway.max-message-size` (its size when known): bad input
/// (INVALID_ARGUMENT), not RESOURCE_EXHAUSTED, which Zeebe's clients retry as
/// back-pressure.
pub fn message_too_large(size: Option<usize>, max_size: u64) -> ClientError {
    let size = size.map_or_else(String::new, |size| format!(" of {size} bytes"));
    ClientError::TooLarge {
        field: None,
        detail: format!(
            "The request message{size} is larger than the maximum message size of {max_size} \
             bytes (set by {MESSAGE_SIZE_SETTING})"
        ),
    }
}

/// Bad input in `field` as a status, worded as Zeebe's gateway words it.
pub fn invalid(field: &str, reason: impl std::fmt::Display) -> tonic::Status {
    ClientError::invalid_property(field, reason).into()
}

/// Rill is single-tenant: a tenant id must be empty or the default tenant.
pub fn tenant(field: &str, tenant: &str) -> Result<(), ClientError> {
    if tenant.is_empty() || tenant == DEFAULT_TENANT {
        Ok(())
    } else {
        Err(ClientError::invalid_field(
            field,
            format!(
                "Expected to handle the request with {field} '{tenant}', but multi-tenancy is \
                 not supported; leave {field} empty or use '{DEFAULT_TENANT}'"
            ),
        ))
    }
}

/// A key field: keys are positive.
pub fn key(field: &str, value: i64) -> Result<Key, ClientError> {
    if value > 0 {
        Ok(Key(value))
    } else {
        Err(ClientError::invalid_property(
            field,
            format!("expected a key (a positive number), but got {value}"),
        ))
    }
}

/// A request's `operationReference`, checked: 0 (or more than a record's long holds)
/// is no reference. The command is then sent with it and its records carry it.
pub fn operation_reference(field: &str, value: Option<u64>) -> Result<Option<u64>, ClientError> {
    match value {
        None => Ok(None),
        Some(reference) if reference > 0 && i64::try_from(reference).is_ok() => Ok(Some(reference)),
        Some(reference) => Err(ClientError::invalid_property(
            field,
            format!(
                "expected a positive number up to {}, but got {reference}",
                i64::MAX
            ),
        )),
    }
}

/// A feature of the request Rill does not run: refused, never ignored.
pub fn unsupported(condition: bool, what: &str) -> Result<(), ClientError> {
    if condition {
        Err(ClientError::invalid_argument(format!(
            "{what} is not supported by Rill"
        )))
    } else {
        Ok(())
    }
}

/// The value the tenant id field carries in answers.
pub fn tenant_text(tenant: String) -> String {
    if tenant.is_empty() {
        DEFAULT_TENANT.to_owned()
    } else {
        tenant
    }
}

/// JSON text of a value, `{}` for none.
/// A document as gRPC clients receive it: JSON text, `{}` for none.
pub fn json_text(value: &JsonValue) -> String {
    if value.is_null() {
        "{}".to_owned()
    } else {
        value.as_str().to_owned()
    }
}

pub fn activated_job(key: i64, job: JobRecord) -> ActivatedJob {
    let custom_headers: serde_json::Map<String, serde_json::Value> = job
        .custom_headers
        .into_iter()
        .map(|(name, value)| (name, serde_json::Value::String(value)))
        .collect();
    let kind = activated_job::JobKind::from_str_name(job.job_kind.name())
        .unwrap_or(activated_job::JobKind::BpmnElement);
    let listener_event_type =
        activated_job::ListenerEventType::from_str_name(job.job_listener_event_type.name())
            .unwrap_or(activated_job::ListenerEventType::Unspecified);
    ActivatedJob {
        key,
        r#type: job.job_type,
        process_instance_key: job.process_instance_key,
        bpmn_process_id: job.bpmn_process_id,
        process_definition_version: job.process_definition_version,
        process_definition_key: job.process_definition_key,
        element_id: job.element_id,
        element_instance_key: job.element_instance_key,
        custom_headers: serde_json::Value::Object(custom_headers).to_string(),
        worker: job.worker,
        retries: job.retries,
        deadline: job.deadline,
        variables: json_text(&job.variables),
        tenant_id: tenant_text(job.tenant_id),
        user_task: None,
        kind: kind as i32,
        listener_event_type: listener_event_type as i32,
        tags: job.tags,
    }
}

/// Splits one partition's activated jobs into stream messages of at most `max_bytes`
/// encoded (a single larger job still goes, alone), as Zeebe's gateway sends each
/// broker's answer as messages of its own that a client can take in.
pub fn split_batch(jobs: Vec<ActivatedJob>, max_bytes: usize) -> Vec<ActivateJobsResponse> {
    let mut responses = Vec::new();
    let mut current = ActivateJobsResponse::default();
    let mut size = 0;
    for job in jobs {
        // A repeated message field costs its tag, its length prefix and its bytes.
        let job_size = job.encoded_len();
        let cost = 1 + prost::length_delimiter_len(job_size) + job_size;
        if !current.jobs.is_empty() && size + cost > max_bytes {
            responses.push(std::mem::take(&mut current));
            size = 0;
        }
        size += cost;
        current.jobs.push(job);
    }
    if !current.jobs.is_empty() {
        responses.push(current);
    }
    responses
}

/// The engine's job result from CompleteJob's `JobResult`: a task listener's
/// (`userTask`, the default) or an ad-hoc subprocess's (`adHocSubProcess`), each
/// element's variables checked as a variables document.
pub fn job_result(
    result: JobResult,
    max_size: u64,
) -> Result<rill_protocol::value::JobResult, ClientError> {
    let corrections = result.corrections.map(|c| ops::Corrections {
        assignee: c.assignee,
        due_date: c.due_date,
        follow_up_date: c.follow_up_date,
        candidate_users: c.candidate_users.map(|l| l.values),
        candidate_groups: c.candidate_groups.map(|l| l.values),
        priority: c.priority,
    });
    // A repeated field cannot tell an empty list from none: empty is none.
    let activate_elements = if result.activate_elements.is_empty() {
        None
    } else {
        let mut checked = Vec::with_capacity(result.activate_elements.len());
        for (index, element) in result.activate_elements.into_iter().enumerate() {
            let field = format!("result.activateElements[{index}].variables");
            checked.push(AdHocSubProcessActivateElement {
                variables: variables(&field, &element.variables, max_size)?,
                element_id: element.element_id,
            });
        }
        Some(checked)
    };
    ops::job_result(ops::ResultInput {
        result_type: result.r#type,
        denied: result.denied,
        denied_reason: result.denied_reason,
        corrections,
        activate_elements,
        completion_condition_fulfilled: result.is_completion_condition_fulfilled,
        cancel_remaining_instances: result.is_cancel_remaining_instances,
    })
    .map_err(ClientError::invalid_argument)
}

#[cfg(test)]
mod tests {
    use super::*;

    const LIMIT: u64 = 1024;

    #[test]
    fn an_ad_hoc_job_result_decodes_from_zeebe_field_numbers_and_converts() {
        use crate::grpc::proto::CompleteJobRequest;
        use rill_protocol::value::JobResultType;

        /// A length-delimited field: its tag, its length, its bytes.
        fn field(number: u8, bytes: &[u8]) -> Vec<u8> {
            let mut out = vec![(number << 3) | 2, bytes.len() as u8];
            out.extend_from_slice(bytes);
            out
        }
        // JobResult { type = 4, activateElements = 5 { elementId = 1, variables = 2 },
        // isCompletionConditionFulfilled = 6, isCancelRemainingInstances = 7 } as
        // CompleteJobRequest's result = 3.
        let element = [field(1, b"search"), field(2, br#"{"query":"rivers"}"#)].concat();
        let result = [
            field(4, b"adHocSubProcess"),
            field(5, &element),
            vec![6 << 3, 0],
            vec![7 << 3, 1],
        ]
        .concat();
        let bytes = [vec![1 << 3, 42], field(3, &result)].concat();
        let request = CompleteJobRequest::decode(bytes.as_slice()).expect("decodes");
        assert_eq!(request.job_key, 42);
        let converted = job_result(request.result.expect("a result"), LIMIT).expect("valid");
        assert_eq!(converted.result_type, JobResultType::AdHocSubProcess);
        assert_eq!(converted.activate_elements.len(), 1);
        assert_eq!(converted.activate_elements[0].element_id, "search");
        assert_eq!(
            converted.activate_elements[0].variables.to_value(),
            serde_json::json!({"query": "rivers"})
        );
        assert!(!converted.completion_condition_fulfilled);
        assert!(converted.cancel_remaining_instances);

        // The fields of the other kind, and bad variables, are refused by name.
        let refused = |result: JobResult| -> tonic::Status {
            job_result(result, LIMIT).expect_err("refused").into()
        };
        let status = refused(JobResult {
            r#type: Some("adHocSubProcess".into()),
            denied: Some(true),
            ..Default::default()
        });
        assert_eq!(status.code(), tonic::Code::InvalidArgument);
        assert!(status.message().contains("result.denied"), "{status:?}");
        let status = refused(JobResult {
            is_completion_condition_fulfilled: Some(true),
            ..Default::default()
        });
        assert!(
            status
                .message()
                .contains("result.isCompletionConditionFulfilled"),
            "{status:?}"
        );
        let status = refused(JobResult {
            r#type: Some("adHocSubProcess".into()),
            activate_elements: vec![crate::grpc::proto::JobResultActivateElement {
                element_id: "search".into(),
                variables: "[1]".into(),
            }],
            ..Default::default()
        });
        assert!(
            status
                .message()
                .contains("result.activateElements[0].variables"),
            "{status:?}"
        );
        // Fields of the other type with their defaults are no fields.
        let defaults = job_result(
            JobResult {
                r#type: Some("adHocSubProcess".into()),
                denied: Some(false),
                denied_reason: Some(String::new()),
                is_completion_condition_fulfilled: Some(true),
                ..Default::default()
            },
            LIMIT,
        )
        .expect("defaults of the user-task fields");
        assert!(defaults.completion_condition_fulfilled && !defaults.denied);
        let defaults = job_result(
            JobResult {
                denied: Some(true),
                is_completion_condition_fulfilled: Some(false),
                is_cancel_remaining_instances: Some(false),
                ..Default::default()
            },
            LIMIT,
        )
        .expect("defaults of the ad-hoc fields");
        assert!(defaults.denied && !defaults.completion_condition_fulfilled);
        // No result type: a task listener's, as before.
        let plain = job_result(
            JobResult {
                denied: Some(true),
                ..Default::default()
            },
            LIMIT,
        )
        .expect("a user-task result");
        assert_eq!(plain.result_type, JobResultType::UserTask);
        assert!(plain.denied);
    }

    #[test]
    fn variables_must_be_an_object_and_the_error_names_the_field() {
        assert_eq!(
            variables("variables", "", LIMIT).unwrap().to_value(),
            serde_json::json!({})
        );
        assert_eq!(
            variables("variables", r#"{"a":1}"#, LIMIT)
                .unwrap()
                .to_value(),
            serde_json::json!({"a": 1})
        );
        let array = tonic::Status::from(variables("variables", "[1]", LIMIT).unwrap_err());
        assert_eq!(array.code(), tonic::Code::InvalidArgument);
        assert!(array.message().contains("'variables'"), "{array:?}");
        assert!(array.message().contains("an array"), "{array:?}");
        let broken = tonic::Status::from(variables("request.variables", "{", LIMIT).unwrap_err());
        assert!(
            broken.message().contains("'request.variables'"),
            "{broken:?}"
        );
    }

    #[test]
    fn variables_over_the_size_or_depth_limit_are_invalid_arguments_naming_the_field() {
        let at_limit = format!(r#"{{"a":"{}"}}"#, "x".repeat(LIMIT as usize - 8));
        assert_eq!(at_limit.len() as u64, LIMIT);
        assert!(variables("variables", &at_limit, LIMIT).is_ok());
        let over = format!(r#"{{"a":"{}"}}"#, "x".repeat(LIMIT as usize));
        let status = tonic::Status::from(variables("variables", &over, LIMIT).unwrap_err());
        assert_eq!(status.code(), tonic::Code::InvalidArgument);
        for fragment in [
            "'variables'",
            &format!("{} bytes", over.len()),
            "1024 bytes",
            "gateway.max-variable-document-size",
        ] {
            assert!(status.message().contains(fragment), "{status:?}");
        }
        let deep = format!("{}1{}", "[".repeat(101), "]".repeat(101));
        let status = tonic::Status::from(
            variables("variables", &format!(r#"{{"a":{deep}}}"#), LIMIT).unwrap_err(),
        );
        assert_eq!(status.code(), tonic::Code::InvalidArgument);
        assert!(
            status.message().contains("more than 100 levels"),
            "{status:?}"
        );
    }

    #[test]
    fn a_message_over_its_limit_is_refused_after_its_documents() {
        let request = super::super::proto::CompleteJobRequest {
            job_key: 1,
            variables: format!(r#"{{"a":"{}"}}"#, "x".repeat(2000)),
            ..Default::default()
        };
        let documents = [("variables", request.variables.as_str())];
        assert!(within_limits(&request, &documents, 4096, 4096).is_ok());
        let status =
            tonic::Status::from(within_limits(&request, &documents, 1024, 4096).unwrap_err());
        assert_eq!(status.code(), tonic::Code::InvalidArgument);
        assert!(
            status.message().contains("gateway.max-message-size"),
            "{status:?}"
        );
        assert!(status.message().contains("1024 bytes"), "{status:?}");
        // The document over its own limit is named first.
        let status =
            tonic::Status::from(within_limits(&request, &documents, 1024, 1024).unwrap_err());
        assert!(
            status
                .message()
                .contains("gateway.max-variable-document-size"),
            "{status:?}"
        );
    }

    #[test]
    fn keys_are_positive() {
        assert_eq!(key("jobKey", 7).unwrap(), Key(7));
        let status = tonic::Status::from(key("jobKey", 0).unwrap_err());
        assert!(status.message().contains("'jobKey'"));
    }

    fn job(key: i64, payload: usize) -> ActivatedJob {
        ActivatedJob {
            key,
            variables: "x".repeat(payload),
            ..Default::default()
        }
    }

    #[test]
    fn a_batch_is_split_by_encoded_size_and_keeps_every_job_once() {
        let jobs: Vec<_> = (1..=10).map(|k| job(k, 100)).collect();
        let one = job(1, 100).encoded_len() + 2;
        let responses = split_batch(jobs, one * 3);
        assert_eq!(
            responses.iter().map(|r| r.jobs.len()).collect::<Vec<_>>(),
            vec![3, 3, 3, 1]
        );
        let keys: Vec<i64> = responses
            .iter()
            .flat_map(|r| &r.jobs)
            .map(|j| j.key)
            .collect();
        assert_eq!(keys, (1..=10).collect::<Vec<_>>());
        for response in &responses {
            assert!(response.encoded_len() <= one * 3);
        }
        // A job larger than the limit still goes, alone.
        let big = split_batch(vec![job(1, 10), job(2, 5000), job(3, 10)], 1000);
        assert_eq!(
            big.iter().map(|r| r.jobs.len()).collect::<Vec<_>>(),
            vec![1, 1, 1]
        );
        assert!(split_batch(Vec::new(), 1000).is_empty());
    }
}
