//! Compensation in the second pass: each compensation boundary event finds its handler
//! through the `bpmn:association` Modeler draws from the event to the handler, and each
//! compensation throw or end event resolves its `activityRef`. The rules are Zeebe 8.8's
//! (its BPMN model validators), each reported with the element id.

use roxmltree::Node;

use super::document::{BPMN_NS, article};
use super::process::Builder;
use crate::model::{ElementIdx, ElementKind, ThrowEventDefinition, TriggerDefinition};

/// Links the compensation elements of one process; returns whether it has a
/// compensation boundary event.
pub(super) fn link_compensation(b: &mut Builder<'_, '_, '_>) -> bool {
    let boundaries = std::mem::take(&mut b.compensation_boundaries);
    let associations = associations(b.nodes[0]);
    let mut linked = false;
    for boundary in boundaries {
        if let Some(handler) = find_handler(b, boundary, &associations) {
            if let ElementKind::BoundaryEvent { definition, .. } =
                &mut b.elements[boundary.0 as usize].kind
            {
                *definition = TriggerDefinition::Compensation { handler };
            }
            linked = true;
        }
    }
    check_handlers(b);
    let throws = std::mem::take(&mut b.compensation_throws);
    for (thrower, definition) in throws {
        link_activity_ref(b, thrower, definition);
    }
    linked
}

/// `(sourceRef, targetRef)` of every association in the process, nested scopes too.
fn associations(process: Node<'_, '_>) -> Vec<(String, String)> {
    process
        .descendants()
        .filter(|n| {
            n.is_element()
                && n.tag_name().namespace() == Some(BPMN_NS)
                && n.tag_name().name() == "association"
        })
        .filter_map(|n| {
            let source = n.attribute("sourceRef")?.trim().to_owned();
            let target = n.attribute("targetRef")?.trim().to_owned();
            Some((source, target))
        })
        .collect()
}

/// The handler a compensation boundary event is associated with, after checking the
/// boundary event and its host.
fn find_handler(
    b: &mut Builder<'_, '_, '_>,
    boundary: ElementIdx,
    associations: &[(String, String)],
) -> Option<ElementIdx> {
    let element = &b.elements[boundary.0 as usize];
    let id = element.id.clone();
    let node = b.nodes[boundary.0 as usize];
    let ElementKind::BoundaryEvent { attached_to, .. } = element.kind else {
        return None;
    };
    let scope = element.flow_scope;
    if !element.outgoing.is_empty() {
        b.problem(
            Some(&id),
            node,
            "a compensation boundary event cannot have an outgoing sequence flow; connect it to \
             its compensation handler with an association"
                .to_owned(),
        );
    }
    if attached_to != boundary {
        let host = &b.elements[attached_to.0 as usize];
        let first = host
            .boundary_events
            .iter()
            .copied()
            .find(|other| b.compensation_boundary_seen(*other));
        let earlier = first.filter(|first| *first != boundary);
        let host_is_handler = host.for_compensation;
        let host_id = host.id.clone();
        if let Some(earlier) = earlier {
            let earlier_id = b.elements[earlier.0 as usize].id.clone();
            b.problem(
                Some(&id),
                node,
                format!(
                    "'{host_id}' already has the compensation boundary event '{earlier_id}'; an \
                     activity has at most one"
                ),
            );
        }
        if host_is_handler {
            b.problem(
                Some(&id),
                node,
                format!("'{host_id}' is a compensation handler, which cannot have boundary events"),
            );
        }
    }
    let targets: Vec<&str> = associations
        .iter()
        .filter(|(source, _)| *source == id)
        .map(|(_, target)| target.as_str())
        .collect();
    let Some(target) = targets.first().copied() else {
        b.problem(
            Some(&id),
            node,
            "a compensation boundary event needs an association to its compensation handler (an \
             activity with isForCompensation=\"true\"); draw one from the event to the handler"
                .to_owned(),
        );
        return None;
    };
    if targets.len() > 1 {
        b.problem(
            Some(&id),
            node,
            "a compensation boundary event is associated with several activities; keep one \
             compensation handler"
                .to_owned(),
        );
    }
    if b.unsupported.contains(target) {
        return None;
    }
    let Some(&handler) = b.element_index.get(target) else {
        b.problem(
            Some(&id),
            node,
            format!("the compensation handler '{target}' is not an element of this process"),
        );
        return None;
    };
    let handler_element = &b.elements[handler.0 as usize];
    if !handler_element.for_compensation {
        let kind = handler_element.kind.bpmn_name();
        b.problem(
            Some(&id),
            node,
            format!(
                "the compensation boundary event is associated with '{target}', {} {kind} that \
                 is not a compensation handler; set isForCompensation=\"true\" on it",
                article(kind)
            ),
        );
        return None;
    }
    if handler_element.flow_scope != scope {
        b.problem(
            Some(&id),
            node,
            format!(
                "the compensation handler '{target}' is in another scope; place it in the same \
                 process or subprocess as the activity it compensates"
            ),
        );
        return None;
    }
    Some(handler)
}

