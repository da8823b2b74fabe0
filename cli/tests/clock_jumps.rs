//! Clock jumps of an hour on real `rill broker` processes (issue 45). Each broker runs
//! under libfaketime with a clock file of its own; writing an offset there moves that
//! broker's wall clock (`CLOCK_REALTIME`) within a second, as an NTP step would. The
//! monotonic clock, which raft's timers use, is left alone, as a real jump leaves it.
//! Needs libfaketime (`scripts/ensure-build-deps` installs it on Debian).
//!
//! Under load (creates and job workers on every broker), a follower's clock jumps an hour
//! ahead and back, then the leader's an hour back and forward again, then an hour ahead
//! and back. Asserted: every acknowledged instance completes; timer instances complete
//! once the leader's clock is right again; no two brokers lead in the same term; in every
//! broker's exported records, time never goes backwards.

mod support;

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use support::{Api, Brokers, Workload, deploy, replica_roles};

const LIBFAKETIME: &[&str] = &[
    "/usr/lib/x86_64-linux-gnu/faketime/libfaketime.so.1",
    "/usr/lib/aarch64-linux-gnu/faketime/libfaketime.so.1",
    "/usr/lib/faketime/libfaketime.so.1",
];

fn libfaketime() -> &'static str {
    LIBFAKETIME
        .iter()
        .find(|path| Path::new(path).exists())
        .unwrap_or_else(|| {
            panic!("libfaketime is not installed (looked for {LIBFAKETIME:?}): apt-get install faketime")
        })
}

/// Broker `i`'s clock file: its wall clock's offset, e.g. `+1h`.
fn clock_file(dir: &Path, i: usize) -> PathBuf {
    dir.join(format!("clock-{i}"))
}

fn set_clock(dir: &Path, i: usize, offset: &str) {
    std::fs::write(clock_file(dir, i), offset).expect("write the clock file");
}

/// A process that waits two seconds on a timer and ends.
const TIMER_PROBE: &str = r#"<?xml version="1.0" encoding="UTF-8"?>
<bpmn:definitions xmlns:bpmn="http://www.omg.org/spec/BPMN/20100524/MODEL"
    xmlns:xsi="http://www.w3.org/2001/XMLSchema-instance" id="timer-probe-definitions"
    targetNamespace="http://bpmn.io/schema/bpmn">
  <bpmn:process id="timer-probe" name="Timer probe" isExecutable="true">
    <bpmn:startEvent id="started" name="Started">
      <bpmn:outgoing>to-wait</bpmn:outgoing>
    </bpmn:startEvent>
    <bpmn:sequenceFlow id="to-wait" sourceRef="started" targetRef="two-seconds" />
    <bpmn:intermediateCatchEvent id="two-seconds" name="Two seconds">
      <bpmn:incoming>to-wait</bpmn:incoming>
      <bpmn:outgoing>to-done</bpmn:outgoing>
      <bpmn:timerEventDefinition id="two-seconds-timer">
        <bpmn:timeDuration xsi:type="bpmn:tFormalExpression">PT2S</bpmn:timeDuration>
      </bpmn:timerEventDefinition>
    </bpmn:intermediateCatchEvent>
    <bpmn:sequenceFlow id="to-done" sourceRef="two-seconds" targetRef="done" />
    <bpmn:endEvent id="done" name="Done">
      <bpmn:incoming>to-done</bpmn:incoming>
    </bpmn:endEvent>
  </bpmn:process>
</bpmn:definitions>
"#;

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("runtime")
}

/// Who says it leads partition 1, asking each broker's own management API; notes every
/// claim by term in `claims`.
async fn leader(brokers: &Brokers, claims: &mut BTreeMap<u64, BTreeSet<usize>>) -> Option<usize> {
    let mut found = None;
    for node in 0..brokers.nodes.len() {
        for (partition, term, role) in replica_roles(&brokers.nodes[node])
            .await
            .unwrap_or_default()
        {
            if partition == 1 && role == "LEADER" {
                claims.entry(term).or_default().insert(node);
                found = Some(node);
            }
        }
    }
    found
}

/// Creates `count` instances of the two-second timer process through `api`.
async fn start_timers(api: &Api, count: usize) -> Vec<String> {
    let mut keys = Vec::new();
    for _ in 0..count {
        keys.push(api.create("timer-probe", json!({})).await);
    }
    keys
}

/// Waits until every instance in `keys` completed; fails naming one that did not.
async fn wait_completed(api: &Api, keys: &[String], timeout: Duration, what: &str) {
    let deadline = Instant::now() + timeout;
    for key in keys {
        loop {
            let answer = api.get(&format!("/v2/process-instances/{key}")).await.ok();
            if matches!(&answer, Some((200, body)) if body["state"] == "COMPLETED") {
                break;
            }
            assert!(
                Instant::now() < deadline,
                "{what}: instance {key} did not complete within {timeout:?}: {answer:?}"
            );
            tokio::time::sleep(Duration::from_millis(200)).await;
        }
    }
}

/// Records in `file` whose timestamp is earlier than a record before them on the same
/// partition (the file holds what one broker exported, in position order per partition).
fn time_going_back(file: &Path) -> Vec<String> {
    let text = std::fs::read_to_string(file).unwrap_or_default();
    let mut latest: BTreeMap<i64, (i64, i64)> = BTreeMap::new();
    let mut found = Vec::new();
    for record in text
        .lines()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
    {
        let (Some(partition), Some(position), Some(timestamp)) = (
            record["partitionId"].as_i64(),
            record["position"].as_i64(),
            record["timestamp"].as_i64(),
        ) else {
            continue;
        };
        match latest.get(&partition) {
            // Export is at least once: a repeated position is not news.
            Some((seen, _)) if position <= *seen => continue,
            Some((seen, at)) if timestamp < *at => found.push(format!(
                "partition {partition}: position {position} at {timestamp}, after position \
                 {seen} at {at}"
            )),
            _ => {}
        }
        let at = latest
            .get(&partition)
            .map_or(timestamp, |(_, at)| timestamp.max(*at));
        latest.insert(partition, (position, at));
    }
    found
}

