//! Searches on a cluster of real `rill broker` processes (3 brokers, 3 partitions,
//! replication 3): cursor paging over 10,000 instances both ways, and searches answered
//! while a partition leader is killed with SIGKILL (the gateway holds a search that needs
//! the dead leader's partition and answers it, whole, once there is a new leader; a 503
//! or 504 would be allowed, a partial answer never).

mod support;

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use support::{Api, Brokers};

/// A process that starts and ends at once: the cheapest instance to create.
const QUICK: &str = r#"<?xml version="1.0" encoding="UTF-8"?>
<bpmn:definitions xmlns:bpmn="http://www.omg.org/spec/BPMN/20100524/MODEL" id="quick-defs" targetNamespace="http://rill.test">
  <bpmn:process id="quick" isExecutable="true">
    <bpmn:startEvent id="start"><bpmn:outgoing>flow</bpmn:outgoing></bpmn:startEvent>
    <bpmn:sequenceFlow id="flow" sourceRef="start" targetRef="end"/>
    <bpmn:endEvent id="end"><bpmn:incoming>flow</bpmn:incoming></bpmn:endEvent>
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

fn quick_model(dir: &Path) -> PathBuf {
    let path = dir.join("quick.bpmn");
    std::fs::write(&path, QUICK).expect("write the model");
    path
}

