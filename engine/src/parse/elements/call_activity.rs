//! `bpmn:callActivity`: `zeebe:calledElement` with the called process id, the binding
//! and the two propagation flags.

use roxmltree::Node;

use super::{ElementParser, FlowNode};
use crate::model::{CalledBinding, CalledElement, ElementKind, ValueOrExpr};
use crate::parse::extensions::Extensions;
use crate::parse::process::Builder;
use crate::parse::values;

pub(super) struct CallActivity;

impl ElementParser for CallActivity {
    fn parse<'a, 'input>(
        &self,
        b: &mut Builder<'_, 'a, 'input>,
        at: &FlowNode<'a, 'input>,
    ) -> ElementKind {
        b.call_activity(at.id, at.node, &at.extensions)
    }

    fn is_activity(&self) -> bool {
        true
    }
}

impl<'a, 'input> Builder<'_, 'a, 'input> {
    /// A call activity: `zeebe:calledElement` with the called process id, the binding
    /// and the two propagation flags.
    fn call_activity(
        &mut self,
        id: &str,
        node: Node<'a, 'input>,
        extensions: &Extensions<'a, 'input>,
    ) -> ElementKind {
        let mut called = CalledElement {
            process_id: ValueOrExpr::Static(String::new()),
            binding: CalledBinding::Latest,
            propagate_all_child_variables: true,
            propagate_all_parent_variables: true,
        };
        let Some(definition) = extensions.called_element else {
            self.problem(
                Some(id),
                node,
                "a call activity needs the process to call; add zeebe:calledElement with a \
                 processId"
                    .to_owned(),
            );
            return ElementKind::CallActivity(called);
        };
        match definition
            .attribute("processId")
            .filter(|p| !p.trim().is_empty())
        {
            None => self.problem(
                Some(id),
                definition,
                "zeebe:calledElement has no processId; set the BPMN process id to call".to_owned(),
            ),
            Some(raw) => match values::string_or_expr("called process id", raw.trim()) {
                Ok(process_id) => called.process_id = process_id,
                Err(message) => self.problem(Some(id), definition, message),
            },
        }
        for (attribute, slot) in [
            (
                "propagateAllChildVariables",
                &mut called.propagate_all_child_variables,
            ),
            (
                "propagateAllParentVariables",
                &mut called.propagate_all_parent_variables,
            ),
        ] {
            match definition.attribute(attribute).map(str::trim) {
                None | Some("true") => {}
                Some("false") => *slot = false,
                Some(other) => self.problem(
                    Some(id),
                    definition,
                    format!("{attribute} is '{other}'; it must be true or false"),
                ),
            }
        }
        let version_tag = definition
            .attribute("versionTag")
            .map(str::trim)
            .filter(|t| !t.is_empty());
        match definition.attribute("bindingType").map(str::trim) {
            None | Some("latest") => {}
            Some("deployment") => called.binding = CalledBinding::Deployment,
            Some("versionTag") => match version_tag {
                Some(tag) => called.binding = CalledBinding::VersionTag(tag.to_owned()),
                None => self.problem(
                    Some(id),
                    definition,
                    "bindingType is versionTag but zeebe:calledElement has no versionTag; set \
                     the version tag of the process to call"
                        .to_owned(),
                ),
            },
            Some(other) => self.problem(
                Some(id),
                definition,
                format!("bindingType '{other}' is not known; use latest, deployment or versionTag"),
            ),
        }
        ElementKind::CallActivity(called)
    }
}
