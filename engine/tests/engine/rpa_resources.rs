//! RPA scripts (`.rpa` resources) deployed beside BPMN, and the service tasks that link
//! them with `zeebe:linkedResource`: the job's `linkedResources` header resolves each
//! link by its binding when the job is created, and a link that finds nothing is a
//! `RESOURCE_NOT_FOUND` incident.

use rill_engine_api::Action;
use rill_protocol::value::{DeploymentRecord, IncidentErrorType, JobRecord, ResourceRecord};
use rill_protocol::{Command, Intent, RecordValue, RejectionType, ValueType};
use serde_json::{Value, json};

use super::*;

const TASK: &str = "modeler/rpa-invoice-booking.bpmn";
const SCRIPT: &str = "modeler/book-invoice.rpa";
const RPA_JOB: &str = "camunda::RPA-Task::default";

fn deployment(outcome: &Outcome) -> DeploymentRecord {
    assert!(!outcome.is_rejected(), "{:?}", outcome.response);
    match outcome.value() {
        RecordValue::Deployment(deployment) => deployment.clone(),
        other => panic!("not a deployment: {other:?}"),
    }
}

/// An RPA script with this id (and version tag), its text varied by `body`.
fn script(id: &str, version_tag: Option<&str>, body: &str) -> Vec<u8> {
    let mut script = json!({"id": id, "name": "A robot", "script": body});
    if let Some(tag) = version_tag {
        script["versionTag"] = json!(tag);
    }
    serde_json::to_vec_pretty(&script).expect("JSON")
}

/// A process whose service task `Robot` links the script `book-invoice` with this
/// binding (`bindingType` and `versionTag` attributes as written).
fn linking_process(process_id: &str, binding: &str) -> Vec<u8> {
    format!(
        r#"<?xml version="1.0" encoding="UTF-8"?>
<bpmn:definitions xmlns:bpmn="http://www.omg.org/spec/BPMN/20100524/MODEL" xmlns:zeebe="http://camunda.org/schema/zeebe/1.0" id="Definitions_1" targetNamespace="http://bpmn.io/schema/bpmn">
  <bpmn:process id="{process_id}" isExecutable="true">
    <bpmn:startEvent id="Start"><bpmn:outgoing>F1</bpmn:outgoing></bpmn:startEvent>
    <bpmn:serviceTask id="Robot">
      <bpmn:extensionElements>
        <zeebe:taskDefinition type="{RPA_JOB}" />
        <zeebe:linkedResources>
          <zeebe:linkedResource resourceId="book-invoice" resourceType="RPA" linkName="RPAScript" {binding} />
        </zeebe:linkedResources>
      </bpmn:extensionElements>
      <bpmn:incoming>F1</bpmn:incoming>
      <bpmn:outgoing>F2</bpmn:outgoing>
    </bpmn:serviceTask>
    <bpmn:endEvent id="End"><bpmn:incoming>F2</bpmn:incoming></bpmn:endEvent>
    <bpmn:sequenceFlow id="F1" sourceRef="Start" targetRef="Robot" />
    <bpmn:sequenceFlow id="F2" sourceRef="Robot" targetRef="End" />
  </bpmn:process>
</bpmn:definitions>"#
    )
    .into_bytes()
}

/// The `linkedResources` header of a job, parsed.
fn linked_resources(job: &JobRecord) -> Value {
    let header = job
        .custom_headers
        .get("linkedResources")
        .unwrap_or_else(|| panic!("no linkedResources header: {:?}", job.custom_headers));
    serde_json::from_str(header).expect("the header is JSON")
}

fn resource_created(rule: &EngineRule) -> Vec<(i64, ResourceRecord)> {
    rule.records()
        .events()
        .of_type(ValueType::Resource)
        .with_intent(Intent::Created)
        .records
        .iter()
        .map(|r| match &r.value {
            RecordValue::Resource(resource) => (r.key.get(), resource.clone()),
            other => panic!("{other:?}"),
        })
        .collect()
}