async fn deploy_quick(api: &Api, dir: &Path) {
    let model = quick_model(dir);
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        match api.deploy(&[&model]).await {
            Ok((200, _)) => return,
            other => assert!(Instant::now() < deadline, "deploy failed: {other:?}"),
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

/// Creates `count` quick instances with `parallel` requests in flight over `apis`,
/// riding out unavailable partitions; returns the acknowledged keys.
async fn create(apis: &[Api], count: usize, parallel: usize) -> Vec<String> {
    let next = Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let tasks: Vec<_> = (0..parallel)
        .map(|c| {
            let (apis, next) = (apis.to_vec(), next.clone());
            tokio::spawn(async move {
                let mut keys = Vec::new();
                let mut turn = c;
                while next.fetch_add(1, Ordering::Relaxed) < count {
                    loop {
                        turn += 1;
                        let api = &apis[turn % apis.len()];
                        let body = json!({"processDefinitionId": "quick"});
                        match api.post("/v2/process-instances", body).await {
                            Ok((200, v)) => {
                                keys.push(v["processInstanceKey"].as_str().unwrap().to_owned());
                                break;
                            }
                            Err(_) | Ok((502..=504, _)) => {
                                tokio::time::sleep(Duration::from_millis(20)).await
                            }
                            Ok((status, v)) => panic!("create failed with {status}: {v}"),
                        }
                    }
                }
                keys
            })
        })
        .collect();
    let mut keys = Vec::with_capacity(count);
    for task in tasks {
        keys.extend(task.await.expect("creator"));
    }
    keys
}

fn keys(page: &Value) -> Vec<String> {
    page["items"]
        .as_array()
        .expect("items")
        .iter()
        .map(|i| i["processInstanceKey"].as_str().expect("key").to_owned())
        .collect()
}

async fn search(api: &Api, body: Value) -> Value {
    let (s, b) = api
        .post("/v2/process-instances/search", body.clone())
        .await
        .unwrap();
    assert_eq!(s, 200, "{body}: {b}");
    b
}

/// Waits until a search for finished quick instances counts `want`.
async fn wait_completed(api: &Api, want: u64, brokers: &Brokers) {
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        let page = search(
            api,
            json!({"filter": {"processDefinitionId": "quick", "state": "COMPLETED"}, "page": {"limit": 1}}),
        )
        .await;
        if page["page"]["totalItems"] == want {
            return;
        }
        assert!(
            Instant::now() < deadline,
            "never {want} completed: {page}\n{}",
            brokers.logs()
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

const INSTANCES: usize = 10_000;
/// Not a divisor of the count: the last page is a short one.
const PAGE: usize = 999;

#[test]
fn ten_thousand_instances_are_paged_forwards_and_backwards_without_gaps() {
    let dir = tempfile::tempdir().expect("tempdir");
    runtime().block_on(async {
        let started = Instant::now();
        let mut brokers = Brokers::start(dir.path(), 3, 3, 3, &[]);
        brokers.wait_ready(Duration::from_secs(60)).await;
        let apis: Vec<Api> = (0..3).map(|i| brokers.api(i)).collect();
        deploy_quick(&apis[0], dir.path()).await;
        let created = create(&apis, INSTANCES, 48).await;
        let expected: BTreeSet<u64> = created.iter().map(|k| k.parse().unwrap()).collect();
        assert_eq!(expected.len(), INSTANCES, "keys are unique");
        let partitions: BTreeSet<u64> = expected.iter().map(|k| k >> 51).collect();
        assert_eq!(partitions.len(), 3, "spread over every partition");
        wait_completed(&apis[0], INSTANCES as u64, &brokers).await;
        let filled = started.elapsed();

        // Forwards with `after`, each page through another gateway, to the empty page.
        let mut forward: Vec<String> = Vec::new();
        let mut page = search(&apis[0], json!({"page": {"limit": PAGE}})).await;
        let mut last = page.clone();
        let mut requests = 1;
        loop {
            assert_eq!(page["page"]["totalItems"], INSTANCES, "{}", page["page"]);
            assert_eq!(page["page"]["hasMoreTotalItems"], false);
            let got = keys(&page);
            if got.is_empty() {
                break;
            }
            assert!(got.len() == PAGE || forward.len() + got.len() == INSTANCES);
            forward.extend(got);
            last = page.clone();
            let end = page["page"]["endCursor"].as_str().unwrap().to_owned();
            page = search(&apis[requests % 3], json!({"page": {"limit": PAGE, "after": end}})).await;
            requests += 1;
        }
        let numbers: Vec<u64> = forward.iter().map(|k| k.parse().unwrap()).collect();
        assert_eq!(
            numbers,
            expected.iter().copied().collect::<Vec<_>>(),
            "every instance once, in key order (the default sort)"
        );

        // Backwards with `before` from the last page, to the empty page before the first.
        let mut backward: Vec<String> = keys(&last);
        page = last;
        loop {
            let start = page["page"]["startCursor"].as_str().unwrap().to_owned();
            page = search(&apis[requests % 3], json!({"page": {"limit": PAGE, "before": start}})).await;
            requests += 1;
            assert_eq!(page["page"]["totalItems"], INSTANCES);
            let got = keys(&page);
            if got.is_empty() {
                break;
            }
            assert_eq!(got.len(), PAGE, "9,990 instances before the last page: full pages");
            backward.splice(0..0, got);
        }
        assert!(backward == forward, "backwards: {}", difference(&backward, &forward));
        eprintln!(
            "SEARCH-PAGING {{\"instances\": {INSTANCES}, \"fill_s\": {:.1}, \"paging_s\": {:.1}, \"requests\": {requests}}}",
            filled.as_secs_f64(),
            (started.elapsed() - filled).as_secs_f64()
        );
    });
}

/// Where two walks differ, in a few words (the lists are long).
fn difference(got: &[String], want: &[String]) -> String {
    let unique: BTreeSet<&String> = got.iter().collect();
    let first = got.iter().zip(want).position(|(a, b)| a != b);
    let context =
        |list: &[String], at: usize| list[at.saturating_sub(2)..(at + 3).min(list.len())].to_vec();
    format!(
        "{} items ({} distinct), expected {}; first difference at {first:?}: {:?} instead of {:?}",
        got.len(),
        unique.len(),
        want.len(),
        first.map(|at| context(got, at)),
        first.map(|at| context(want, at)),
    )
}

const SEARCHERS: usize = 6;

/// One search a searcher asked: when, and what came back (status 0: no answer).
struct Asked {
    at: Instant,
    took: Duration,
    status: u16,
    answer: String,
    total: Option<u64>,
}

#[test]
fn searches_keep_answering_while_a_partition_leader_is_killed() {
    let dir = tempfile::tempdir().expect("tempdir");
    runtime().block_on(async {
        let mut brokers = Brokers::start(dir.path(), 3, 3, 3, &[]);
        brokers.wait_ready(Duration::from_secs(60)).await;
        let apis: Vec<Api> = (0..3).map(|i| brokers.api(i)).collect();
        deploy_quick(&apis[0], dir.path()).await;
        let before = create(&apis, 300, 12).await;
        wait_completed(&apis[0], 300, &brokers).await;

        // The victim: the leader of partition 1 (asked of the brokers' topology).
        let victim = brokers
            .wait_leader(1, Duration::from_secs(30))
            .await
            .expect("partition 1 has a leader") as usize;
        let survivors: Vec<Api> = (0..3).filter(|&i| i != victim).map(|i| brokers.api(i)).collect();

        // A searcher on the surviving gateways, from before the kill to after the new
        // leader: a search answers the full count of what completed before it was asked,
        // or refuses as unavailable; it never answers part of the partitions.
        let stop = Arc::new(AtomicBool::new(false));
        let seen: Arc<Mutex<Vec<Asked>>> = Arc::default();
        // Several, started apart, so that searches are asked all through the failover
        // even while some are held waiting for a leader.
        let searchers: Vec<_> = (0..SEARCHERS).map(|s| {
            let (apis, stop, seen) = (survivors.clone(), stop.clone(), seen.clone());
            tokio::spawn(async move {
                tokio::time::sleep(Duration::from_millis(50 * s as u64)).await;
                let mut turn = s;
                while !stop.load(Ordering::Relaxed) {
                    turn += 1;
                    let body = json!({"filter": {"processDefinitionId": "quick", "state": "COMPLETED"}, "page": {"limit": 1}});
                    let at = Instant::now();
                    let asked = match apis[turn % apis.len()].post("/v2/process-instances/search", body).await {
                        Ok((status, page)) => Asked {
                            at,
                            took: at.elapsed(),
                            status,
                            total: page["page"]["totalItems"].as_u64(),
                            answer: page.to_string(),
                        },
                        Err(e) => Asked { at, took: at.elapsed(), status: 0, total: None, answer: e.to_string() },
                    };
                    seen.lock().unwrap().push(asked);
                    tokio::time::sleep(Duration::from_millis(50)).await;
                }
            })
        }).collect();
        tokio::time::sleep(Duration::from_millis(500)).await;
        brokers.nodes[victim].kill9();
        let killed = Instant::now();
        // Creates acknowledged during the failover must be found afterwards.
        let during = create(&survivors, 200, 4).await;
        let deadline = Instant::now() + Duration::from_secs(30);
        loop {
            let leader = brokers.wait_leader(1, Duration::from_secs(1)).await;
            if leader.is_some_and(|l| l as usize != victim) {
                break;
            }
            assert!(Instant::now() < deadline, "no new leader of partition 1\n{}", brokers.logs());
        }
        let elected = killed.elapsed();
        tokio::time::sleep(Duration::from_secs(1)).await;
        stop.store(true, Ordering::Relaxed);
        for searcher in searchers {
            searcher.await.expect("searcher");
        }

        let seen = std::mem::take(&mut *seen.lock().unwrap());
        for asked in seen.iter() {
            match asked.status {
                200 => assert!(
                    asked.total >= Some(300),
                    "an answer without every instance acknowledged before it: {}",
                    asked.answer
                ),
                // Unavailable while there is no leader: a client retries.
                503 | 504 => {}
                other => panic!("a search failed with {other}: {}", asked.answer),
            }
        }
        let answered = |from: Instant, to: Instant| {
            seen.iter()
                .filter(|a| a.status == 200 && a.at >= from && a.at < to)
                .count()
        };
        let in_failover = answered(killed, killed + elected);
        let timeline: Vec<String> = seen
            .iter()
            .map(|a| {
                let at = a.at.duration_since(killed.min(a.at)).as_millis() as i128
                    - killed.duration_since(killed.min(a.at)).as_millis() as i128;
                format!("{at}ms:{}:{}ms", a.status, a.took.as_millis())
            })
            .collect();
        assert!(
            in_failover > 0,
            "no search asked during the failover ({elected:?}) was answered: {timeline:?}"
        );
        assert!(answered(killed + elected, Instant::now()) > 0, "none after it");
        let refused = seen.iter().filter(|a| a.status != 200).count();
        let longest = seen.iter().map(|a| a.took).max().unwrap_or_default();

        // Everything acknowledged, before and during the kill, is found.
        let all = before.len() + during.len();
        wait_completed(&survivors[0], all as u64, &brokers).await;
        let page = search(
            &survivors[1],
            json!({"filter": {"processDefinitionId": "quick"}, "page": {"limit": 1000}}),
        )
        .await;
        let found: BTreeSet<String> = keys(&page).into_iter().collect();
        let acknowledged: BTreeSet<String> = before.into_iter().chain(during).collect();
        assert_eq!(found, acknowledged);
        eprintln!(
            "SEARCH-FAILOVER {{\"victim\": {victim}, \"elected_s\": {:.1}, \"asked\": {}, \"answered_in_failover\": {in_failover}, \"refused\": {refused}, \"longest_ms\": {}}}",
            elected.as_secs_f64(),
            seen.len(),
            longest.as_millis()
        );
    });
}
