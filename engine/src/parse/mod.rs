//! BPMN 2.0 XML (as Camunda Modeler writes it) to executable [`ProcessModel`]s.
//!
//! ```text
//! bytes ─► limits, UTF-8 ─► roxmltree (no DTD) ─► document: root, ids, messages, errors
//!        ─► per executable process: collect elements and flows (scope by scope)
//!        ─► link: resolve references, check the graph ─► ProcessModel
//!        ─► all processes of the resource: no straight-through processing loop (loops.rs)
//! ```
//!
//! Every problem found is collected; a resource yields models only when there are
//! none. Elements are matched by namespace URI, never by prefix. What a returned model
//! guarantees is listed in [`crate::model`]; decisions are in
//! `docs/decisions/bpmn-parsing.md`.

mod checksum;
mod compensation;
mod document;
mod elements;
mod error;
mod events;
mod extensions;
mod jobs;
mod link;
mod listeners;
mod loops;
mod mappings;
mod multi_instance;
mod process;
mod values;

use std::collections::BTreeMap;

pub use checksum::Checksum;
pub(crate) use elements::user_task::headers as user_task_headers;
pub use error::{DeployError, Problem};

use crate::model::ProcessModel;

/// Largest resource accepted (Zeebe's default maximum message size).
pub const MAX_RESOURCE_BYTES: usize = 4 * 1024 * 1024;
/// Most XML nodes (elements, attributes are not counted, text) in one resource.
pub const MAX_XML_NODES: u32 = 250_000;
/// Deepest nesting of subprocesses.
pub const MAX_SCOPE_DEPTH: usize = 32;
/// Most problems kept per deployment; the rest are counted.
pub const MAX_PROBLEMS: usize = 100;

/// The executable processes of one BPMN resource, in document order.
pub fn parse_bpmn(resource_name: &str, xml: &[u8]) -> Result<Vec<ProcessModel>, DeployError> {
    let mut problems = error::Problems::new(resource_name);
    let models = document::parse(xml, &mut problems);
    problems.into_result(models)
}

/// One parsed resource of a deployment.
#[derive(Debug)]
pub struct ParsedResource {
    pub resource_name: String,
    pub checksum: Checksum,
    /// The resource's executable processes, in document order.
    pub processes: Vec<ProcessModel>,
}

/// Parses every resource of a deployment and reports the problems of all of them at
/// once. Also rejects a deployment that defines the same process id twice (in one
/// file or in two), as Zeebe does.
pub fn parse_deployment<'a>(
    resources: impl IntoIterator<Item = (&'a str, &'a [u8])>,
) -> Result<Vec<ParsedResource>, DeployError> {
    let mut parsed = Vec::new();
    let mut all_problems = DeployError::default();
    for (resource_name, xml) in resources {
        match parse_bpmn(resource_name, xml) {
            Ok(processes) => parsed.push(ParsedResource {
                resource_name: resource_name.to_owned(),
                checksum: Checksum::of(xml),
                processes,
            }),
            Err(error) => all_problems.absorb(error),
        }
    }
    if parsed.is_empty() && all_problems.problems.is_empty() {
        all_problems.push(Problem {
            resource_name: String::new(),
            element_id: None,
            line: None,
            message: "the deployment contains no resource".to_owned(),
        });
    }

    // Process ids seen, with the resource that first defined each.
    let mut seen: BTreeMap<&str, &str> = BTreeMap::new();
    let mut duplicates = Vec::new();
    for resource in &parsed {
        for process in &resource.processes {
            let id = process.bpmn_process_id.as_str();
            if let Some(first) = seen.insert(id, &resource.resource_name) {
                duplicates.push(Problem {
                    resource_name: resource.resource_name.clone(),
                    element_id: Some(id.to_owned()),
                    line: None,
                    message: format!(
                        "process id '{id}' is defined more than once in this deployment \
                         (also in '{first}'); give each process its own id"
                    ),
                });
            }
        }
    }
    for problem in duplicates {
        all_problems.push(problem);
    }
    if all_problems.problems.is_empty() {
        Ok(parsed)
    } else {
        Err(all_problems)
    }
}
