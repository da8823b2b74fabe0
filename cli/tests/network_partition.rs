//! Network partitions between real `rill broker` processes (issue 45). Each broker runs
//! in a network namespace of its own, joined to a bridge in the test process's own
//! namespace; links are cut with nftables rules inside the brokers' namespaces, so the
//! test itself still reaches every broker's API. Raft runs with its default timings.
//! Needs root, `ip` and `nft` (`scripts/ensure-build-deps` installs them on Debian).
//!
//! Asserted, for a leader cut off from both followers: the majority has a leader in a
//! later term within 6 s and takes writes; the cut-off broker acknowledges nothing while
//! cut; it stops reporting itself leader (check-quorum: no quorum acknowledged it for an
//! election timeout) within [`step_down_bar`], counts the step-down in
//! `rill_raft_step_downs_total` and logs it with the partition and term; once that bar
//! passed, at most one broker reports LEADER for the partition; no two brokers lead one
//! partition in the same term; after the heal, the cut-off broker's gateway takes writes
//! again within 5 s and follows the new term; every acknowledged instance is there.

mod support;

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use support::{Api, Brokers, replica_roles};

/// The bridge's subnet: it exists only inside the test's namespaces.
const SUBNET: &str = "10.77.0";
/// The test process's address on the bridge.
const TEST_HOST: &str = "10.77.0.254";

const NEW_LEADER_BAR: Duration = Duration::from_secs(6);
const HEAL_BAR: Duration = Duration::from_secs(5);

/// How long after the cut the cut-off leader may still say it leads, from the raft
/// settings the brokers run with (the defaults): it steps down once no quorum
/// acknowledged it for an election timeout. Its last acknowledgement can be up to a
/// heartbeat older than the cut (plus the round trip), and its election driver looks
/// every half heartbeat at metrics up to one turn of raft's loop old: two heartbeats
/// cover both. Then a second for the status to reach `/actuator/partitions` and for
/// this test's polling.
fn step_down_bar() -> Duration {
    let raft = rill_config::RaftConfig::default();
    raft.election_timeout + raft.heartbeat_interval * 2 + Duration::from_secs(1)
}

/// Runs a command to set up or cut the network; anything but success fails the test
/// with its output.
fn run(args: &[&str]) {
    let output = Command::new(args[0])
        .args(&args[1..])
        .output()
        .unwrap_or_else(|e| {
            panic!("cannot run {args:?}: {e} (the partition tests need `ip` and `nft`)")
        });
    assert!(
        output.status.success(),
        "{args:?} failed: {}",
        String::from_utf8_lossy(&output.stderr)
    );
}

/// Brokers' network namespaces, joined by a bridge in the test process's namespace.
struct Network {
    namespaces: Vec<String>,
}

impl Network {
    /// Moves the calling thread into a network namespace of its own (threads it starts
    /// later, such as a runtime's, follow it) with a bridge, and creates `size`
    /// namespaces on it. Call before anything starts threads.
    fn create(size: usize) -> Network {
        remove_stale_namespaces();
        nix::sched::unshare(nix::sched::CloneFlags::CLONE_NEWNET).expect(
            "a network namespace of its own: the partition tests need root (CAP_SYS_ADMIN \
             and CAP_NET_ADMIN)",
        );
        run(&["ip", "link", "set", "lo", "up"]);
        run(&["ip", "link", "add", "rill-br", "type", "bridge"]);
        run(&[
            "ip",
            "addr",
            "add",
            &format!("{TEST_HOST}/24"),
            "dev",
            "rill-br",
        ]);
        run(&["ip", "link", "set", "rill-br", "up"]);
        let network = Network {
            namespaces: (0..size)
                .map(|i| format!("rill-{}-{i}", std::process::id()))
                .collect(),
        };
        for i in 0..size {
            let namespace = &network.namespaces[i];
            run(&["ip", "netns", "add", namespace]);
            let veth = format!("rill-v{i}");
            run(&[
                "ip", "link", "add", &veth, "type", "veth", "peer", "name", "eth0", "netns",
                namespace,
            ]);
            run(&["ip", "link", "set", &veth, "master", "rill-br"]);
            run(&["ip", "link", "set", &veth, "up"]);
            network.exec(i, &["ip", "link", "set", "lo", "up"]);
            let address = format!("{}/24", network.host(i));
            network.exec(i, &["ip", "addr", "add", &address, "dev", "eth0"]);
            network.exec(i, &["ip", "link", "set", "eth0", "up"]);
            network.exec(i, &["nft", "add", "table", "inet", "chaos"]);
            for (chain, hook) in [("in", "input"), ("out", "output")] {
                let spec = format!("{{ type filter hook {hook} priority 0; }}");
                network.exec(i, &["nft", "add", "chain", "inet", "chaos", chain, &spec]);
            }
        }
        network
    }