impl Builder<'_, '_, '_> {
    fn compensation_boundary_seen(&self, idx: ElementIdx) -> bool {
        matches!(
            self.elements[idx.0 as usize].kind,
            ElementKind::BoundaryEvent {
                definition: TriggerDefinition::Compensation { .. },
                ..
            }
        )
    }
}

/// A compensation handler runs only when compensation calls it: no flow enters or
/// leaves it and nothing is attached to it.
fn check_handlers(b: &mut Builder<'_, '_, '_>) {
    for idx in 0..b.elements.len() {
        let element = &b.elements[idx];
        if !element.for_compensation {
            continue;
        }
        let id = element.id.clone();
        let node = b.nodes[idx];
        let rules = [
            (
                !element.incoming.is_empty(),
                "a compensation handler cannot have an incoming sequence flow; it runs when its \
                 activity is compensated",
            ),
            (
                !element.outgoing.is_empty(),
                "a compensation handler cannot have an outgoing sequence flow",
            ),
            (
                !element.boundary_events.is_empty(),
                "a compensation handler cannot have boundary events",
            ),
        ];
        for (broken, message) in rules {
            if broken {
                b.problem(Some(&id), node, message.to_owned());
            }
        }
    }
}

/// Resolves the `activityRef` of a compensation throw or end event: an activity with a
/// compensation boundary event, or a subprocess, in the thrower's scope (for a thrower
/// in an event subprocess, in the scope the event subprocess belongs to).
fn link_activity_ref(b: &mut Builder<'_, '_, '_>, thrower: ElementIdx, definition: Node<'_, '_>) {
    let Some(reference) = definition
        .attribute("activityRef")
        .map(str::trim)
        .filter(|r| !r.is_empty())
    else {
        return;
    };
    let id = b.elements[thrower.0 as usize].id.clone();
    let Some(&activity) = b.element_index.get(reference) else {
        b.problem(
            Some(&id),
            definition,
            format!("the activity to compensate '{reference}' (activityRef) does not exist"),
        );
        return;
    };
    let target = &b.elements[activity.0 as usize];
    let compensable = b.elements[activity.0 as usize]
        .boundary_events
        .iter()
        .any(|boundary| b.compensation_boundary_seen(*boundary))
        || matches!(
            target.kind,
            ElementKind::SubProcess {
                triggered_by_event: false,
                ..
            } | ElementKind::AdHocSubProcess(_)
        );
    if !compensable {
        b.problem(
            Some(&id),
            definition,
            format!(
                "the activity to compensate '{reference}' (activityRef) must have a \
                 compensation boundary event or be a subprocess"
            ),
        );
        return;
    }
    let thrower_scope = b.elements[thrower.0 as usize].flow_scope;
    let outer_scope = thrower_scope.and_then(|scope| match b.elements[scope.0 as usize].kind {
        ElementKind::SubProcess {
            triggered_by_event: true,
            ..
        } => b.elements[scope.0 as usize].flow_scope,
        _ => None,
    });
    // An ad-hoc subprocess's activities sit in its inner instance: for a thrower in one
    // of its event subprocesses, that is the scope the event subprocess belongs to.
    let outer_inner = outer_scope.and_then(|scope| match &b.elements[scope.0 as usize].kind {
        ElementKind::AdHocSubProcess(definition) => Some(definition.inner_instance),
        _ => None,
    });
    let target_scope = b.elements[activity.0 as usize].flow_scope;
    let in_outer = outer_scope.is_some()
        && (target_scope == outer_scope || (outer_inner.is_some() && target_scope == outer_inner));
    if target_scope != thrower_scope && !in_outer {
        b.problem(
            Some(&id),
            definition,
            format!(
                "the activity to compensate '{reference}' (activityRef) must be in the same \
                 scope as the compensation throw event"
            ),
        );
        return;
    }
    match &mut b.elements[thrower.0 as usize].kind {
        ElementKind::EndEvent(ThrowEventDefinition::Compensation { activity: slot })
        | ElementKind::IntermediateThrowEvent(ThrowEventDefinition::Compensation {
            activity: slot,
        }) => *slot = Some(activity),
        _ => {}
    }
}
