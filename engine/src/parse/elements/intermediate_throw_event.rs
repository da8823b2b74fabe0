//! `bpmn:intermediateThrowEvent`: none, link, message (a job, as in Zeebe), escalation,
//! signal and compensation throw events; and, in the second pass, each link throw
//! event's catch event.

use roxmltree::Node;

use super::{ESCALATION_END_LISTENERS, ElementParser, FlowNode};
use crate::model::{ElementIdx, ElementKind, ProcessModel, ThrowEventDefinition};
use crate::parse::events::CodeKind;
use crate::parse::extensions::Extensions;
use crate::parse::process::Builder;

pub(super) struct IntermediateThrowEvent;

impl ElementParser for IntermediateThrowEvent {
    fn parse<'a, 'input>(
        &self,
        b: &mut Builder<'_, 'a, 'input>,
        at: &FlowNode<'a, 'input>,
    ) -> ElementKind {
        b.intermediate_throw_event(at.idx, at.id, at.node, &at.extensions)
    }

    fn inputs_refused(&self, kind: &ElementKind) -> Option<&'static str> {
        match kind {
            ElementKind::IntermediateThrowEvent(
                ThrowEventDefinition::None
                | ThrowEventDefinition::Link { .. }
                | ThrowEventDefinition::Escalation { .. },
            ) => Some(
                "a none, link or escalation intermediate throw event cannot have input \
                 mappings, nothing in it would read them; use output mappings",
            ),
            ElementKind::IntermediateThrowEvent(ThrowEventDefinition::Compensation { .. }) => Some(
                "a compensation intermediate throw event cannot have input mappings, \
                     nothing in it would read them; use output mappings",
            ),
            _ => None,
        }
    }

    fn listeners_refused(
        &self,
        kind: &ElementKind,
    ) -> (Option<&'static str>, Option<&'static str>) {
        match kind {
            ElementKind::IntermediateThrowEvent(ThrowEventDefinition::Escalation { .. }) => {
                (None, Some(ESCALATION_END_LISTENERS))
            }
            _ => (None, None),
        }
    }
}

impl<'a, 'input> Builder<'_, 'a, 'input> {
    fn intermediate_throw_event(
        &mut self,
        idx: ElementIdx,
        id: &str,
        node: Node<'a, 'input>,
        extensions: &Extensions<'a, 'input>,
    ) -> ElementKind {
        let Some(definition) = self.event_definition(id, node) else {
            return ElementKind::IntermediateThrowEvent(ThrowEventDefinition::None);
        };
        let thrown = match definition.tag_name().name() {
            "linkEventDefinition" => {
                let name = self.link_name(id, definition);
                self.link_throws.push((idx, name.clone()));
                ThrowEventDefinition::Link {
                    name,
                    catch_event: idx,
                }
            }
            "messageEventDefinition" => {
                let missing = "a message intermediate throw event needs a job type; add \
                               zeebe:taskDefinition with a type (as in Zeebe, a message throw \
                               event is a job for a worker that sends the message)";
                ThrowEventDefinition::Message(self.job(id, node, extensions, Some(missing)))
            }
            "escalationEventDefinition" => ThrowEventDefinition::Escalation {
                escalation_code: self.thrown_code(
                    id,
                    definition,
                    CodeKind::Escalation,
                    "intermediate throw event",
                ),
            },
            "signalEventDefinition" => ThrowEventDefinition::Signal(self.signal(id, definition)),
            "compensateEventDefinition" => {
                self.check_wait_for_completion(id, definition);
                // Its activityRef is resolved once every element is known.
                self.compensation_throws.push((idx, definition));
                ThrowEventDefinition::Compensation { activity: None }
            }
            other => {
                self.problem(
                    Some(id),
                    definition,
                    format!(
                        "an intermediate throw event with a {other} is not supported; Rill runs \
                         none, link, message, signal, escalation and compensation intermediate \
                         throw events"
                    ),
                );
                ThrowEventDefinition::None
            }
        };
        ElementKind::IntermediateThrowEvent(thrown)
    }
}

/// Pairs each link throw event with the link catch event of the same name in its own
/// scope. A scope's catch events need distinct names; a throw needs a catch.
pub(in crate::parse) fn link_link_events(b: &mut Builder<'_, '_, '_>) {
    let catches = std::mem::take(&mut b.link_catches);
    let throws = std::mem::take(&mut b.link_throws);
    // (scope, name) -> catch event; a BTreeMap keeps the problems in a fixed order.
    let mut by_name: std::collections::BTreeMap<(ElementIdx, &str), ElementIdx> =
        std::collections::BTreeMap::new();
    for (catch, name) in &catches {
        if name.is_empty() {
            continue; // reported already
        }
        let scope = b.elements[catch.0 as usize]
            .flow_scope
            .unwrap_or(ProcessModel::ROOT);
        if let Some(first) = by_name.get(&(scope, name.as_str())).copied() {
            let first_id = b.elements[first.0 as usize].id.clone();
            let id = b.elements[catch.0 as usize].id.clone();
            let scope_id = b.elements[scope.0 as usize].id.clone();
            b.problem(
                Some(&id),
                b.nodes[catch.0 as usize],
                format!(
                    "the link name '{name}' is already used by link catch event '{first_id}' in \
                     '{scope_id}'; each link catch event of a scope needs its own name"
                ),
            );
            continue;
        }
        by_name.insert((scope, name.as_str()), *catch);
    }
    for (throw, name) in &throws {
        if name.is_empty() {
            continue;
        }
        let scope = b.elements[throw.0 as usize]
            .flow_scope
            .unwrap_or(ProcessModel::ROOT);
        let Some(catch) = by_name.get(&(scope, name.as_str())).copied() else {
            let id = b.elements[throw.0 as usize].id.clone();
            let scope_id = b.elements[scope.0 as usize].id.clone();
            b.problem(
                Some(&id),
                b.nodes[throw.0 as usize],
                format!(
                    "no link catch event named '{name}' in '{scope_id}'; a link throw event \
                     continues at the link catch event with its name in its own process or \
                     subprocess"
                ),
            );
            continue;
        };
        if let ElementKind::IntermediateThrowEvent(ThrowEventDefinition::Link {
            catch_event, ..
        }) = &mut b.elements[throw.0 as usize].kind
        {
            *catch_event = catch;
        }
    }
}