    /// Broker `i`'s address.
    fn host(&self, i: usize) -> String {
        format!("{SUBNET}.{}", i + 1)
    }

    /// What runs a program in broker `i`'s namespace.
    fn launcher(&self, i: usize) -> Vec<String> {
        ["ip", "netns", "exec", &self.namespaces[i]]
            .map(str::to_owned)
            .to_vec()
    }

    fn exec(&self, i: usize, args: &[&str]) {
        let mut command: Vec<&str> = vec!["ip", "netns", "exec", &self.namespaces[i]];
        command.extend_from_slice(args);
        run(&command);
    }

    /// Cuts broker `i` off from every other broker, both ways. The test still reaches it.
    fn isolate(&self, i: usize) {
        for other in (0..self.namespaces.len()).filter(|&o| o != i) {
            let peer = self.host(other);
            for (chain, direction) in [("in", "saddr"), ("out", "daddr")] {
                self.exec(
                    i,
                    &[
                        "nft", "add", "rule", "inet", "chaos", chain, "ip", direction, &peer,
                        "drop",
                    ],
                );
            }
        }
    }

    /// Broker `i` hears nothing from the other brokers, while they still hear it.
    fn deafen(&self, i: usize) {
        for other in (0..self.namespaces.len()).filter(|&o| o != i) {
            let peer = self.host(other);
            self.exec(
                i,
                &[
                    "nft", "add", "rule", "inet", "chaos", "in", "ip", "saddr", &peer, "drop",
                ],
            );
        }
    }

    /// Lifts every cut.
    fn heal(&self) {
        for i in 0..self.namespaces.len() {
            for chain in ["in", "out"] {
                self.exec(i, &["nft", "flush", "chain", "inet", "chaos", chain]);
            }
        }
    }
}

impl Drop for Network {
    fn drop(&mut self) {
        for namespace in &self.namespaces {
            let _ = Command::new("ip")
                .args(["netns", "del", namespace])
                .status();
        }
    }
}

/// Namespaces of partition tests whose process is gone (a test killed before its
/// clean-up).
fn remove_stale_namespaces() {
    let Ok(output) = Command::new("ip").args(["netns", "list"]).output() else {
        return;
    };
    for line in String::from_utf8_lossy(&output.stdout).lines() {
        let name = line.split_whitespace().next().unwrap_or_default();
        let Some(pid) = name
            .strip_prefix("rill-")
            .and_then(|rest| rest.split('-').next())
        else {
            continue;
        };
        if !Path::new(&format!("/proc/{pid}")).exists() {
            let _ = Command::new("ip").args(["netns", "del", name]).status();
        }
    }
}

/// A process that ends as soon as it starts: an acknowledged create is a finished
/// instance, so what was acknowledged is easy to look for afterwards.
const PROBE: &str = r#"<?xml version="1.0" encoding="UTF-8"?>
<bpmn:definitions xmlns:bpmn="http://www.omg.org/spec/BPMN/20100524/MODEL"
    xmlns:zeebe="http://camunda.org/schema/zeebe/1.0" id="probe-definitions"
    targetNamespace="http://bpmn.io/schema/bpmn">
  <bpmn:process id="partition-probe" name="Partition probe" isExecutable="true">
    <bpmn:startEvent id="requested" name="Requested">
      <bpmn:outgoing>to-done</bpmn:outgoing>
    </bpmn:startEvent>
    <bpmn:sequenceFlow id="to-done" sourceRef="requested" targetRef="done" />
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

