//! The benchmark processes and the variables each instance starts with.

use std::path::Path;

use anyhow::{Context, Result, bail};
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

    /// Variables the benchmark sets itself, which a payload must not carry.
    fn own_variables(self) -> &'static [&'static str] {
        match self {
            ProcessKind::TwoRestCalls => &["t0"],
            ProcessKind::EightTasks => &["t0", "amount"],
        }
    }
}

/// The payload of every instance: a JSON object's members without its braces (empty for
/// none), as compact JSON.
#[derive(Clone, Debug, Default)]
pub struct Payload(String);

impl Payload {
    /// About `kb` KB of order-shaped variables (`--payload-kb`).
    pub fn generated(kb: usize) -> Payload {
        Payload(payload_members(kb * 1024))
    }

    /// The JSON object in `path` (`--payload-file`), whose members become variables.
    pub fn from_file(path: &Path, kind: ProcessKind) -> Result<Payload> {
        let text = std::fs::read_to_string(path)
            .with_context(|| format!("cannot read the payload file {}", path.display()))?;
        let value: serde_json::Value = serde_json::from_str(&text)
            .with_context(|| format!("the payload file {} is not JSON", path.display()))?;
        let serde_json::Value::Object(members) = value else {
            bail!(
                "the payload file {} must hold a JSON object (its members become each \
                 instance's variables), but it holds {}",
                path.display(),
                match value {
                    serde_json::Value::Array(_) => "an array",
                    serde_json::Value::String(_) => "a string",
                    serde_json::Value::Number(_) => "a number",
                    serde_json::Value::Bool(_) => "a boolean",
                    _ => "null",
                }
            );
        };
        if let Some(own) = kind
            .own_variables()
            .iter()
            .find(|v| members.contains_key(**v))
        {
            bail!(
                "the payload file {} has a variable '{own}', which rill-bench sets itself; \
                 rename it",
                path.display()
            );
        }
        let compact = serde_json::Value::Object(members).to_string();
        // `{…}` → `…`.
        Ok(Payload(compact[1..compact.len() - 1].to_owned()))
    }

    /// Bytes of variables each instance carries (the object's members as compact JSON).
    pub fn bytes(&self) -> usize {
        self.0.len()
    }
}

/// Builds the JSON body of `POST /v2/process-instances`.
pub struct Starter {
    process_id: &'static str,
    eight_tasks: bool,
    payload: Payload,
}

impl Starter {
    pub fn new(kind: ProcessKind, payload: Payload) -> Starter {
        Starter {
            process_id: kind.id(),
            eight_tasks: kind == ProcessKind::EightTasks,
            payload,
        }
    }

    /// Bytes of payload variables each instance carries.
    pub fn payload_bytes(&self) -> usize {
        self.payload.bytes()
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
        let mut body = String::with_capacity(self.payload.bytes() + 64);
        body.push_str("{\"t0\":");
        body.push_str(&t0_micros.to_string());
        if self.eight_tasks {
            // Half the instances take each branch of the exclusive gateway.
            body.push_str(",\"amount\":");
            body.push_str(&fastrand::u32(0..=200).to_string());
        }
        if !self.payload.0.is_empty() {
            body.push(',');
            body.push_str(&self.payload.0);
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
        let starter = Starter::new(ProcessKind::EightTasks, Payload::generated(45));
        let body: serde_json::Value = serde_json::from_str(&starter.body(42)).unwrap();
        assert_eq!(body["processDefinitionId"], "eight-tasks");
        assert_eq!(body["variables"]["t0"], 42);
        assert!(body["variables"]["amount"].as_u64().unwrap() <= 200);
        let size = starter.payload_bytes();
        assert!((45 * 1024..47 * 1024).contains(&size), "{size}");

        let plain = Starter::new(ProcessKind::TwoRestCalls, Payload::default());
        let body: serde_json::Value = serde_json::from_str(&plain.body(7)).unwrap();
        assert_eq!(body["variables"], serde_json::json!({"t0": 7}));
    }

    #[test]
    fn a_megabyte_payload_is_about_a_megabyte_of_valid_json() {
        let starter = Starter::new(ProcessKind::TwoRestCalls, Payload::generated(1024));
        let size = starter.payload_bytes();
        assert!((1024 * 1024..1024 * 1024 + 4096).contains(&size), "{size}");
        let variables: serde_json::Value = serde_json::from_str(&starter.variables(1)).unwrap();
        assert_eq!(
            variables.as_object().unwrap().len(),
            11,
            "t0 and ten sections"
        );
    }

    #[test]
    fn a_payload_file_gives_its_members_and_is_measured_compact() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("order.json");
        std::fs::write(
            &path,
            "{\n  \"order\": {\"id\": \"o-1\", \"lines\": [1, 2]},\n  \"note\": \"x\"\n}\n",
        )
        .unwrap();
        let payload = Payload::from_file(&path, ProcessKind::TwoRestCalls).unwrap();
        let members = r#""order":{"id":"o-1","lines":[1,2]},"note":"x""#;
        assert_eq!(payload.bytes(), members.len());
        let starter = Starter::new(ProcessKind::TwoRestCalls, payload);
        let variables: serde_json::Value = serde_json::from_str(&starter.variables(5)).unwrap();
        assert_eq!(
            variables,
            serde_json::json!({"t0": 5, "order": {"id": "o-1", "lines": [1, 2]}, "note": "x"})
        );
    }

    #[test]
    fn a_payload_file_that_is_missing_not_json_or_not_an_object_is_a_clear_error() {
        let dir = tempfile::tempdir().unwrap();
        let error =
            |path: &Path, kind| format!("{:#}", Payload::from_file(path, kind).unwrap_err());

        let missing = dir.path().join("missing.json");
        let text = error(&missing, ProcessKind::TwoRestCalls);
        assert!(text.contains("cannot read the payload file"), "{text}");
        assert!(text.contains("missing.json"), "{text}");

        let broken = dir.path().join("broken.json");
        std::fs::write(&broken, "{\"a\": ").unwrap();
        let text = error(&broken, ProcessKind::TwoRestCalls);
        assert!(text.contains("is not JSON"), "{text}");

        let array = dir.path().join("array.json");
        std::fs::write(&array, "[1, 2]").unwrap();
        let text = error(&array, ProcessKind::TwoRestCalls);
        assert!(text.contains("must hold a JSON object"), "{text}");
        assert!(text.contains("an array"), "{text}");

        let clash = dir.path().join("clash.json");
        std::fs::write(&clash, r#"{"amount": 3}"#).unwrap();
        assert!(Payload::from_file(&clash, ProcessKind::TwoRestCalls).is_ok());
        let text = error(&clash, ProcessKind::EightTasks);
        assert!(text.contains("'amount'"), "{text}");
    }

    #[test]
    fn the_example_order_file_is_about_45_kb() {
        let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("payloads/order-45kb.json");
        let payload = Payload::from_file(&path, ProcessKind::EightTasks).unwrap();
        assert!(
            (40_000..50_000).contains(&payload.bytes()),
            "{}",
            payload.bytes()
        );
    }
}
