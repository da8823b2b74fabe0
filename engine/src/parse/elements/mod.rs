//! One parser per element kind, mirroring `behavior/elements/`: a kind's file reads its
//! XML element into its [`ElementKind`], says which parts every flow node may have
//! (input and output mappings, execution listeners, multi-instance) the kind refuses,
//! and holds the second-pass rules that concern only its kind. [`PARSERS`] is the one
//! place that maps an XML element name to its parser; what every flow node goes through
//! is `parse/process.rs`, and what events share (messages, signals, timers, codes) is
//! `parse/events.rs`.

mod ad_hoc_sub_process;
mod boundary_event;
mod business_rule_task;
mod call_activity;
mod end_event;
mod event_based_gateway;
mod exclusive_gateway;
mod inclusive_gateway;
mod intermediate_catch_event;
mod intermediate_throw_event;
mod parallel_gateway;
mod receive_task;
mod script_task;
mod service_task;
mod start_event;
mod sub_process;
mod task;
pub(super) mod user_task;

pub(super) use ad_hoc_sub_process::check_ad_hoc;
pub(super) use event_based_gateway::check_event_gateways;
pub(super) use inclusive_gateway::link_inclusive_joins;
pub(super) use intermediate_throw_event::link_link_events;

use roxmltree::Node;

use super::extensions::Extensions;
use super::process::Builder;
use crate::model::{ElementIdx, ElementKind};

/// A flow node as the first pass reads it.
pub(super) struct FlowNode<'a, 'input> {
    /// The index the element gets.
    pub idx: ElementIdx,
    pub id: &'a str,
    pub node: Node<'a, 'input>,
    /// The element's flow scope.
    pub scope: ElementIdx,
    /// Its scope is an event subprocess.
    pub in_event_subprocess: bool,
    /// The event definition of a start event that has one (set by its `admit`).
    pub start_definition: Option<Node<'a, 'input>>,
    /// Its `zeebe:` extensions that run (read before `parse`).
    pub extensions: Extensions<'a, 'input>,
}

/// What one element kind's parser does (as `ElementBehavior` is what its behaviour
/// does). Implemented by a unit struct per kind; [`parser`] picks it.
pub(super) trait ElementParser: Sync {
    /// Whether the element is read at all: a kind may refuse it before anything else is
    /// read, reporting why (a start event with a definition it cannot have).
    fn admit<'a, 'input>(
        &self,
        _b: &mut Builder<'_, 'a, 'input>,
        _at: &mut FlowNode<'a, 'input>,
    ) -> bool {
        true
    }

    /// Reads the element's definition into its kind. A problem is reported and the
    /// kind gets a placeholder: the element is always built.
    fn parse<'a, 'input>(
        &self,
        b: &mut Builder<'_, 'a, 'input>,
        at: &FlowNode<'a, 'input>,
    ) -> ElementKind;

    /// Reads what the element contains once it is added (a subprocess's flow nodes).
    fn read_content<'a, 'input>(
        &self,
        _b: &mut Builder<'_, 'a, 'input>,
        _at: &FlowNode<'a, 'input>,
        _depth: usize,
    ) {
    }

    /// An activity: it can be multi-instance and a compensation handler.
    fn is_activity(&self) -> bool {
        false
    }

    /// Why an element of this kind cannot have input mappings (nothing would read
    /// them), or `None` when it can.
    fn inputs_refused(&self, _kind: &ElementKind) -> Option<&'static str> {
        None
    }

    /// Why an element of this kind cannot have output mappings, or `None`.
    fn outputs_refused(&self, _kind: &ElementKind) -> Option<&'static str> {
        None
    }

    /// Why an element of this kind cannot have start and end execution listeners (as
    /// Zeebe refuses them), or `None` for each it can have.
    fn listeners_refused(
        &self,
        _kind: &ElementKind,
    ) -> (Option<&'static str>, Option<&'static str>) {
        (None, None)
    }
}

/// Every flow node Rill runs, by XML element name, in the order messages list them.
const PARSERS: &[(&str, &dyn ElementParser)] = &[
    ("startEvent", &start_event::StartEvent),
    ("endEvent", &end_event::EndEvent),
    ("task", &task::Task),
    ("manualTask", &task::ManualTask),
    ("serviceTask", &service_task::ServiceTask),
    ("scriptTask", &script_task::ScriptTask),
    ("businessRuleTask", &business_rule_task::BusinessRuleTask),
    ("sendTask", &service_task::SendTask),
    ("receiveTask", &receive_task::ReceiveTask),
    ("userTask", &user_task::UserTask),
    ("exclusiveGateway", &exclusive_gateway::ExclusiveGateway),
    ("parallelGateway", &parallel_gateway::ParallelGateway),
    ("inclusiveGateway", &inclusive_gateway::InclusiveGateway),
    ("eventBasedGateway", &event_based_gateway::EventBasedGateway),
    (
        "intermediateCatchEvent",
        &intermediate_catch_event::IntermediateCatchEvent,
    ),
    (
        "intermediateThrowEvent",
        &intermediate_throw_event::IntermediateThrowEvent,
    ),
    ("boundaryEvent", &boundary_event::BoundaryEvent),
    ("subProcess", &sub_process::SubProcess),
    ("adHocSubProcess", &ad_hoc_sub_process::AdHocSubProcess),
    ("callActivity", &call_activity::CallActivity),
];

/// The parser of the flow node named `name` in XML, if Rill runs it.
pub(super) fn parser(name: &str) -> Option<&'static dyn ElementParser> {
    PARSERS
        .iter()
        .find(|(element, _)| *element == name)
        .map(|(_, parser)| *parser)
}

/// The flow nodes Rill runs, for messages: `startEvent, endEvent, ...`.
pub(super) fn supported() -> String {
    let names: Vec<&str> = PARSERS.iter().map(|(element, _)| *element).collect();
    names.join(", ")
}

/// Why a gateway refuses end listeners (Zeebe's rule).
const GATEWAY_END_LISTENERS: &str = "a gateway cannot have end listeners in \
                                     zeebe:executionListeners; use start listeners on the \
                                     element after it";

/// Why an escalation throw or end event refuses end listeners. Zeebe skips them when an
/// interrupting catch event takes the escalation; Rill refuses them rather than run them
/// only sometimes.
const ESCALATION_END_LISTENERS: &str = "an escalation throw or end event cannot have end \
                                        listeners in zeebe:executionListeners (an \
                                        interrupting catch event would skip them); put them \
                                        on the element that catches the escalation";
