//! The one decision about each `zeebe:` extension element the parser meets: Rill runs
//! it on this element, keeps it as metadata with no runtime meaning, or rejects it with
//! the reason. Every `extensionElements` child in the Zeebe namespace goes through
//! [`verdict`]; a name it does not know is rejected, so nothing is accepted and then
//! ignored. Extensions of other vendors' namespaces are not Zeebe's and are read past.
//! [`Builder::extensions`] reads those of a flow node that run, into [`Extensions`].

use roxmltree::Node;

use super::document::{ZEEBE_NS, article, bpmn_children};
use super::process::Builder;

/// What owns an `extensionElements`: the BPMN element name (`process`, `serviceTask`,
/// `sequenceFlow`, `message`...) and whether it is a message throw or end event (a job).
#[derive(Clone, Copy)]
pub(super) struct Owner<'n> {
    pub element: &'n str,
    pub message_throw: bool,
}

/// What Rill does with one `zeebe:` extension element on one owner.
#[derive(Debug, PartialEq, Eq)]
pub(super) enum Verdict {
    /// Read and run: the caller reads it.
    Runs,
    /// Accepted, with no runtime meaning (documented in `docs/decisions/bpmn-parsing.md`).
    Metadata,
    /// Rejected at deploy with this reason.
    Rejected(String),
}

/// Elements whose input or output mappings Rill applies (which of the two each allows is
/// checked when the mappings are read).
const IO_MAPPING_OWNERS: &[&str] = &[
    "task",
    "manualTask",
    "serviceTask",
    "scriptTask",
    "businessRuleTask",
    "sendTask",
    "receiveTask",
    "userTask",
    "subProcess",
    "adHocSubProcess",
    "callActivity",
    "startEvent",
    "endEvent",
    "intermediateCatchEvent",
    "intermediateThrowEvent",
    "boundaryEvent",
];

