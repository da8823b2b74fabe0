//! The benchmark processes and the variables each instance starts with.

use clap::ValueEnum;
use serde::Serialize;

#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum ProcessKind {
    /// start → REST call 1 → REST call 2 → end (the published comparison).
    TwoRestCalls,
    /// 8 service tasks, an exclusive and a parallel gateway; 7 tasks run per instance.
    EightTasks,
}

impl ProcessKind {
    pub fn id(self) -> &'static str {
        match self {
            ProcessKind::TwoRestCalls => "two-rest-calls",
            ProcessKind::EightTasks => "eight-tasks",
        }
    }

    pub fn file_name(self) -> &'static str {
        match self {
            ProcessKind::TwoRestCalls => "two-rest-calls.bpmn",
            ProcessKind::EightTasks => "eight-tasks.bpmn",
        }
    }

    pub fn bpmn(self) -> &'static [u8] {
        match self {
            ProcessKind::TwoRestCalls => include_bytes!("../processes/two-rest-calls.bpmn"),
            ProcessKind::EightTasks => include_bytes!("../processes/eight-tasks.bpmn"),
        }
    }

    /// Every service task has this job type.
    pub fn job_type(self) -> &'static str {
        "restCall"
    }

    /// The task every instance ends with. Follow-up steps run in-line within the
    /// command that completes a job (docs/decisions/engine-semantics.md), so when the
    /// completion of this task's job is acknowledged, the instance has completed.
    pub fn last_element(self) -> &'static str {
        match self {
            ProcessKind::TwoRestCalls => "Rest2",
            ProcessKind::EightTasks => "Confirm",
        }
    }

    /// Jobs per instance: both tasks; or Validate, one review, the two branches of two
    /// tasks each, and Confirm.
    pub fn tasks_per_instance(self) -> u64 {
        match self {
            ProcessKind::TwoRestCalls => 2,
            ProcessKind::EightTasks => 7,
        }
    }
}

/// Builds the JSON body of `POST /v2/process-instances`.
pub struct Starter {
    process_id: &'static str,
    eight_tasks: bool,
    /// A JSON object's members (without braces), about the requested size, or empty.
    payload: String,
}

impl Starter {
    pub fn new(kind: ProcessKind, payload_kb: usize) -> Starter {
        Starter {
            process_id: kind.id(),
            eight_tasks: kind == ProcessKind::EightTasks,
            payload: payload_members(payload_kb * 1024),
        }
    }

    /// Bytes of payload variables each instance carries.
    pub fn payload_bytes(&self) -> usize {
        self.payload.len()
    }

    pub fn process_id(&self) -> &'static str {
        self.process_id
    }

    pub fn body(&self, t0_micros: u64) -> String {
        let variables = self.variables(t0_micros);
        let mut body = String::with_capacity(variables.len() + 64);
        body.push_str("{\"processDefinitionId\":\"");
        body.push_str(self.process_id);
        body.push_str("\",\"variables\":");
        body.push_str(&variables);
        body.push('}');
        body
    }

    /// The instance's variables as a JSON object.
    pub fn variables(&self, t0_micros: u64) -> String {
        let mut body = String::with_capacity(self.payload.len() + 64);
        body.push_str("{\"t0\":");
        body.push_str(&t0_micros.to_string());
        if self.eight_tasks {
            // Half the instances take each branch of the exclusive gateway.
            body.push_str(",\"amount\":");
            body.push_str(&fastrand::u32(0..=200).to_string());
        }
        if !self.payload.is_empty() {
            body.push(',');
            body.push_str(&self.payload);
        }
        body.push('}');
        body
    }
}

/// An order-shaped payload of about `bytes` bytes, split over ten top-level variables
/// (Camunda's load-test payload is one JSON document of that order of size, read and
/// written as several variables).
fn payload_members(bytes: usize) -> String {
    if bytes == 0 {
        return String::new();
    }
    const VARIABLES: usize = 10;
    let per_variable = bytes / VARIABLES;
    let mut out = String::with_capacity(bytes + 256);
    for v in 0..VARIABLES {
        if v > 0 {
            out.push(',');
        }
        out.push_str(&format!("\"section{v}\":{{\"items\":["));
        let start = out.len();
        let mut i = 0;
        while out.len() - start < per_variable {
            if i > 0 {
                out.push(',');
            }
            out.push_str(&format!(
                "{{\"sku\":\"SKU-{v:02}-{i:05}\",\"name\":\"Article number {i} of section {v}\",\
                 \"quantity\":{},\"price\":{}.{:02},\"tags\":[\"bench\",\"payload\"]}}",
                1 + i % 7,
                10 + i % 90,
                i % 100
            ));
            i += 1;
        }
        out.push_str("]}");
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bodies_are_json_with_t0_and_the_requested_payload() {
        let starter = Starter::new(ProcessKind::EightTasks, 45);
        let body: serde_json::Value = serde_json::from_str(&starter.body(42)).unwrap();
        assert_eq!(body["processDefinitionId"], "eight-tasks");
        assert_eq!(body["variables"]["t0"], 42);
        assert!(body["variables"]["amount"].as_u64().unwrap() <= 200);
        let size = starter.payload_bytes();
        assert!((45 * 1024..47 * 1024).contains(&size), "{size}");

        let plain = Starter::new(ProcessKind::TwoRestCalls, 0);
        let body: serde_json::Value = serde_json::from_str(&plain.body(7)).unwrap();
        assert_eq!(body["variables"], serde_json::json!({"t0": 7}));
    }
}