#[test]
fn the_rpa_task_deploys_with_its_script_and_its_job_carries_the_resolved_link() {
    let mut rule = EngineRule::new();
    let script_text = fixture(SCRIPT);
    let deployed = deployment(&rule.deploy(&[
        ("rpa-invoice-booking.bpmn", fixture(TASK)),
        ("book-invoice.rpa", script_text.clone()),
    ]));

    // The deployment lists the script (Zeebe's resourceMetadata), and a RESOURCE
    // CREATED record holds it with its content.
    assert_eq!(deployed.resource_metadata.len(), 1);
    let metadata = &deployed.resource_metadata[0];
    assert_eq!(metadata.resource_id, "book-invoice");
    assert_eq!(metadata.resource_name, "book-invoice.rpa");
    assert_eq!(metadata.version, 1);
    assert_eq!(metadata.version_tag, "2025-10");
    assert!(!metadata.is_duplicate);
    let created = resource_created(&rule);
    assert_eq!(created.len(), 1);
    let (key, resource) = &created[0];
    assert_eq!(*key, metadata.resource_key);
    assert_eq!(resource.resource_key, metadata.resource_key);
    assert_eq!(resource.deployment_key, metadata.deployment_key);
    assert_eq!(
        resource.resource_prop.as_bytes(),
        script_text.as_slice(),
        "the content as deployed"
    );
    assert_eq!(resource.checksum, metadata.checksum);

    // The job: the model's headers and the link, resolved to the deployed script.
    rule.create("rpa-invoice-booking", json!({"invoiceNumber": "INV-7"}));
    let (job_key, job) = rule.job(RPA_JOB);
    assert_eq!(
        job.custom_headers
            .get("camunda::timeout")
            .map(String::as_str),
        Some("PT5M")
    );
    assert_eq!(
        job.custom_headers
            .get("linkedResources")
            .map(String::as_str),
        Some(
            format!(
                r#"[{{"resourceKey":"{}","resourceType":"RPA","linkName":"RPAScript"}}]"#,
                metadata.resource_key
            )
            .as_str()
        ),
        "Zeebe's header: the key as a string, the type and the link name"
    );
    assert_eq!(job.variables.to_value()["invoiceNumber"], json!("INV-7"));
    assert!(
        !rule
            .complete(job_key, json!({"bookedAs": "ERP-7"}))
            .is_rejected()
    );
    rule.assert_replay_matches();
}

#[test]
fn a_link_to_a_resource_not_deployed_is_an_incident_that_resolves_once_it_is() {
    let mut rule = EngineRule::new();
    deployment(&rule.deploy(&[("rpa-invoice-booking.bpmn", fixture(TASK))]));
    let instance = rule.create("rpa-invoice-booking", json!({"invoiceNumber": "INV-8"}));

    let incidents = rule.incidents(instance);
    assert_eq!(incidents.len(), 1);
    let incident = &incidents[0].record;
    assert_eq!(incident.error_type, IncidentErrorType::ResourceNotFound);
    assert_eq!(incident.element_id, "BookInvoice");
    assert_eq!(
        incident.error_message,
        "Expected to link the resource with id 'book-invoice' to the job of serviceTask \
         'BookInvoice', but no resource with this id is deployed; deploy one, then resolve \
         the incident"
    );
    assert!(rule.activate(RPA_JOB, 10).is_empty(), "no job yet");

    // The script is deployed; resolving the incident creates the job, with the link.
    let deployed = deployment(&rule.deploy(&[("book-invoice.rpa", fixture(SCRIPT))]));
    let outcome = rule.process(Command::ResolveIncident {
        incident_key: incidents[0].key,
    });
    assert!(!outcome.is_rejected(), "{:?}", outcome.response);
    assert!(rule.incidents(instance).is_empty());
    let (_, job) = rule.job(RPA_JOB);
    assert_eq!(
        linked_resources(&job),
        json!([{
            "resourceKey": deployed.resource_metadata[0].resource_key.to_string(),
            "resourceType": "RPA",
            "linkName": "RPAScript"
        }])
    );
    rule.assert_replay_matches();
}

