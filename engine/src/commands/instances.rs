//! PROCESS_INSTANCE_CREATION CREATE and PROCESS_INSTANCE CANCEL.

use rill_protocol::Key;
use rill_protocol::value::{
    BpmnElementType, BpmnEventType, ProcessInstanceCreationRecord, ProcessInstanceRecord,
};
use rill_protocol::{CreateProcessInstance, Intent, ProcessSelector};

use super::{tenant, variables_entries};
use crate::context::Processing;
use crate::error::Result;
use crate::outcome::Rejection;

pub(super) fn create(p: &mut Processing<'_>, create: &CreateProcessInstance) -> Result<()> {
    let intent = create.intent();
    let (bpmn_process_id, version) = match &create.process {
        ProcessSelector::ById {
            bpmn_process_id,
            version,
        } => (bpmn_process_id.clone(), version.unwrap_or(-1)),
        ProcessSelector::ByKey(_) => (String::new(), -1),
    };
    let mut record = ProcessInstanceCreationRecord {
        bpmn_process_id,
        version,
        process_definition_key: match create.process {
            ProcessSelector::ByKey(key) => key.get(),
            ProcessSelector::ById { .. } => -1,
        },
        process_instance_key: -1,
        variables: create.variables.clone(),
        fetch_variables: create.fetch_variables.clone(),
        tenant_id: tenant(),
        await_request_id: None,
        tags: create.tags.clone(),
    };
    let variables = match variables_entries(&create.variables, "the variables") {
        Ok(variables) => variables,
        Err(rejection) => {
            p.reject(Key::NONE, intent, record, rejection);
            return Ok(());
        }
    };
    match rill_protocol::tags::validate_tags(&create.tags) {
        Ok(tags) => record.tags = tags,
        Err(reason) => {
            p.reject(
                Key::NONE,
                intent,
                record,
                Rejection::invalid_argument(reason),
            );
            return Ok(());
        }
    }
    let definition_key = match &create.process {
        ProcessSelector::ById {
            bpmn_process_id,
            version: None,
        } => p.latest_process(bpmn_process_id)?.map(|(_, key)| key),
        ProcessSelector::ById {
            bpmn_process_id,
            version: Some(version),
        } => p.read().process_key_by_version(bpmn_process_id, *version)?,
        ProcessSelector::ByKey(key) => p.read().is_process_startable(*key)?.then_some(*key),
    };
    let Some(definition_key) = definition_key else {
        let reason = match &create.process {
            ProcessSelector::ById {
                bpmn_process_id,
                version: None,
            } => format!(
                "Expected to find process definition with process ID '{bpmn_process_id}', but \
                 none found"
            ),
            ProcessSelector::ById {
                bpmn_process_id,
                version: Some(version),
            } => format!(
                "Expected to find process definition with process ID '{bpmn_process_id}' and \
                 version '{version}', but none found"
            ),
            ProcessSelector::ByKey(key) if p.read().is_process_deleting(*key)? => format!(
                "Expected to find process definition with key '{key}', but it is deleted: \
                 its running instances go on, no new instance of it can be created"
            ),
            ProcessSelector::ByKey(key) => {
                format!("Expected to find process definition with key '{key}', but none found")
            }
        };
        p.reject(Key::NONE, intent, record, Rejection::not_found(reason));
        return Ok(());
    };
    let process = p.model(definition_key)?;
    if process
        .model
        .start_event(crate::model::ProcessModel::ROOT)
        .is_none()
    {
        let rejection = Rejection::invalid_state(format!(
            "Expected to create an instance of process '{}' at its none start event, but it \
             has none: it starts only by timer, message or signal",
            process.model.bpmn_process_id
        ));
        p.reject(Key::NONE, intent, record, rejection);
        return Ok(());
    }

    p.command(Key::NONE, intent, record.clone());
    let instance_key = p.next_key()?;
    record.bpmn_process_id = process.model.bpmn_process_id.clone();
    record.version = process.version;
    record.process_definition_key = process.key.get();
    record.process_instance_key = instance_key.get();
    if create.await_result {
        record.await_request_id = p.ctx.request.map(|r| r.0);
    }
    let root = ProcessInstanceRecord {
        tags: record.tags.clone(),
        ..Processing::root_record(&process, instance_key)
    };
    for (name, text) in &variables {
        p.set_variable_text(&root, instance_key, name, text)?;
    }
    // The creation event follows the process's ELEMENT_ACTIVATING, so that its applier
    // can mark an awaited instance.
    p.enter_process(instance_key, root)?;
    p.event(instance_key, Intent::Created, record.clone())?;
    if !create.await_result {
        p.respond(instance_key, Intent::Created, record);
    }
    p.start_process(instance_key)
}

pub(super) fn placeholder(key: Key) -> ProcessInstanceRecord {
    ProcessInstanceRecord {
        bpmn_element_type: BpmnElementType::Process,
        element_id: String::new(),
        bpmn_process_id: String::new(),
        version: -1,
        process_definition_key: -1,
        process_instance_key: key.get(),
        flow_scope_key: -1,
        bpmn_event_type: BpmnEventType::Unspecified,
        parent_process_instance_key: -1,
        parent_element_instance_key: -1,
        tenant_id: tenant(),
        root_process_instance_key: -1,
        tags: Vec::new(),
        tree_path: None,
    }
}

pub(super) fn cancel(p: &mut Processing<'_>, key: Key) -> Result<()> {
    let instance = p
        .read()
        .element_instance(key)?
        .filter(|i| i.record.bpmn_element_type == BpmnElementType::Process);
    let Some(instance) = instance else {
        let rejection = Rejection::not_found(format!(
            "Expected to cancel a process instance with key '{key}', but no such process \
             instance was found"
        ));
        p.reject(key, Intent::Cancel, placeholder(key), rejection);
        return Ok(());
    };
    if instance.record.parent_process_instance_key > 0 {
        // As in Zeebe: a called instance ends with its call activity.
        let mut root = instance.record.parent_process_instance_key;
        while let Some(parent) = p.read().element_instance(root)? {
            if parent.record.parent_process_instance_key <= 0 {
                break;
            }
            root = parent.record.parent_process_instance_key;
        }
        let rejection = Rejection::invalid_state(format!(
            "Expected to cancel a process instance with key '{key}', but it was created by a \
             call activity of process instance '{}'; cancel the root process instance '{root}' \
             instead",
            instance.record.parent_process_instance_key
        ));
        p.reject(key, Intent::Cancel, instance.record, rejection);
        return Ok(());
    }
    p.command(key, Intent::Cancel, instance.record.clone());
    p.respond(key, Intent::ElementTerminating, instance.record);
    p.terminate(key)?;
    Ok(())
}

/// Logs written before the history store answered every read hold this command (the
/// engine kept finished instances' summaries until they expired). There is nothing left
/// to expire: it is accepted, and writes its command record and nothing else.
pub(super) fn expire_summary(p: &mut Processing<'_>, key: Key) {
    p.command(key, Intent::Delete, placeholder(key));
}
