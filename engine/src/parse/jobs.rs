//! The job of a job-based element: `zeebe:taskDefinition` and `zeebe:taskHeaders`.

use roxmltree::Node;

use super::document::ZEEBE_NS;
use super::extensions::Extensions;
use super::process::Builder;
use super::values;
use crate::model::{JobDefinition, ValueOrExpr};

/// Default job retries when `zeebe:taskDefinition` has none (as in Zeebe).
pub(in crate::parse) const DEFAULT_RETRIES: i32 = 3;

impl<'a, 'input> Builder<'_, 'a, 'input> {
    /// The job of a job-based element: `zeebe:taskDefinition` and `zeebe:taskHeaders`.
    /// Without a task definition, `missing` is reported (when given).
    pub(in crate::parse) fn job(
        &mut self,
        id: &str,
        node: Node<'a, 'input>,
        extensions: &Extensions<'a, 'input>,
        missing: Option<&str>,
    ) -> JobDefinition {
        let mut job = JobDefinition {
            job_type: ValueOrExpr::Static(String::new()),
            retries: ValueOrExpr::Static(DEFAULT_RETRIES),
            headers: Vec::new(),
            linked_resources: Vec::new(),
        };
        match extensions.task_definition {
            None => {
                if let Some(message) = missing {
                    self.problem(Some(id), node, message.to_owned());
                }
            }
            Some(definition) => {
                match definition
                    .attribute("type")
                    .filter(|t| !t.trim().is_empty())
                {
                    None => self.problem(
                        Some(id),
                        definition,
                        "zeebe:taskDefinition has no type; set the job type that workers \
                         subscribe to"
                            .to_owned(),
                    ),
                    Some(raw) => match values::string_or_expr("job type", raw) {
                        Ok(job_type) => job.job_type = job_type,
                        Err(message) => self.problem(Some(id), definition, message),
                    },
                }
                if let Some(raw) = definition
                    .attribute("retries")
                    .filter(|r| !r.trim().is_empty())
                {
                    match values::retries(raw) {
                        Ok(retries) => job.retries = retries,
                        Err(message) => self.problem(Some(id), definition, message),
                    }
                }
            }
        }
        if let Some(headers) = extensions.task_headers {
            job.headers = self.task_headers(id, headers);
        }
        job
    }

    /// The `zeebe:header`s of a `zeebe:taskHeaders`, in document order; a header
    /// without a key or with a key already given is reported.
    pub(in crate::parse) fn task_headers(
        &mut self,
        id: &str,
        headers: Node<'a, 'input>,
    ) -> Vec<(String, String)> {
        let mut read: Vec<(String, String)> = Vec::new();
        for header in headers.children().filter(|n| n.is_element()) {
            if header.tag_name().namespace() != Some(ZEEBE_NS)
                || header.tag_name().name() != "header"
            {
                continue;
            }
            let Some(key) = header.attribute("key").filter(|k| !k.is_empty()) else {
                self.problem(Some(id), header, "a task header has no key".to_owned());
                continue;
            };
            if read.iter().any(|(existing, _)| existing == key) {
                self.problem(
                    Some(id),
                    header,
                    format!("the task header '{key}' is defined twice"),
                );
                continue;
            }
            let value = header.attribute("value").unwrap_or("");
            read.push((key.to_owned(), value.to_owned()));
        }
        read
    }
}