/// The decision for `zeebe:<name>` on `owner`.
pub(super) fn verdict(name: &str, owner: Owner<'_>) -> Verdict {
    let element = owner.element;
    let on = || format!("{} {element}", article(element));
    let is_job = matches!(
        element,
        "serviceTask" | "sendTask" | "scriptTask" | "businessRuleTask"
    ) || owner.message_throw;
    match name {
        "properties" => Verdict::Metadata,
        "versionTag" if element == "process" => Verdict::Runs,
        "userTaskForm" if element == "process" => Verdict::Metadata,
        "versionTag" => Verdict::Rejected(format!(
            "zeebe:versionTag belongs on the process, not on {}",
            on()
        )),
        "taskDefinition" | "taskHeaders" if is_job => Verdict::Runs,
        // Zeebe 8.8's job-worker implementation (the AI agent connector's).
        "taskDefinition" | "taskHeaders" if element == "adHocSubProcess" => Verdict::Runs,
        "taskHeaders" if element == "userTask" => Verdict::Runs,
        // Zeebe 8.8 ignores it there (Camunda's own get-started model has one): a
        // job-worker user task's job type is always io.camunda.zeebe:userTask.
        "taskDefinition" if element == "userTask" => Verdict::Metadata,
        "taskDefinition" | "taskHeaders" => Verdict::Rejected(format!(
            "zeebe:{name} is not supported on {}; only service, send, script and business \
             rule tasks, message throw and end events and ad-hoc subprocesses are jobs",
            on()
        )),
        "script" if element == "scriptTask" => Verdict::Runs,
        "script" => Verdict::Rejected(format!(
            "zeebe:script is not supported on {}; only a script task evaluates a script",
            on()
        )),
        "ioMapping" if IO_MAPPING_OWNERS.contains(&element) => Verdict::Runs,
        "ioMapping" => Verdict::Rejected(format!(
            "zeebe:ioMapping is not supported on {}; it has no variables to map",
            on()
        )),
        "subscription" if element == "message" => Verdict::Runs,
        "subscription" => Verdict::Rejected(format!(
            "zeebe:subscription belongs on a bpmn:message, not on {}",
            on()
        )),
        "executionListeners"
            if element == "process"
                || IO_MAPPING_OWNERS.contains(&element)
                || element.ends_with("Gateway") =>
        {
            Verdict::Runs
        }
        "executionListeners" => Verdict::Rejected(format!(
            "zeebe:executionListeners belong on a process or a flow node, not on {}",
            on()
        )),
        "taskListeners" if element == "userTask" => Verdict::Runs,
        "taskListeners" => Verdict::Rejected(format!(
            "zeebe:taskListeners belong on a user task, not on {}",
            on()
        )),
        "userTask"
        | "assignmentDefinition"
        | "formDefinition"
        | "taskSchedule"
        | "priorityDefinition"
            if element == "userTask" =>
        {
            Verdict::Runs
        }
        // A start form; the parser accepts it on the process's none start event only.
        "formDefinition" if element == "startEvent" => Verdict::Runs,
        "userTask"
        | "assignmentDefinition"
        | "formDefinition"
        | "taskSchedule"
        | "priorityDefinition" => Verdict::Rejected(format!(
            "zeebe:{name} belongs on a user task, not on {}",
            on()
        )),
        "userTaskForm" => Verdict::Rejected(format!(
            "zeebe:userTaskForm (an embedded form) belongs on the process, not on {}",
            on()
        )),
        "calledElement" if element == "callActivity" => Verdict::Runs,
        "calledElement" => Verdict::Rejected(format!(
            "zeebe:calledElement belongs on a call activity, not on {}",
            on()
        )),
        "calledDecision" if element == "businessRuleTask" => Verdict::Runs,
        "calledDecision" => Verdict::Rejected(format!(
            "zeebe:calledDecision belongs on a business rule task, not on {}",
            on()
        )),
        "loopCharacteristics" if element == "multiInstanceLoopCharacteristics" => Verdict::Runs,
        "loopCharacteristics" => Verdict::Rejected(format!(
            "zeebe:loopCharacteristics belongs inside the bpmn:multiInstanceLoopCharacteristics \
             of a task, call activity or subprocess, not on {}",
            on()
        )),
        // Zeebe 8.8 reads links on service tasks only (a script task's are read since
        // 8.9), resolving each when it creates the job.
        "linkedResources" if element == "serviceTask" => Verdict::Runs,
        "linkedResources" => Verdict::Rejected(format!(
            "zeebe:linkedResources belongs on a service task (Zeebe 8.8 gives only a service \
             task's job the resources it links), not on {}",
            on()
        )),
        "adHoc" if element == "adHocSubProcess" => Verdict::Runs,
        "adHoc" => Verdict::Rejected(format!(
            "zeebe:adHoc belongs on an ad-hoc subprocess, not on {}",
            on()
        )),
        _ => Verdict::Rejected(format!(
            "zeebe:{name} is not an extension Rill knows; remove it (or check its spelling)"
        )),
    }
}

/// The `zeebe:` extension elements of one flow node.
#[derive(Default)]
pub(in crate::parse) struct Extensions<'a, 'input> {
    pub task_definition: Option<Node<'a, 'input>>,
    pub task_headers: Option<Node<'a, 'input>>,
    pub io_mapping: Option<Node<'a, 'input>>,
    pub script: Option<Node<'a, 'input>>,
    pub called_element: Option<Node<'a, 'input>>,
    pub called_decision: Option<Node<'a, 'input>>,
    pub execution_listeners: Option<Node<'a, 'input>>,
    pub task_listeners: Option<Node<'a, 'input>>,
    pub user_task: Option<Node<'a, 'input>>,
    pub assignment: Option<Node<'a, 'input>>,
    pub schedule: Option<Node<'a, 'input>>,
    pub priority: Option<Node<'a, 'input>>,
    pub form: Option<Node<'a, 'input>>,
    pub ad_hoc: Option<Node<'a, 'input>>,
    pub linked_resources: Option<Node<'a, 'input>>,
}