#[test]
fn clock_jumps_on_a_follower_and_the_leader_lose_nothing_and_never_turn_time_back() {
    let dir = tempfile::tempdir().expect("tempdir");
    let library = libfaketime();
    let exports: Vec<PathBuf> = (0..3)
        .map(|i| dir.path().join(format!("records-{i}.jsonl")))
        .collect();
    runtime().block_on(async {
        let hosts = vec!["127.0.0.1".to_owned(); 3];
        let mut brokers = Brokers::prepare_on(
            dir.path(),
            &hosts,
            1,
            3,
            &[],
            |i| {
                vec![format!(
                    "exporters.jsonl.path={}",
                    exports[i as usize].display()
                )]
            },
            true,
        );
        for (i, node) in brokers.nodes.iter_mut().enumerate() {
            set_clock(dir.path(), i, "+0");
            let launcher = [
                "env".to_owned(),
                format!("LD_PRELOAD={library}"),
                format!(
                    "FAKETIME_TIMESTAMP_FILE={}",
                    clock_file(dir.path(), i).display()
                ),
                // Read the file again at most a second later; leave the monotonic
                // clock alone, as a real step of the wall clock does.
                "FAKETIME_CACHE_DURATION=1".to_owned(),
                "FAKETIME_DONT_FAKE_MONOTONIC=1".to_owned(),
            ];
            node.place("127.0.0.1", &launcher);
            node.launch();
        }
        brokers.wait_ready(Duration::from_secs(60)).await;
        let apis: Vec<Api> = (0..3).map(|i| brokers.api(i)).collect();
        deploy(&apis[0], &["two-rest-calls.bpmn"]).await;
        let model = dir.path().join("timer-probe.bpmn");
        std::fs::write(&model, TIMER_PROBE).expect("write the model");
        let (status, body) = apis[0].deploy(&[&model]).await.expect("deploy");
        assert_eq!(status, 200, "{body}");

        let mut claims: BTreeMap<u64, BTreeSet<usize>> = BTreeMap::new();
        let deadline = Instant::now() + Duration::from_secs(30);
        let first_leader = loop {
            if let Some(node) = leader(&brokers, &mut claims).await {
                break node;
            }
            assert!(Instant::now() < deadline, "no leader");
            tokio::time::sleep(Duration::from_millis(100)).await;
        };
        let follower = (first_leader + 1) % 3;
        let workload = Workload::start(apis.clone(), 400);
        workload
            .progress(50, Duration::from_secs(60), &brokers)
            .await;

        // A follower's clock an hour ahead, then right again.
        eprintln!("clock jumps: follower {follower} an hour ahead and back");
        set_clock(dir.path(), follower, "+1h");
        workload
            .progress(100, Duration::from_secs(60), &brokers)
            .await;
        set_clock(dir.path(), follower, "+0");
        workload
            .progress(100, Duration::from_secs(60), &brokers)
            .await;

        // The leader's clock an hour back: the partition's time stands still, work goes
        // on. Timers started then fire once the clock is right again.
        let jumped = leader(&brokers, &mut claims).await.unwrap_or(first_leader);
        eprintln!("clock jumps: leader {jumped} an hour back");
        set_clock(dir.path(), jumped, "-1h");
        tokio::time::sleep(Duration::from_secs(2)).await;
        workload
            .progress(100, Duration::from_secs(60), &brokers)
            .await;
        let timers = start_timers(&apis[jumped], 3).await;
        set_clock(dir.path(), jumped, "+0");
        wait_completed(
            &apis[0],
            &timers,
            Duration::from_secs(30),
            "timer after a jump back",
        )
        .await;

        // The leader's clock an hour ahead: timers fire by the leader's clock. Then right
        // again: the partition's time stands at the jumped-to hour until the clock
        // catches up, and work still goes on.
        let jumped = leader(&brokers, &mut claims).await.unwrap_or(jumped);
        eprintln!("clock jumps: leader {jumped} an hour ahead");
        set_clock(dir.path(), jumped, "+1h");
        tokio::time::sleep(Duration::from_secs(2)).await;
        let timers = start_timers(&apis[jumped], 3).await;
        wait_completed(
            &apis[0],
            &timers,
            Duration::from_secs(30),
            "timer an hour ahead",
        )
        .await;
        eprintln!("clock jumps: leader {jumped} right again");
        set_clock(dir.path(), jumped, "+0");
        workload
            .progress(100, Duration::from_secs(60), &brokers)
            .await;
        leader(&brokers, &mut claims).await;

        let created = workload
            .finish(&apis[0], Duration::from_secs(120), &brokers)
            .await;
        assert_eq!(created.len(), 400);
        let two: Vec<_> = claims.iter().filter(|(_, nodes)| nodes.len() > 1).collect();
        assert!(two.is_empty(), "two leaders in one term: {two:?}");
        for (i, file) in exports.iter().enumerate() {
            let back = time_going_back(file);
            assert!(
                back.is_empty(),
                "broker {i} exported records whose time goes back: {:?}",
                &back[..back.len().min(5)]
            );
        }
        let exported: usize = exports
            .iter()
            .map(|f| {
                std::fs::read_to_string(f)
                    .unwrap_or_default()
                    .lines()
                    .count()
            })
            .sum();
        assert!(exported > 1000, "the exporters wrote {exported} records");
    });
}