#[test]
fn an_rpa_script_deploys_alone_and_gets_a_new_version_only_when_it_changes() {
    let mut rule = EngineRule::new();
    let first = deployment(&rule.deploy(&[("book-invoice.rpa", fixture(SCRIPT))]));
    assert!(first.processes_metadata.is_empty());
    let v1 = first.resource_metadata[0].clone();
    assert_eq!((v1.version, v1.is_duplicate), (1, false));

    // The same file again: a duplicate, with the first version's key.
    let again = deployment(&rule.deploy(&[("book-invoice.rpa", fixture(SCRIPT))]));
    let duplicate = &again.resource_metadata[0];
    assert!(duplicate.is_duplicate);
    assert_eq!(
        (duplicate.version, duplicate.resource_key),
        (1, v1.resource_key)
    );
    assert_eq!(resource_created(&rule).len(), 1, "nothing new is created");

    // A changed script: version 2, a new key.
    let changed = deployment(&rule.deploy(&[(
        "book-invoice.rpa",
        script("book-invoice", Some("2025-11"), "Log    v2"),
    )]));
    let v2 = &changed.resource_metadata[0];
    assert_eq!((v2.version, v2.is_duplicate), (2, false));
    assert_ne!(v2.resource_key, v1.resource_key);
    assert_eq!(v2.version_tag, "2025-11");
    rule.assert_replay_matches();
}

