//! Clients that deploy a one-service-task process, create instances, activate jobs and
//! complete them. Each command goes to a replica that says it leads, in an entry built as
//! the partition leader builds it, through `Raft::client_write`; it is acknowledged when
//! the leader applied it and the engine accepted it.

use std::time::Duration;

use openraft::raft::ClientWriteResponse;
use rill_broker::simulation::encode_entry;
use rill_engine_api::RequestId;
use rill_protocol::{
    ActivateJobs, Blob, Command, CommandResponse, CreateProcessInstance, JsonValue, Key,
    ProcessSelector, RecordValue, Resource, Term,
};
use rill_raft::{EntryData, TypeConfig};

use crate::Cluster;
use crate::rng::{FNV_START, fnv};
use crate::world::{Ack, SharedWorld};

pub const PROCESS_ID: &str = "sim-service";
pub const JOB_TYPE: &str = "sim-work";
pub const JOB_TIMEOUT_MS: i64 = 5_000;

pub fn process_xml() -> String {
    format!(
        r#"<?xml version="1.0" encoding="UTF-8"?>
<bpmn:definitions xmlns:bpmn="http://www.omg.org/spec/BPMN/20100524/MODEL" xmlns:zeebe="http://camunda.org/schema/zeebe/1.0" id="defs" targetNamespace="http://rill/sim">
  <bpmn:process id="{PROCESS_ID}" isExecutable="true">
    <bpmn:startEvent id="Start" />
    <bpmn:sequenceFlow id="f1" sourceRef="Start" targetRef="Work" />
    <bpmn:serviceTask id="Work"><bpmn:extensionElements><zeebe:taskDefinition type="{JOB_TYPE}" /></bpmn:extensionElements></bpmn:serviceTask>
    <bpmn:sequenceFlow id="f2" sourceRef="Work" targetRef="End" />
    <bpmn:endEvent id="End" />
  </bpmn:process>
</bpmn:definitions>"#
    )
}

pub fn deploy() -> Command {
    Command::Deploy {
        resources: vec![Resource {
            name: "sim.bpmn".to_owned(),
            content: Blob(process_xml().into_bytes()),
        }],
    }
}

pub fn create() -> Command {
    Command::CreateProcessInstance(CreateProcessInstance {
        process: ProcessSelector::ById {
            bpmn_process_id: PROCESS_ID.to_owned(),
            version: None,
        },
        variables: JsonValue::empty_object(),
        await_result: false,
        fetch_variables: Vec::new(),
        tags: Vec::new(),
    })
}

pub fn activate(max_jobs: i32) -> Command {
    Command::ActivateJobs(ActivateJobs {
        job_type: JOB_TYPE.to_owned(),
        worker: "sim-worker".to_owned(),
        // Short: jobs whose activation was lost (and jobs of a worker that is slow) time
        // out during a run and are activated again.
        timeout: JOB_TIMEOUT_MS,
        max_jobs,
        fetch_variables: Vec::new(),
    })
}

pub fn complete(job_key: Key) -> Command {
    Command::CompleteJob {
        job_key,
        variables: JsonValue::empty_object(),
        result: Default::default(),
    }
}

/// How a command ended for its client.
pub enum Outcome {
    Accepted {
        value: Box<RecordValue>,
    },
    Rejected,
    /// No leader, timed out, skipped, or raft refused: not acknowledged.
    Unknown,
}