impl<'a, 'input> Builder<'_, 'a, 'input> {
    /// Reads the `zeebe:` extensions, reporting those this element cannot have (see
    /// `extensions::verdict`). Extensions of other vendors are read past.
    pub(in crate::parse) fn extensions(
        &mut self,
        id: &str,
        node: Node<'a, 'input>,
        element_name: &str,
    ) -> Extensions<'a, 'input> {
        let mut found = Extensions::default();
        // Message throw and message end events are jobs (as in Zeebe).
        let message_throw = matches!(element_name, "intermediateThrowEvent" | "endEvent")
            && bpmn_children(node).any(|n| n.tag_name().name() == "messageEventDefinition");
        let owner = Owner {
            element: element_name,
            message_throw,
        };
        for extension in self.checked_extensions(id, node, owner) {
            let name = extension.tag_name().name();
            let slot = match name {
                "taskDefinition" => &mut found.task_definition,
                "taskHeaders" => &mut found.task_headers,
                "script" => &mut found.script,
                "ioMapping" => &mut found.io_mapping,
                "calledElement" => &mut found.called_element,
                "calledDecision" => &mut found.called_decision,
                "executionListeners" => &mut found.execution_listeners,
                "taskListeners" => &mut found.task_listeners,
                "userTask" => &mut found.user_task,
                "assignmentDefinition" => &mut found.assignment,
                "taskSchedule" => &mut found.schedule,
                "priorityDefinition" => &mut found.priority,
                "formDefinition" => &mut found.form,
                "adHoc" => &mut found.ad_hoc,
                "linkedResources" => &mut found.linked_resources,
                _ => continue,
            };
            self.once(id, extension, slot);
        }
        found
    }

    /// Keeps `extension` in `slot`, or reports that it appears twice.
    pub(in crate::parse) fn once(
        &mut self,
        id: &str,
        extension: Node<'a, 'input>,
        slot: &mut Option<Node<'a, 'input>>,
    ) {
        if slot.is_some() {
            let name = extension.tag_name().name();
            self.problem(
                Some(id),
                extension,
                format!("zeebe:{name} appears more than once; merge them into one"),
            );
        } else {
            *slot = Some(extension);
        }
    }

    /// The `zeebe:` extension elements of `node` that Rill runs; those it rejects are
    /// reported, metadata and other vendors' extensions are read past.
    pub(in crate::parse) fn checked_extensions(
        &mut self,
        id: &str,
        node: Node<'a, 'input>,
        owner: Owner<'_>,
    ) -> Vec<Node<'a, 'input>> {
        let mut runs = Vec::new();
        let containers = bpmn_children(node).filter(|n| n.tag_name().name() == "extensionElements");
        for container in containers {
            for extension in container.children().filter(|n| n.is_element()) {
                if extension.tag_name().namespace() != Some(ZEEBE_NS) {
                    continue;
                }
                match verdict(extension.tag_name().name(), owner) {
                    Verdict::Runs => runs.push(extension),
                    Verdict::Metadata => {}
                    Verdict::Rejected(reason) => self.problem(Some(id), extension, reason),
                }
            }
        }
        runs
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn on(element: &str) -> Owner<'_> {
        Owner {
            element,
            message_throw: false,
        }
    }

    #[test]
    fn unknown_extensions_are_rejected_and_metadata_is_kept() {
        assert_eq!(verdict("properties", on("sequenceFlow")), Verdict::Metadata);
        assert_eq!(verdict("versionTag", on("process")), Verdict::Runs);
        assert_eq!(verdict("calledElement", on("callActivity")), Verdict::Runs);
        assert!(matches!(
            verdict("versionTag", on("serviceTask")),
            Verdict::Rejected(reason) if reason.contains("belongs on the process")
        ));
        assert!(matches!(
            verdict("frobnicate", on("serviceTask")),
            Verdict::Rejected(reason) if reason.contains("not an extension Rill knows")
        ));
        let message_end = Owner {
            element: "endEvent",
            message_throw: true,
        };
        assert_eq!(verdict("taskDefinition", message_end), Verdict::Runs);
        assert!(matches!(
            verdict("taskDefinition", on("endEvent")),
            Verdict::Rejected(_)
        ));
    }
}