#[test]
fn each_binding_resolves_its_version_of_the_script() {
    let mut rule = EngineRule::new();
    // Version 1 (tag "old") is deployed with the deployment-bound process, version 2
    // (tag "new") later.
    let with_process = deployment(&rule.deploy(&[
        (
            "deployment.bpmn",
            linking_process("by-deployment", r#"bindingType="deployment""#),
        ),
        (
            "book-invoice.rpa",
            script("book-invoice", Some("old"), "Log    v1"),
        ),
    ]));
    let v1 = with_process.resource_metadata[0].resource_key;
    let later = deployment(&rule.deploy(&[(
        "book-invoice.rpa",
        script("book-invoice", Some("new"), "Log    v2"),
    )]));
    let v2 = later.resource_metadata[0].resource_key;
    deployment(&rule.deploy(&[
        (
            "latest.bpmn",
            linking_process("by-latest", r#"bindingType="latest""#),
        ),
        ("default.bpmn", linking_process("by-default", "")),
        (
            "tag.bpmn",
            linking_process("by-tag", r#"bindingType="versionTag" versionTag="old""#),
        ),
        (
            "missing-tag.bpmn",
            linking_process(
                "by-missing-tag",
                r#"bindingType="versionTag" versionTag="v9""#,
            ),
        ),
    ]));

    let mut resolved = Vec::new();
    for process in ["by-deployment", "by-latest", "by-default", "by-tag"] {
        rule.create(process, json!({}));
        let (job_key, job) = rule.job(RPA_JOB);
        resolved.push((process, linked_resources(&job)[0]["resourceKey"].clone()));
        assert!(!rule.complete(job_key, json!({})).is_rejected());
    }
    assert_eq!(
        resolved,
        [
            ("by-deployment", json!(v1.to_string())),
            ("by-latest", json!(v2.to_string())),
            ("by-default", json!(v2.to_string())),
            ("by-tag", json!(v1.to_string())),
        ]
    );

    let instance = rule.create("by-missing-tag", json!({}));
    let incidents = rule.incidents(instance);
    assert_eq!(incidents.len(), 1);
    assert_eq!(
        incidents[0].record.error_type,
        IncidentErrorType::ResourceNotFound
    );
    assert!(
        incidents[0]
            .record
            .error_message
            .contains("no resource with this id has the version tag 'v9'"),
        "{}",
        incidents[0].record.error_message
    );
    rule.assert_replay_matches();
}

#[test]
fn a_deployment_bound_link_finds_only_what_was_deployed_with_the_process() {
    let mut rule = EngineRule::new();
    // As in Zeebe 8.8, the process deploys without the script; its job cannot be
    // created, even once the script is deployed on its own.
    deployment(&rule.deploy(&[(
        "deployment.bpmn",
        linking_process("by-deployment", r#"bindingType="deployment""#),
    )]));
    let later = deployment(&rule.deploy(&[("book-invoice.rpa", fixture(SCRIPT))]));
    assert_eq!(later.resource_metadata.len(), 1);
    let instance = rule.create("by-deployment", json!({}));
    let incidents = rule.incidents(instance);
    assert_eq!(incidents.len(), 1);
    let message = &incidents[0].record.error_message;
    assert_eq!(
        incidents[0].record.error_type,
        IncidentErrorType::ResourceNotFound
    );
    assert!(
        message.contains("bound to the deployment (bindingType 'deployment')"),
        "{message}"
    );
    rule.assert_replay_matches();
}

#[test]
fn an_rpa_script_that_is_not_json_with_an_id_is_refused_naming_the_file() {
    let cases: &[(&str, &[u8], &str)] = &[
        (
            "broken.rpa",
            b"*** Tasks ***\nBook invoice",
            "Expected the RPA resource 'broken.rpa' to be JSON with an 'id' (the resourceId a \
             zeebe:linkedResource links it by), but it is not valid JSON",
        ),
        (
            "no-id.rpa",
            br#"{"name": "A robot", "script": "Log    hi"}"#,
            "Expected the RPA resource 'no-id.rpa' to be JSON with an 'id' (the resourceId a \
             zeebe:linkedResource links it by), but it has no 'id'",
        ),
        ("blank-id.rpa", br#"{"id": "  "}"#, "but its 'id' is blank"),
        (
            "number-id.rpa",
            br#"{"id": 7}"#,
            "but its 'id' is 7, not a string",
        ),
        (
            "list.rpa",
            br#"["book-invoice"]"#,
            "but it is not a JSON object",
        ),
        (
            "bad-tag.rpa",
            br#"{"id": "x", "versionTag": {"v": 1}}"#,
            "but its 'versionTag' is {\"v\":1}, not a string",
        ),
    ];
    for (name, content, reason) in cases {
        let mut rule = EngineRule::new();
        let outcome = rule.deploy(&[
            ("rpa-invoice-booking.bpmn", fixture(TASK)),
            (name, content.to_vec()),
        ]);
        let (kind, message) = rejection_of(&outcome);
        assert_eq!(kind, RejectionType::InvalidArgument, "{name}");
        assert!(message.contains(reason), "{name}: {message}");
        // Nothing of the deployment is written: the process does not start.
        let start = rule.process(EngineRule::create_command("rpa-invoice-booking", json!({})));
        assert!(start.is_rejected(), "{name}: the process was deployed");
        assert!(resource_created(&rule).is_empty(), "{name}");
    }

    // The same id twice in one deployment.
    let mut rule = EngineRule::new();
    let outcome = rule.deploy(&[
        ("a.rpa", script("book-invoice", None, "a")),
        ("b.rpa", script("book-invoice", None, "b")),
    ]);
    let (kind, message) = rejection_of(&outcome);
    assert_eq!(kind, RejectionType::InvalidArgument);
    assert!(
        message.contains("duplicated id 'book-invoice' in the resources 'a.rpa' and 'b.rpa'"),
        "{message}"
    );

    // Other files are still refused, naming what is deployable.
    let outcome = rule.deploy(&[("notes.txt", b"hello".to_vec())]);
    let (_, message) = rejection_of(&outcome);
    assert!(
        message.contains("'.bpmn', '.xml', '.dmn', '.form' or '.rpa'), but 'notes.txt'"),
        "{message}"
    );
}

#[test]
fn other_partitions_receive_the_scripts_with_the_deployment() {
    let mut first = EngineRule::on_partition(1, 2);
    let mut second = EngineRule::on_partition(2, 2);
    let deployed = first.deploy(&[
        ("rpa-invoice-booking.bpmn", fixture(TASK)),
        ("book-invoice.rpa", fixture(SCRIPT)),
    ]);
    let key = deployment(&deployed).resource_metadata[0].resource_key;
    let to_second = deployed
        .actions
        .iter()
        .find_map(|a| match a {
            Action::Send { command, .. } => Some(command.clone()),
            _ => None,
        })
        .expect("a send to partition 2");
    assert!(!second.process(to_second).is_rejected());
    let created = resource_created(&second);
    assert_eq!(created.len(), 1);
    assert_eq!(created[0].0, key, "the key the deploying partition gave it");

    // An instance on partition 2 links the same script.
    second.create("rpa-invoice-booking", json!({}));
    let (_, job) = second.job(RPA_JOB);
    assert_eq!(
        linked_resources(&job)[0]["resourceKey"],
        json!(key.to_string())
    );
    second.assert_replay_matches();
}