/// An API client whose requests give up after `timeout` (a cut broker never answers).
fn api_with_timeout(base: String, timeout: Duration) -> Api {
    Api {
        base,
        http: reqwest::Client::builder()
            .timeout(timeout)
            .build()
            .expect("http client"),
    }
}

/// Who says it leads partition 1, with its term, among `nodes`; notes every claim in
/// `claims` (by term).
async fn leaders(
    brokers: &Brokers,
    nodes: &[usize],
    claims: &mut BTreeMap<u64, BTreeSet<usize>>,
) -> Vec<(usize, u64)> {
    let mut found = Vec::new();
    for &node in nodes {
        for (partition, term, role) in replica_roles(&brokers.nodes[node])
            .await
            .unwrap_or_default()
        {
            if partition == 1 && role == "LEADER" {
                claims.entry(term).or_default().insert(node);
                found.push((node, term));
            }
        }
    }
    found
}

/// `text` without the terminal colour codes the log may carry.
fn without_colours(text: &str) -> String {
    let mut plain = String::with_capacity(text.len());
    let mut chars = text.chars();
    while let Some(c) = chars.next() {
        if c == '\u{1b}' {
            // An escape sequence runs to its final letter (`m` for colours).
            for end in chars.by_ref() {
                if end.is_ascii_alphabetic() {
                    break;
                }
            }
        } else {
            plain.push(c);
        }
    }
    plain
}

/// Creates one probe instance through `api`: its key if acknowledged.
async fn create(api: &Api) -> Option<String> {
    match api
        .post(
            "/v2/process-instances",
            json!({"processDefinitionId": "partition-probe"}),
        )
        .await
    {
        Ok((200, body)) => body["processInstanceKey"].as_str().map(str::to_owned),
        _ => None,
    }
}

