//! `bpmn:businessRuleTask`: `zeebe:calledDecision` (a DMN decision the engine evaluates)
//! or `zeebe:taskDefinition` (a job), exactly one of them.

use roxmltree::Node;

use super::{ElementParser, FlowNode};
use crate::model::{
    BusinessRuleDefinition, CalledBinding, ElementKind, JobDefinition, ValueOrExpr,
};
use crate::parse::extensions::Extensions;
use crate::parse::jobs::DEFAULT_RETRIES;
use crate::parse::process::Builder;
use crate::parse::values;

pub(super) struct BusinessRuleTask;

impl ElementParser for BusinessRuleTask {
    fn parse<'a, 'input>(
        &self,
        b: &mut Builder<'_, 'a, 'input>,
        at: &FlowNode<'a, 'input>,
    ) -> ElementKind {
        b.business_rule_task(at.id, at.node, &at.extensions)
    }

    fn is_activity(&self) -> bool {
        true
    }
}

impl<'a, 'input> Builder<'_, 'a, 'input> {
    /// A business rule task: `zeebe:calledDecision` (a DMN decision the engine evaluates
    /// into a result variable) or `zeebe:taskDefinition` (a job), exactly one of them.
    fn business_rule_task(
        &mut self,
        id: &str,
        node: Node<'a, 'input>,
        extensions: &Extensions<'a, 'input>,
    ) -> ElementKind {
        let placeholder = || {
            ElementKind::BusinessRuleTask(BusinessRuleDefinition::Job(JobDefinition {
                job_type: ValueOrExpr::Static(String::new()),
                retries: ValueOrExpr::Static(DEFAULT_RETRIES),
                headers: Vec::new(),
                linked_resources: Vec::new(),
            }))
        };
        let called = match (extensions.called_decision, extensions.task_definition) {
            (None, None) => {
                self.problem(
                    Some(id),
                    node,
                    "a business rule task needs zeebe:calledDecision (a DMN decision and a \
                     result variable) or zeebe:taskDefinition (a job type for a worker)"
                        .to_owned(),
                );
                return placeholder();
            }
            (Some(_), Some(definition)) => {
                self.problem(
                    Some(id),
                    definition,
                    "a business rule task has both zeebe:calledDecision and \
                     zeebe:taskDefinition; keep one (a decision the engine evaluates, or a job \
                     for a worker)"
                        .to_owned(),
                );
                return placeholder();
            }
            (None, Some(_)) => {
                let job = self.job(id, node, extensions, None);
                return ElementKind::BusinessRuleTask(BusinessRuleDefinition::Job(job));
            }
            (Some(called), None) => called,
        };
        if let Some(headers) = extensions.task_headers {
            self.problem(
                Some(id),
                headers,
                "zeebe:taskHeaders only apply to a job; a business rule task with \
                 zeebe:calledDecision has no job, remove the headers"
                    .to_owned(),
            );
        }
        let mut problems = Vec::new();
        let decision_id = match called.attribute("decisionId").map(str::trim) {
            None | Some("") => {
                problems.push(
                    "zeebe:calledDecision has no decisionId; set the id of the DMN decision to \
                     evaluate"
                        .to_owned(),
                );
                None
            }
            Some(raw) => match values::string_or_expr("called decision id", raw) {
                Ok(decision_id) => Some(decision_id),
                Err(message) => {
                    problems.push(message);
                    None
                }
            },
        };
        let result_variable = match called.attribute("resultVariable").map(str::trim) {
            Some(name) if !name.is_empty() => Some(name.to_owned()),
            _ => {
                problems.push(
                    "zeebe:calledDecision has no resultVariable; name the variable that \
                     receives the decision's output"
                        .to_owned(),
                );
                None
            }
        };
        let version_tag = called
            .attribute("versionTag")
            .map(str::trim)
            .filter(|t| !t.is_empty());
        let binding = match called.attribute("bindingType").map(str::trim) {
            None | Some("latest") => Some(CalledBinding::Latest),
            Some("deployment") => Some(CalledBinding::Deployment),
            Some("versionTag") => match version_tag {
                Some(tag) => Some(CalledBinding::VersionTag(tag.to_owned())),
                None => {
                    problems.push(
                        "zeebe:calledDecision has bindingType versionTag but no versionTag; \
                         set the version tag of the decision to evaluate"
                            .to_owned(),
                    );
                    None
                }
            },
            Some(other) => {
                problems.push(format!(
                    "zeebe:calledDecision has bindingType '{other}'; it must be latest, \
                     deployment or versionTag"
                ));
                None
            }
        };
        match (decision_id, result_variable, binding) {
            (Some(decision_id), Some(result_variable), Some(binding)) if problems.is_empty() => {
                ElementKind::BusinessRuleTask(BusinessRuleDefinition::Decision {
                    decision_id,
                    result_variable,
                    binding,
                })
            }
            _ => {
                for message in problems {
                    self.problem(Some(id), called, message);
                }
                placeholder()
            }
        }
    }
}
