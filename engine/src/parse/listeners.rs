//! Execution listeners (`zeebe:executionListeners`) and the job of any listener.

use roxmltree::Node;

use super::document::ZEEBE_NS;
use super::jobs::DEFAULT_RETRIES;
use super::process::Builder;
use super::values;
use crate::model::{ExecutionListeners, JobDefinition, ValueOrExpr};

impl<'a, 'input> Builder<'_, 'a, 'input> {
    /// The job of a listener (execution or task listener) of type `raw_type` declared
    /// by `node`: its type and retries, static or FEEL; a bad one is reported on `id`.
    pub(in crate::parse) fn listener_job(
        &mut self,
        id: &str,
        node: Node<'a, 'input>,
        raw_type: &str,
    ) -> JobDefinition {
        let mut job = JobDefinition {
            job_type: ValueOrExpr::Static(String::new()),
            retries: ValueOrExpr::Static(DEFAULT_RETRIES),
            headers: Vec::new(),
            linked_resources: Vec::new(),
        };
        match values::string_or_expr("listener type", raw_type) {
            Ok(job_type) => job.job_type = job_type,
            Err(message) => self.problem(Some(id), node, message),
        }
        if let Some(raw) = node.attribute("retries").filter(|r| !r.trim().is_empty()) {
            match values::retries(raw) {
                Ok(retries) => job.retries = retries,
                Err(message) => self.problem(Some(id), node, message),
            }
        }
        job
    }

    /// Reads `zeebe:executionListeners`: each `zeebe:executionListener` is a job (a
    /// `type`, static or `=`FEEL, and `retries`, default 3) run at its `eventType`
    /// (`start` or `end`). A listener of an event type the element refuses is reported
    /// with the reason, as is a second listener of one event type with the same type.
    ///
    /// A listener's own `zeebe:taskHeaders` (Camunda 8.10) are its job's headers, over
    /// the element's `element_headers`, as 8.10 documents; a listener without them has
    /// none (Zeebe 8.8). Any other child of a listener is refused.
    pub(in crate::parse) fn execution_listeners(
        &mut self,
        id: &str,
        container: Option<Node<'a, 'input>>,
        refused_start: Option<&str>,
        refused_end: Option<&str>,
        element_headers: &[(String, String)],
    ) -> ExecutionListeners {
        let mut listeners = ExecutionListeners::default();
        let Some(container) = container else {
            return listeners;
        };
        let mut seen: Vec<(&str, &str)> = Vec::new();
        for node in container.children().filter(|n| n.is_element()) {
            let name = node.tag_name().name();
            if node.tag_name().namespace() != Some(ZEEBE_NS) || name != "executionListener" {
                self.problem(
                    Some(id),
                    node,
                    format!(
                        "'{name}' is not expected in zeebe:executionListeners (only \
                         zeebe:executionListener)"
                    ),
                );
                continue;
            }
            let event = node.attribute("eventType").map(str::trim).unwrap_or("");
            let (into, refused) = match event {
                "start" => (&mut listeners.start, refused_start),
                "end" => (&mut listeners.end, refused_end),
                _ => {
                    self.problem(
                        Some(id),
                        node,
                        format!(
                            "an execution listener's eventType must be 'start' or 'end', not \
                             '{event}'"
                        ),
                    );
                    continue;
                }
            };
            if let Some(reason) = refused {
                self.problem(Some(id), node, reason.to_owned());
                continue;
            }
            let raw_type = node.attribute("type").map(str::trim).unwrap_or("");
            if raw_type.is_empty() {
                self.problem(
                    Some(id),
                    node,
                    format!(
                        "a {event} execution listener has no type; set the job type that \
                         workers subscribe to"
                    ),
                );
                continue;
            }
            if seen.contains(&(event, raw_type)) {
                self.problem(
                    Some(id),
                    node,
                    format!(
                        "two {event} execution listeners have the type '{raw_type}'; give each \
                         listener of an event type its own type"
                    ),
                );
                continue;
            }
            seen.push((event, raw_type));
            let mut job = self.listener_job(id, node, raw_type);
            if let Some(own) = self.listener_headers(id, node) {
                job.headers = element_headers.to_vec();
                for (key, value) in own {
                    match job
                        .headers
                        .iter_mut()
                        .find(|(existing, _)| *existing == key)
                    {
                        Some(header) => header.1 = value,
                        None => job.headers.push((key, value)),
                    }
                }
            }
            into.push(job);
        }
        listeners
    }

    /// The `zeebe:taskHeaders` of an execution listener, if it has them; any other
    /// child element is reported (Rill would not run it).
    fn listener_headers(
        &mut self,
        id: &str,
        listener: Node<'a, 'input>,
    ) -> Option<Vec<(String, String)>> {
        let mut found = None;
        for child in listener.children().filter(|n| n.is_element()) {
            let name = child.tag_name().name();
            if child.tag_name().namespace() != Some(ZEEBE_NS) || name != "taskHeaders" {
                self.problem(
                    Some(id),
                    child,
                    format!(
                        "'{name}' inside a zeebe:executionListener is not supported; a listener \
                         takes only zeebe:taskHeaders"
                    ),
                );
                continue;
            }
            if found.is_some() {
                self.problem(
                    Some(id),
                    child,
                    "zeebe:taskHeaders appears more than once in one execution listener; merge \
                     them into one"
                        .to_owned(),
                );
                continue;
            }
            found = Some(self.task_headers(id, child));
        }
        found
    }
}
