//! `bpmn:scriptTask`: `zeebe:script` (a FEEL expression the engine evaluates) or
//! `zeebe:taskDefinition` (a job), exactly one of them.

use roxmltree::Node;

use super::{ElementParser, FlowNode};
use crate::model::{ElementKind, JobDefinition, ScriptDefinition, ValueOrExpr};
use crate::parse::extensions::Extensions;
use crate::parse::jobs::DEFAULT_RETRIES;
use crate::parse::process::Builder;
use crate::parse::values;

pub(super) struct ScriptTask;

impl ElementParser for ScriptTask {
    fn parse<'a, 'input>(
        &self,
        b: &mut Builder<'_, 'a, 'input>,
        at: &FlowNode<'a, 'input>,
    ) -> ElementKind {
        b.script_task(at.id, at.node, &at.extensions)
    }

    fn is_activity(&self) -> bool {
        true
    }
}

impl<'a, 'input> Builder<'_, 'a, 'input> {
    /// A script task: `zeebe:script` (a FEEL expression the engine evaluates into a
    /// result variable) or `zeebe:taskDefinition` (a job), exactly one of them.
    fn script_task(
        &mut self,
        id: &str,
        node: Node<'a, 'input>,
        extensions: &Extensions<'a, 'input>,
    ) -> ElementKind {
        let placeholder = || {
            ElementKind::ScriptTask(ScriptDefinition::Job(JobDefinition {
                job_type: ValueOrExpr::Static(String::new()),
                retries: ValueOrExpr::Static(DEFAULT_RETRIES),
                headers: Vec::new(),
                linked_resources: Vec::new(),
            }))
        };
        let script = match (extensions.script, extensions.task_definition) {
            (None, None) => {
                self.problem(
                    Some(id),
                    node,
                    "a script task needs zeebe:script (a FEEL expression and a result variable) \
                     or zeebe:taskDefinition (a job type for a worker)"
                        .to_owned(),
                );
                return placeholder();
            }
            (Some(_), Some(definition)) => {
                self.problem(
                    Some(id),
                    definition,
                    "a script task has both zeebe:script and zeebe:taskDefinition; keep one (an \
                     expression the engine evaluates, or a job for a worker)"
                        .to_owned(),
                );
                return placeholder();
            }
            (None, Some(_)) => {
                let job = self.job(id, node, extensions, None);
                return ElementKind::ScriptTask(ScriptDefinition::Job(job));
            }
            (Some(script), None) => script,
        };
        if let Some(headers) = extensions.task_headers {
            self.problem(
                Some(id),
                headers,
                "zeebe:taskHeaders only apply to a job; a script task with zeebe:script has no \
                 job, remove the headers"
                    .to_owned(),
            );
        }
        let expression = match script.attribute("expression").map(str::trim) {
            None | Some("") => Err(
                "zeebe:script has no expression; write the FEEL expression to evaluate (e.g. \
                 '=a + b')"
                    .to_owned(),
            ),
            Some(raw) => match raw.strip_prefix('=') {
                Some(source) => values::expression("script expression", source),
                None => Err(format!(
                    "the script expression '{raw}' must be a FEEL expression starting with '=' \
                     (e.g. '={raw}')"
                )),
            },
        };
        let result_variable = match script.attribute("resultVariable").map(str::trim) {
            Some(name) if !name.is_empty() => Ok(name.to_owned()),
            _ => Err(
                "zeebe:script has no result variable; name the variable that receives the \
                      expression's result"
                    .to_owned(),
            ),
        };
        match (expression, result_variable) {
            (Ok(expression), Ok(result_variable)) => {
                ElementKind::ScriptTask(ScriptDefinition::Expression {
                    expression,
                    result_variable,
                })
            }
            (expression, result_variable) => {
                for message in [expression.err(), result_variable.err()]
                    .into_iter()
                    .flatten()
                {
                    self.problem(Some(id), script, message);
                }
                placeholder()
            }
        }
    }
}
