//! kill -9 failover with real `rill broker` processes (issue 21): 3 brokers, 3
//! partitions, replication factor 3, default raft timings. Creates and job workers run
//! through every broker's gateway while the leader of each partition in turn is killed
//! with SIGKILL, and restarted once its partition has a new leader.
//!
//! Asserted: every acknowledged instance completes; no job is activated again after an
//! acknowledged completion, and the engine's records show none completed twice; no
//! worker receives a job whose deadline has passed; acknowledged creates never pause
//! for more than 1 s while some partition has a leader; a killed leader's partitions
//! have a new leader, on a live broker, within 3 s of the kill; no two brokers say they
//! lead one partition in the same raft term (each broker's `GET /actuator/partitions`),
//! and each broker's `rill_raft_term` gauge shows the term its management API shows.
//!
//! Each run prints one `FAILOVER-SUMMARY {json}` line on stderr with what it measured;
//! `scripts/failover-runs N` collects them over N runs.

mod support;

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use futures::StreamExt;
use serde_json::{Value, json};
use support::{Api, Brokers, deploy, job_completions, replica_roles};

/// The bars.
const NEW_LEADER_BAR: Duration = Duration::from_secs(3);
const CREATE_GAP_BAR: Duration = Duration::from_secs(1);

/// Short enough that an answer held up by an election (seconds) arrives expired, and
/// far above an activation's round trip without a fault.
const JOB_TIMEOUT_MS: i64 = 3000;
const CREATORS: usize = 4;
/// Each creator's pace: the brokers keep up, so a gap is the failover's, not overload's.
const CREATE_PERIOD: Duration = Duration::from_millis(100);
const WORKERS: usize = 4;
/// How long a kill's partitions are watched for a new leader: past the bar, so the
/// summary still says how long it took.
const ELECTION_WATCH: Duration = Duration::from_secs(20);
/// Load on two brokers after an election, and on three after a restart, before the next
/// step.
const SETTLE: Duration = Duration::from_secs(2);
/// `rill_raft_role` of a leader.
const ROLE_LEADER: f64 = 3.0;

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("runtime")
}

/// The clock the engine stamps deadlines with (same machine).
#[allow(clippy::disallowed_methods)] // a test compares with the leader's clock
fn epoch_ms() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as i64)
}

/// A job as a worker received it.
struct Activation {
    job: i64,
    deadline: i64,
    received: i64,
}

/// What the clients saw, with their own clocks.
#[derive(Default)]
struct Seen {
    /// Acknowledged creates: when, and the instance key.
    creates: Vec<(Instant, String)>,
    activations: Vec<Activation>,
    /// Job key to the first acknowledged (204) completion, epoch ms.
    completions: HashMap<i64, i64>,
    completions_acknowledged: usize,
}

/// Creators and workers spread over every gateway, riding out brokers that are down.
struct Load {
    seen: Arc<Mutex<Seen>>,
    stop_creating: Arc<AtomicBool>,
    creators: Vec<tokio::task::JoinHandle<()>>,
    workers: Vec<tokio::task::JoinHandle<()>>,
}

impl Load {
    fn start(apis: &[Api]) -> Load {
        let seen: Arc<Mutex<Seen>> = Arc::default();
        let stop_creating = Arc::new(AtomicBool::new(false));
        let creators = (0..CREATORS)
            .map(|c| {
                tokio::spawn(create(
                    apis.to_vec(),
                    c,
                    seen.clone(),
                    stop_creating.clone(),
                ))
            })
            .collect();
        let workers = (0..WORKERS)
            .map(|w| tokio::spawn(work(apis.to_vec(), w, seen.clone())))
            .collect();
        Load {
            seen,
            stop_creating,
            creators,
            workers,
        }
    }

    fn creates(&self) -> usize {
        self.seen.lock().unwrap().creates.len()
    }

    fn completions(&self) -> usize {
        self.seen.lock().unwrap().completions_acknowledged
    }