/// Creates through `api` until one is acknowledged: its key and when, or `None` after
/// `timeout`.
async fn first_write(api: &Api, timeout: Duration) -> Option<(String, Instant)> {
    let deadline = Instant::now() + timeout;
    while Instant::now() < deadline {
        if let Some(key) = create(api).await {
            return Some((key, Instant::now()));
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    None
}

/// How the leader is cut off.
#[derive(Clone, Copy, Debug)]
enum Cut {
    /// From both followers, both ways.
    BothWays,
    /// It hears nothing from its followers; they still hear it.
    Inbound,
}

#[test]
fn a_leader_cut_off_from_its_followers_is_replaced_and_loses_nothing() {
    cut_the_leader_off(Cut::BothWays);
}

#[test]
fn a_leader_that_hears_no_follower_is_replaced_and_loses_nothing() {
    cut_the_leader_off(Cut::Inbound);
}

fn cut_the_leader_off(cut: Cut) {
    let network = Network::create(3);
    let dir = tempfile::tempdir().expect("tempdir");
    runtime().block_on(async {
        let hosts: Vec<String> = (0..3).map(|i| network.host(i)).collect();
        let mut brokers = Brokers::prepare_on(dir.path(), &hosts, 1, 3, &[], |_| Vec::new(), false);
        for (i, node) in brokers.nodes.iter_mut().enumerate() {
            node.place(&hosts[i], &network.launcher(i));
            node.launch();
        }
        brokers.wait_ready(Duration::from_secs(90)).await;
        let model = dir.path().join("partition-probe.bpmn");
        std::fs::write(&model, PROBE).expect("write the model");
        let (status, body) = brokers.api(0).deploy(&[&model]).await.expect("deploy");
        assert_eq!(status, 200, "{body}");

        let mut claims: BTreeMap<u64, BTreeSet<usize>> = BTreeMap::new();
        let all = [0, 1, 2];
        let (leader, old_term) = loop {
            if let [(node, term)] = leaders(&brokers, &all, &mut claims).await[..] {
                break (node, term);
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        };
        let majority: Vec<usize> = all.into_iter().filter(|&n| n != leader).collect();
        let apis: Vec<Api> = (0..3)
            .map(|i| api_with_timeout(brokers.nodes[i].rest(), Duration::from_secs(2)))
            .collect();
        let mut acknowledged: Vec<String> = Vec::new();
        for i in 0..30 {
            if let Some((key, _)) = first_write(&apis[i % 3], Duration::from_secs(30)).await {
                acknowledged.push(key);
            }
        }
        assert_eq!(acknowledged.len(), 30, "creates before the cut");

        // Cut the leader off. Its gateway keeps being asked: it must acknowledge nothing.
        let cut_at = Instant::now();
        match cut {
            Cut::BothWays => network.isolate(leader),
            Cut::Inbound => network.deafen(leader),
        }
        let cut_off_api = apis[leader].clone();
        let cut_off_writes = tokio::spawn(async move {
            let mut acknowledged = Vec::new();
            let until = Instant::now() + NEW_LEADER_BAR + Duration::from_secs(4);
            while Instant::now() < until {
                if let Some(key) = create(&cut_off_api).await {
                    acknowledged.push((key, Instant::now()));
                }
                tokio::time::sleep(Duration::from_millis(200)).await;
            }
            acknowledged
        });

        let mut new_leader = None;
        let mut stepped_down = None;
        let mut isolated_roles = BTreeSet::new();
        while cut_at.elapsed() < NEW_LEADER_BAR + Duration::from_secs(4) {
            let found = leaders(&brokers, &majority, &mut claims).await;
            if let Some(&(node, term)) = found.iter().find(|(_, term)| *term > old_term)
                && new_leader.is_none()
            {
                new_leader = Some((node, term, cut_at.elapsed()));
            }
            let said = replica_roles(&brokers.nodes[leader]).await;
            for (partition, term, role) in said.clone().unwrap_or_default() {
                if partition == 1 {
                    isolated_roles.insert(format!("{role} in term {term}"));
                }
            }
            // The cut-off broker answered, and not as partition 1's leader.
            if stepped_down.is_none()
                && let Some(said) = said
                && !said
                    .iter()
                    .any(|(partition, _, role)| *partition == 1 && role == "LEADER")
            {
                stepped_down = Some(cut_at.elapsed());
            }
            if new_leader.is_some() && stepped_down.is_some() {
                break;
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        let stepped_down = stepped_down.unwrap_or_else(|| {
            panic!(
                "the cut-off broker {leader} still says it leads partition 1 {:?} after the \
                 cut ({isolated_roles:?})\n{}",
                cut_at.elapsed(),
                brokers.logs()
            )
        });
        assert!(
            stepped_down <= step_down_bar(),
            "the cut-off broker {leader} stopped saying it leads only {stepped_down:?} after \
             the cut (bar {:?})",
            step_down_bar()
        );
        let (new_node, new_term, took) = new_leader.unwrap_or_else(|| {
            panic!(
                "the majority {majority:?} had no leader in a term after {old_term} within \
                 {:?} of the cut\n{}",
                cut_at.elapsed(),
                brokers.logs()
            )
        });
        assert!(
            took <= NEW_LEADER_BAR,
            "the majority's new leader (broker {new_node}, term {new_term}) took {took:?} \
             (bar {NEW_LEADER_BAR:?})"
        );
        let (key, written_at) = first_write(&apis[new_node], NEW_LEADER_BAR)
            .await
            .expect("the majority takes writes");
        assert!(
            written_at.duration_since(cut_at) <= NEW_LEADER_BAR + Duration::from_secs(2),
            "the majority's first write came {:?} after the cut",
            written_at.duration_since(cut_at)
        );
        acknowledged.push(key);
        for i in 0..20 {
            let api = &apis[majority[i % 2]];
            let (key, _) = first_write(api, Duration::from_secs(10))
                .await
                .expect("writes on the majority side");
            acknowledged.push(key);
        }

        // Nothing was acknowledged by the cut-off broker once its followers were gone
        // (an answer in flight at the cut may still arrive within a second).
        let late: Vec<(String, Duration)> = cut_off_writes
            .await
            .expect("writer")
            .into_iter()
            .map(|(key, at)| (key, at.duration_since(cut_at)))
            .filter(|(_, after)| *after > Duration::from_secs(1))
            .collect();
        assert!(
            late.is_empty(),
            "the cut-off broker {leader} acknowledged writes while cut: {late:?}"
        );

        // Past the step-down bar, one broker at most says it leads partition 1, and the
        // cut-off one counted and logged its step-down.
        let bar_passed = cut_at + step_down_bar();
        tokio::time::sleep(bar_passed.saturating_duration_since(Instant::now())).await;
        for _ in 0..10 {
            let mut seen = BTreeMap::new();
            let now = leaders(&brokers, &all, &mut seen).await;
            assert!(
                now.len() <= 1,
                "{:?} after the cut, several brokers say they lead partition 1: {now:?}",
                cut_at.elapsed()
            );
            for (term, nodes) in seen {
                claims.entry(term).or_default().extend(nodes);
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        let step_downs = brokers.nodes[leader]
            .metric("rill_raft_step_downs_total")
            .await;
        assert!(
            step_downs.get("1").copied().unwrap_or(0.0) >= 1.0,
            "rill_raft_step_downs_total of the cut-off broker: {step_downs:?}"
        );
        let log = without_colours(&brokers.nodes[leader].log_text());
        let logged = format!("stepping down as leader of term {old_term}");
        assert!(
            log.lines()
                .any(|line| line.contains(&logged) && line.contains("partition=1")),
            "the cut-off broker's log has no line with \"{logged}\" for partition 1"
        );
        eprintln!(
            "PARTITION-SUMMARY {}",
            json!({
                "cut": format!("{cut:?}"),
                "old_leader": leader,
                "old_term": old_term,
                "new_leader": new_node,
                "new_term": new_term,
                "new_leader_ms": took.as_millis() as u64,
                "stepped_down_ms": stepped_down.as_millis() as u64,
                "cut_off_broker_said": isolated_roles,
            })
        );

        // Heal: the cut-off broker follows the new term and its gateway takes writes.
        let healed_at = Instant::now();
        network.heal();
        let (key, _) = first_write(&apis[leader], HEAL_BAR)
            .await
            .unwrap_or_else(|| {
                panic!(
                    "broker {leader}'s gateway took no write within {HEAL_BAR:?} of the heal\n{}",
                    brokers.logs()
                )
            });
        acknowledged.push(key);
        let deadline = healed_at + HEAL_BAR + Duration::from_secs(5);
        loop {
            let said = replica_roles(&brokers.nodes[leader])
                .await
                .unwrap_or_default();
            if said.iter().any(|(p, term, _)| *p == 1 && *term >= new_term) {
                break;
            }
            assert!(
                Instant::now() < deadline,
                "broker {leader} still says {said:?} after the heal (new term {new_term})"
            );
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        leaders(&brokers, &all, &mut claims).await;

        let two: Vec<(&u64, &BTreeSet<usize>)> =
            claims.iter().filter(|(_, nodes)| nodes.len() > 1).collect();
        assert!(two.is_empty(), "two leaders in one term: {two:?}");

        // Every acknowledged instance is there, finished.
        let reader = Api::new(brokers.nodes[new_node].rest());
        for key in &acknowledged {
            let deadline = Instant::now() + Duration::from_secs(30);
            loop {
                let answer: Option<(u16, Value)> = reader
                    .get(&format!("/v2/process-instances/{key}"))
                    .await
                    .ok();
                if let Some((200, body)) = &answer {
                    assert_eq!(body["state"], "COMPLETED", "{body}");
                    break;
                }
                assert!(
                    Instant::now() < deadline,
                    "acknowledged instance {key} is not found: {answer:?}"
                );
                tokio::time::sleep(Duration::from_millis(200)).await;
            }
        }
    });
}