/// Sends `command` through a replica that says it leads, as a client request.
pub async fn submit(
    cluster: &Cluster,
    world: &SharedWorld,
    client: u64,
    command: Command,
) -> Outcome {
    let (node, term, request) = {
        let mut w = world.lock();
        let leaders: Vec<(usize, u64)> = cluster
            .nodes
            .iter()
            .enumerate()
            .filter_map(|(i, n)| n.is_leader().map(|t| (i, t)))
            .collect();
        if leaders.is_empty() {
            return Outcome::Unknown;
        }
        // A gateway's topology may name any replica that claims to lead.
        let (i, term) = leaders[w.rng.below(leaders.len() as u64) as usize];
        w.next_message += 1;
        (i, term, RequestId((client << 40) | w.next_message))
    };
    let node = &cluster.nodes[node];
    let Some(raft) = node.raft() else {
        return Outcome::Unknown;
    };
    // The leader stamps the entry with its own clock, as a broker does.
    let timestamp = world.lock().clock(node.id);
    let what = command_name(&command);
    let Ok(bytes) = encode_entry(timestamp, Term(term), &[(Some(request), command)]) else {
        world.lock().violation(format!("cannot encode {what}"));
        return Outcome::Unknown;
    };
    let data = fnv(FNV_START, &bytes);
    world.lock().trace(format_args!(
        "c{client} {what} req {} -> n{} term {term}",
        request.0, node.id
    ));
    let written = tokio::time::timeout(
        Duration::from_secs(5),
        raft.client_write(EntryData(bytes.into())),
    )
    .await;
    let log_id = match written {
        Ok(Ok(ClientWriteResponse::<TypeConfig> { log_id, .. })) => log_id,
        Ok(Err(e)) => {
            world
                .lock()
                .trace(format_args!("c{client} req {} refused: {e}", request.0));
            return Outcome::Unknown;
        }
        Err(_) => {
            world
                .lock()
                .trace(format_args!("c{client} req {} timed out", request.0));
            return Outcome::Unknown;
        }
    };
    let response = crate::world::take_response(world, node.id, request);
    let mut w = world.lock();
    match response {
        Some(CommandResponse::Accepted { key, value, .. }) => {
            w.trace(format_args!(
                "c{client} req {} accepted at {} key {}",
                request.0, log_id.index, key.0
            ));
            w.acks.push(Ack {
                index: log_id.index,
                term: log_id.leader_id.term,
                data,
                what: format!("{what} (request {})", request.0),
            });
            Outcome::Accepted {
                value: Box::new(value),
            }
        }
        Some(other) => {
            w.trace(format_args!(
                "c{client} req {} answered {other:?}",
                request.0
            ));
            Outcome::Rejected
        }
        None => {
            w.trace(format_args!("c{client} req {} not applied", request.0));
            Outcome::Unknown
        }
    }
}

fn command_name(command: &Command) -> &'static str {
    match command {
        Command::Deploy { .. } => "deploy",
        Command::CreateProcessInstance(_) => "create",
        Command::ActivateJobs(_) => "activate",
        Command::CompleteJob { .. } => "complete",
        _ => "other",
    }
}

/// What a leader does when work falls due: proposes the engine's due commands (job
/// time-outs, timers) with its own clock, as the broker's leader does (without a waiting
/// request). Returns how many it proposed and saw applied.
pub async fn propose_due_work(cluster: &Cluster, world: &SharedWorld) -> usize {
    let mut proposed = 0;
    for node in &cluster.nodes {
        let Some(term) = node.is_leader() else {
            continue;
        };
        let Some(raft) = node.raft() else { continue };
        let now = world.lock().clock(node.id);
        let commands = match node.due_commands(now) {
            Ok(commands) => commands,
            Err(e) => {
                world
                    .lock()
                    .violation(format!("n{}: due commands: {e}", node.id));
                continue;
            }
        };
        if commands.is_empty() {
            continue;
        }
        let entry: Vec<(Option<RequestId>, Command)> =
            commands.into_iter().map(|c| (None, c)).collect();
        let Ok(bytes) = encode_entry(now, Term(term), &entry) else {
            world.lock().violation("cannot encode due commands".into());
            continue;
        };
        world.lock().trace(format_args!(
            "n{} proposes {} due commands",
            node.id,
            entry.len()
        ));
        let written = tokio::time::timeout(
            Duration::from_secs(5),
            raft.client_write(EntryData(bytes.into())),
        )
        .await;
        if matches!(written, Ok(Ok(_))) {
            proposed += entry.len();
        }
    }
    proposed
}