    /// Runs for `at_least`, and until creates and completions both moved on.
    async fn run(&self, at_least: Duration, brokers: &Brokers) {
        let (creates, completions) = (self.creates(), self.completions());
        tokio::time::sleep(at_least).await;
        let deadline = Instant::now() + Duration::from_secs(60);
        while self.creates() == creates || self.completions() == completions {
            assert!(
                Instant::now() < deadline,
                "no progress: {} creates, {} completions\n{}",
                self.creates(),
                self.completions(),
                brokers.logs()
            );
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }
}

async fn create(apis: Vec<Api>, first: usize, seen: Arc<Mutex<Seen>>, stop: Arc<AtomicBool>) {
    let mut turn = first;
    while !stop.load(Ordering::Relaxed) {
        let started = Instant::now();
        turn += 1;
        let api = &apis[turn % apis.len()];
        let body = json!({"processDefinitionId": "two-rest-calls"});
        match api.post("/v2/process-instances", body).await {
            Ok((200, v)) => {
                let key = v["processInstanceKey"].as_str().unwrap().to_owned();
                seen.lock().unwrap().creates.push((Instant::now(), key));
                tokio::time::sleep_until((started + CREATE_PERIOD).into()).await;
            }
            // A broker down, no leader yet, or backpressure: on to the next gateway.
            Err(_) | Ok((429 | 500..=599, _)) => {
                tokio::time::sleep(Duration::from_millis(20)).await
            }
            Ok((status, v)) => panic!("create failed with {status}: {v}"),
        }
    }
}

/// Activates with the gateway's default long poll, as a plain client does, and
/// completes each batch's jobs at once.
async fn work(apis: Vec<Api>, w: usize, seen: Arc<Mutex<Seen>>) {
    let mut turn = w;
    loop {
        turn += 1;
        let api = &apis[turn % apis.len()];
        let request = json!({"type": "restCall", "worker": format!("w{w}"),
            "timeout": JOB_TIMEOUT_MS, "maxJobsToActivate": 16});
        let jobs = match api.post("/v2/jobs/activation", request).await {
            Ok((200, v)) => v["jobs"].as_array().cloned().unwrap_or_default(),
            _ => {
                tokio::time::sleep(Duration::from_millis(50)).await;
                continue;
            }
        };
        let received = epoch_ms();
        let keys: Vec<i64> = {
            let mut seen = seen.lock().unwrap();
            jobs.iter()
                .map(|job| {
                    let key = job["jobKey"].as_str().unwrap().parse().unwrap();
                    let deadline = job["deadline"].as_i64().expect("deadline");
                    seen.activations.push(Activation {
                        job: key,
                        deadline,
                        received,
                    });
                    key
                })
                .collect()
        };
        futures::future::join_all(keys.into_iter().map(|key| {
            let seen = seen.clone();
            async move {
                let path = format!("/v2/jobs/{key}/completion");
                if let Ok((204, _)) = api.post(&path, json!({})).await {
                    let at = epoch_ms();
                    let mut seen = seen.lock().unwrap();
                    seen.completions_acknowledged += 1;
                    seen.completions.entry(key).or_insert(at);
                }
            }
        }))
        .await;
    }
}

/// The partitions each of `nodes` says it leads (its `rill_raft_role` gauge); a broker
/// that does not answer leads nothing. Asked of the brokers themselves: a gateway's
/// topology lags them by up to its 250 ms poll, a quarter of the margin under the bar.
async fn leaders(brokers: &Brokers, nodes: &[usize]) -> BTreeMap<u64, BTreeSet<usize>> {
    let mut leaders: BTreeMap<u64, BTreeSet<usize>> = BTreeMap::new();
    for &node in nodes {
        let roles = brokers.nodes[node].metric("rill_raft_role").await;
        for (partition, role) in roles {
            if role == ROLE_LEADER
                && let Ok(partition) = partition.parse()
            {
                leaders.entry(partition).or_default().insert(node);
            }
        }
    }
    leaders
}

/// The brokers that said they led, by partition and raft term.
type TermLeaders = BTreeMap<(u64, u64), BTreeSet<usize>>;

/// Adds the leaders `nodes` report now to `seen`.
async fn note_term_leaders(brokers: &Brokers, nodes: &[usize], seen: &mut TermLeaders) {
    for &node in nodes {
        for (partition, term, role) in replica_roles(&brokers.nodes[node])
            .await
            .unwrap_or_default()
        {
            if role == "LEADER" {
                seen.entry((partition, term)).or_default().insert(node);
            }
        }
    }
}

/// Whether each running broker's `rill_raft_term` gauge equals the term its management
/// API reports, for every partition it hosts; else what differs.
async fn term_gauges_match(brokers: &Brokers) -> Result<(), String> {
    for node in running(brokers) {
        let gauges = brokers.nodes[node].metric("rill_raft_term").await;
        let Some(reported) = replica_roles(&brokers.nodes[node]).await else {
            return Err(format!(
                "broker {node} did not answer GET /actuator/partitions"
            ));
        };
        if reported.is_empty() {
            return Err(format!("broker {node} reported no partitions of its own"));
        }
        for (partition, term, _) in reported {
            let gauge = gauges.get(&partition.to_string()).copied();
            if gauge != Some(term as f64) {
                return Err(format!(
                    "broker {node}, partition {partition}: rill_raft_term {gauge:?}, \
                     GET /actuator/partitions term {term}"
                ));
            }
        }
    }
    Ok(())
}

fn running(brokers: &Brokers) -> Vec<usize> {
    (0..brokers.nodes.len())
        .filter(|&i| brokers.nodes[i].is_running())
        .collect()
}

/// The one broker leading `partition`, and every partition it leads.
async fn leader_and_its_partitions(brokers: &Brokers, partition: u64) -> (usize, Vec<u64>) {
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let leaders = leaders(brokers, &running(brokers)).await;
        if let Some(claims) = leaders.get(&partition)
            && claims.len() == 1
        {
            let leader = *claims.first().unwrap();
            let led = leaders
                .iter()
                .filter(|(_, claims)| claims.contains(&leader))
                .map(|(p, _)| *p)
                .collect();
            return (leader, led);
        }
        assert!(
            Instant::now() < deadline,
            "partition {partition} has no single leader: {leaders:?}\n{}",
            brokers.logs()
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

/// One kill: of whom, what it led, and when each of those partitions had a new leader.
struct Kill {
    partition: u64,
    victim: usize,
    led: Vec<u64>,
    at: Instant,
    new_leader: BTreeMap<u64, Duration>,
    restarted: Instant,
}

impl Kill {
    /// When no partition had a leader: from the kill until the first new one, if the
    /// victim led them all.
    fn leaderless(&self, partitions: usize) -> Option<(Instant, Instant)> {
        (self.led.len() == partitions).then(|| {
            let first = self.new_leader.values().min().map(|d| self.at + *d);
            (self.at, first.unwrap_or(self.restarted))
        })
    }
}

/// The largest gap between consecutive acknowledged creates within `window` (its ends
/// count as creates), leaving out time in `excluded`: its length and where it starts.
fn largest_gap(
    creates: &[Instant],
    window: (Instant, Instant),
    excluded: &[(Instant, Instant)],
) -> (Duration, Instant) {
    let mut points = vec![window.0];
    points.extend(
        creates
            .iter()
            .copied()
            .filter(|t| *t > window.0 && *t < window.1),
    );
    points.push(window.1);
    points.sort();
    points
        .windows(2)
        .map(|pair| {
            let (a, b) = (pair[0], pair[1]);
            let hidden: Duration = excluded
                .iter()
                .map(|(from, to)| b.min(*to).saturating_duration_since(a.max(*from)))
                .sum();
            ((b - a).saturating_sub(hidden), a)
        })
        .max()
        .unwrap_or((Duration::ZERO, window.0))
}

fn ms(d: Duration) -> u64 {
    d.as_millis() as u64
}

/// Asks for every instance in `keys` until each is COMPLETED or `timeout` passed;
/// returns those not found and those not completed, with their last answer.
async fn unfinished(api: &Api, keys: &[String], timeout: Duration) -> (Vec<String>, Vec<String>) {
    let deadline = Instant::now() + timeout;
    let mut pending: Vec<String> = keys.to_vec();
    loop {
        let answers: Vec<(String, Option<(u16, Value)>)> = futures::stream::iter(pending)
            .map(|key| async move {
                let answer = api.get(&format!("/v2/process-instances/{key}")).await.ok();
                (key, answer)
            })
            .buffer_unordered(8)
            .collect()
            .await;
        let open: Vec<_> = answers
            .into_iter()
            .filter(|(_, answer)| !matches!(answer, Some((200, v)) if v["state"] == "COMPLETED"))
            .collect();
        if open.is_empty() || Instant::now() > deadline {
            let (lost, stuck): (Vec<_>, Vec<_>) = open
                .into_iter()
                .partition(|(_, answer)| matches!(answer, Some((404, _))));
            return (
                lost.into_iter().map(|(key, _)| key).collect(),
                stuck
                    .into_iter()
                    .map(|(key, answer)| format!("{key}: {answer:?}"))
                    .collect(),
            );
        }
        pending = open.into_iter().map(|(key, _)| key).collect();
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

/// Jobs of `instances` the engine's exported records show completed more than once,
/// once every one of their two jobs is exported (export runs behind the log), or 30 s
/// passed: then also what is missing.
async fn completed_twice(exports: &[PathBuf], instances: &[String]) -> (Vec<i64>, Option<String>) {
    let instances: BTreeSet<&str> = instances.iter().map(String::as_str).collect();
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let completions = job_completions(exports, Some(&instances));
        let complete = completions.len() >= 2 * instances.len();
        if complete || Instant::now() > deadline {
            let short = (!complete).then(|| {
                format!(
                    "export: {} job completions exported for {} instances within 30 s",
                    completions.len(),
                    instances.len()
                )
            });
            let twice = completions
                .into_iter()
                .filter(|(_, n)| *n > 1)
                .map(|(job, _)| job)
                .collect();
            return (twice, short);
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

#[test]
fn killing_each_leader_in_turn_loses_nothing_and_stalls_nothing() {
    const PARTITIONS: u64 = 3;
    let dir = tempfile::tempdir().expect("tempdir");
    let exports: Vec<PathBuf> = (0..3)
        .map(|i| dir.path().join(format!("records-{i}.jsonl")))
        .collect();
    runtime().block_on(async {
        let started = Instant::now();
        // Each broker exports the job events of what it leads to its own file.
        let export_jobs = [
            "exporters.jsonl.filter.command=false",
            "exporters.jsonl.filter.rejection=false",
            "exporters.jsonl.filter.process-instance=false",
            "exporters.jsonl.filter.process-instance-creation=false",
            "exporters.jsonl.filter.job-batch=false",
            "exporters.jsonl.filter.variable=false",
        ];
        let mut brokers = Brokers::start_with_default_raft(
            dir.path(),
            3,
            PARTITIONS as u16,
            3,
            &export_jobs,
            |i| {
                vec![format!(
                    "exporters.jsonl.path={}",
                    exports[i as usize].display()
                )]
            },
        );
        brokers.wait_ready(Duration::from_secs(60)).await;
        // Priority election: on a fresh cluster each partition is led by the first of its
        // replicas in placement order, so each kill below takes a different broker first.
        for partition in 1..=PARTITIONS {
            let (leader, _) = leader_and_its_partitions(&brokers, partition).await;
            assert_eq!(leader as u64, partition - 1, "leader of partition {partition}");
        }
        let apis: Vec<Api> = (0..3).map(|i| brokers.api(i)).collect();
        deploy(&apis[0], &["two-rest-calls.bpmn"]).await;

        let load = Load::start(&apis);
        load.run(SETTLE, &brokers).await;

        let mut kills: Vec<Kill> = Vec::new();
        let mut term_leaders = TermLeaders::new();
        note_term_leaders(&brokers, &running(&brokers), &mut term_leaders).await;
        for partition in 1..=PARTITIONS {
            let (victim, led) = leader_and_its_partitions(&brokers, partition).await;
            let survivors: Vec<usize> = running(&brokers)
                .into_iter()
                .filter(|&i| i != victim)
                .collect();
            let at = Instant::now();
            brokers.nodes[victim].kill9();
            let mut new_leader = BTreeMap::new();
            while new_leader.len() < led.len() && at.elapsed() < ELECTION_WATCH {
                let now = leaders(&brokers, &survivors).await;
                let elapsed = at.elapsed();
                for p in &led {
                    if now.get(p).is_some_and(|claims| !claims.is_empty()) {
                        new_leader.entry(*p).or_insert(elapsed);
                    }
                }
                note_term_leaders(&brokers, &survivors, &mut term_leaders).await;
                tokio::time::sleep(Duration::from_millis(50)).await;
            }
            load.run(SETTLE, &brokers).await;
            brokers.nodes[victim].restart();
            let restarted = Instant::now();
            brokers.wait_ready(Duration::from_secs(60)).await;
            load.run(SETTLE, &brokers).await;
            note_term_leaders(&brokers, &running(&brokers), &mut term_leaders).await;
            kills.push(Kill {
                partition,
                victim,
                led,
                at,
                new_leader,
                restarted,
            });
        }
        let faults = (kills[0].at, Instant::now());

        load.stop_creating.store(true, Ordering::Relaxed);
        for creator in load.creators {
            creator.await.expect("creator");
        }
        let instances: Vec<String> = {
            let seen = load.seen.lock().unwrap();
            seen.creates.iter().map(|(_, key)| key.clone()).collect()
        };
        let (lost, stuck) = unfinished(&apis[0], &instances, Duration::from_secs(60)).await;
        for worker in &load.workers {
            worker.abort();
        }
        let seen = std::mem::take(&mut *load.seen.lock().unwrap());

        let mut failures: Vec<String> = Vec::new();
        let distinct: BTreeSet<&String> = instances.iter().collect();
        if distinct.len() != instances.len() {
            failures.push(format!(
                "instance keys: {} acknowledged creates gave {} distinct keys",
                instances.len(),
                distinct.len()
            ));
        }
        if !lost.is_empty() {
            failures.push(format!(
                "lost instances: {} of {} acknowledged instances are not found, e.g. {:?}",
                lost.len(),
                instances.len(),
                &lost[..lost.len().min(5)]
            ));
        }
        if !stuck.is_empty() {
            failures.push(format!(
                "unfinished instances: {} of {} acknowledged instances did not complete \
                 within 60 s, e.g. {:?}",
                stuck.len(),
                instances.len(),
                &stuck[..stuck.len().min(5)]
            ));
        }

        // A fresh activation is the engine's: it stamps one with its leader's clock,
        // deadline - timeout. A late answer of an earlier activation is an expired job,
        // counted below.
        let reactivated: Vec<String> = seen
            .activations
            .iter()
            .filter_map(|a| {
                let completed = *seen.completions.get(&a.job)?;
                let activated = a.deadline - JOB_TIMEOUT_MS;
                (activated > completed).then(|| {
                    format!(
                        "job {} activated at {activated}, completion acknowledged at {completed}",
                        a.job
                    )
                })
            })
            .collect();
        if !reactivated.is_empty() {
            failures.push(format!(
                "activations after an acknowledged completion: {}, e.g. {:?}",
                reactivated.len(),
                &reactivated[..reactivated.len().min(5)]
            ));
        }

        let expired: Vec<&Activation> = seen
            .activations
            .iter()
            .filter(|a| a.received >= a.deadline)
            .collect();
        let most_late = expired.iter().map(|a| a.received - a.deadline).max();
        if !expired.is_empty() {
            failures.push(format!(
                "expired jobs: {} jobs reached a worker after their deadline, up to {} ms \
                 after it (job timeout {JOB_TIMEOUT_MS} ms)",
                expired.len(),
                most_late.unwrap_or(0)
            ));
        }

        let creates: Vec<Instant> = seen.creates.iter().map(|(at, _)| *at).collect();
        let excluded: Vec<(Instant, Instant)> = kills
            .iter()
            .filter_map(|k| k.leaderless(PARTITIONS as usize))
            .collect();
        let (gap, gap_at) = largest_gap(&creates, faults, &excluded);
        // Which kill the gap followed, for the message.
        let after_kill = kills.iter().rposition(|k| k.at <= gap_at).unwrap_or(0);
        let gap_offset = gap_at.saturating_duration_since(kills[after_kill].at);
        let gaps_per_kill: Vec<u64> = kills
            .iter()
            .enumerate()
            .map(|(i, k)| {
                let end = kills.get(i + 1).map_or(faults.1, |next| next.at);
                ms(largest_gap(&creates, (k.at, end), &excluded).0)
            })
            .collect();
        if gap > CREATE_GAP_BAR {
            failures.push(format!(
                "create gap: acknowledged creates paused for {} ms (bar {} ms), starting {} ms \
                 after kill {} (of broker {}); largest per kill: {gaps_per_kill:?} ms",
                ms(gap),
                ms(CREATE_GAP_BAR),
                ms(gap_offset),
                after_kill + 1,
                kills[after_kill].victim
            ));
        }

        for (i, kill) in kills.iter().enumerate() {
            for p in &kill.led {
                match kill.new_leader.get(p) {
                    Some(took) if *took <= NEW_LEADER_BAR => {}
                    Some(took) => failures.push(format!(
                        "time to new leader: partition {p} had a new leader {} ms after kill {} \
                         of broker {} (bar {} ms)",
                        ms(*took),
                        i + 1,
                        kill.victim,
                        ms(NEW_LEADER_BAR)
                    )),
                    None => failures.push(format!(
                        "time to new leader: partition {p} had no leader {} ms after kill {} \
                         of broker {}",
                        ms(ELECTION_WATCH),
                        i + 1,
                        kill.victim
                    )),
                }
            }
        }

        let two_leaders: Vec<String> = term_leaders
            .iter()
            .filter(|(_, nodes)| nodes.len() > 1)
            .map(|((p, term), nodes)| format!("partition {p} term {term}: brokers {nodes:?}"))
            .collect();
        if !two_leaders.is_empty() {
            failures.push(format!("two leaders in one term: {two_leaders:?}"));
        }
        // Every kill gave its partitions a new term.
        let terms_seen: BTreeSet<u64> = term_leaders.keys().map(|(_, term)| *term).collect();
        if terms_seen.len() < 2 {
            failures.push(format!(
                "terms: the management API showed leaders in terms {terms_seen:?} only, \
                 across {} kills",
                kills.len()
            ));
        }
        let deadline = Instant::now() + Duration::from_secs(10);
        let mut gauges = term_gauges_match(&brokers).await;
        while gauges.is_err() && Instant::now() < deadline {
            tokio::time::sleep(Duration::from_millis(200)).await;
            gauges = term_gauges_match(&brokers).await;
        }
        if let Err(difference) = gauges {
            failures.push(format!("term gauge: {difference}"));
        }

        let (twice, short) = completed_twice(&exports, &instances).await;
        // Missing instances are reported above already.
        if let Some(short) = short
            && lost.is_empty()
            && stuck.is_empty()
        {
            failures.push(short);
        }
        if !twice.is_empty() {
            failures.push(format!(
                "jobs completed twice in the engine's records: {}, e.g. {:?}",
                twice.len(),
                &twice[..twice.len().min(5)]
            ));
        }

        let summary = json!({
            "passed": failures.is_empty(),
            "run_ms": ms(started.elapsed()),
            "kills": kills.iter().map(|k| json!({
                "partition": k.partition,
                "victim": k.victim,
                "led": k.led,
                "new_leader_ms": k.led.iter()
                    .map(|p| k.new_leader.get(p).map(|d| ms(*d)))
                    .collect::<Vec<_>>(),
            })).collect::<Vec<_>>(),
            "new_leader_ms_max": kills.iter()
                .flat_map(|k| k.led.iter().map(|p| k.new_leader.get(p).map_or(ms(ELECTION_WATCH), |d| ms(*d))))
                .max(),
            "create_gap_ms": ms(gap),
            "create_gap_ms_per_kill": gaps_per_kill,
            "instances": instances.len(),
            "lost_instances": lost.len(),
            "unfinished_instances": stuck.len(),
            "activations": seen.activations.len(),
            "completions": seen.completions_acknowledged,
            "expired_jobs": expired.len(),
            "expired_most_late_ms": most_late,
            "activations_after_completion": reactivated.len(),
            "jobs_completed_twice": twice.len(),
        });
        eprintln!("FAILOVER-SUMMARY {summary}");
        if !failures.is_empty() {
            // The brokers' logs outlive the temporary data directory, for the post-mortem.
            let logs = PathBuf::from(env!("CARGO_TARGET_TMPDIR"))
                .join(format!("failover-{}.log", std::process::id()));
            let _ = std::fs::write(&logs, brokers.logs());
            panic!(
                "kill -9 failover missed {} bar(s):\n- {}\nsummary: {summary}\nbroker logs: {}",
                failures.len(),
                failures.join("\n- "),
                logs.display()
            );
        }
    });
}
