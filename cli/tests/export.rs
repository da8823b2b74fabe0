//! History exported to Elasticsearch, end to end: real `rill` processes export to the
//! Elasticsearch test server (in this test process, on a real socket) while it fails,
//! recovers, and a leader is killed. Every record arrives exactly once as a document, and
//! while Elasticsearch is down the log keeps what is not exported and new work is
//! throttled.

mod support;

use std::collections::{BTreeMap, BTreeSet};
use std::time::{Duration, Instant};

use rill_es_test_server::TestServer;
use serde_json::json;
use support::{Api, Brokers, RillProcess, Standalone, Workload, deploy, gauge, metrics};

/// Instances of the two-rest-calls process in the cluster test (the figure):
/// about 310,000 records, 130 to 190 s in a debug build on two cores.
const INSTANCES: usize = 10_000;

const LAST_POSITION: &str = "rill_stream_processor_last_position";
const BACKLOG: &str = "rill_exporter_backlog_records";
const SNAPSHOT_INDEX: &str = "rill_raft_snapshot_index";
const APPLIED_INDEX: &str = "rill_raft_applied_index";

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("runtime")
}

/// The Elasticsearch exporter towards `url`, exporting every record (commands,
/// rejections and every value type too), flushing often and retrying quickly.
fn exporter_options(url: &str) -> Vec<String> {
    vec![
        format!("exporters.elasticsearch.url={url}"),
        "exporters.elasticsearch.bulk-delay=500ms".to_owned(),
        "exporters.elasticsearch.retry-initial-backoff=100ms".to_owned(),
        "exporters.elasticsearch.retry-max-backoff=1s".to_owned(),
        "exporters.elasticsearch.filter.command=true".to_owned(),
        "exporters.elasticsearch.filter.rejection=true".to_owned(),
        "exporters.elasticsearch.filter.job-batch=true".to_owned(),
        "exporters.elasticsearch.filter.process-instance-result=true".to_owned(),
    ]
}

/// Document ids `{partition}-{position}` in the record indices: for each partition, how
/// many documents (over all indices) carry each position; and how many documents were
/// written more than once (re-sends after a failure or a leader change).
fn indexed_positions(server: &TestServer) -> (BTreeMap<u64, BTreeMap<u64, usize>>, usize) {
    let mut positions: BTreeMap<u64, BTreeMap<u64, usize>> = BTreeMap::new();
    let mut resent = 0;
    for (_, id, version) in server.document_versions("zeebe-record_*") {
        let (partition, position) = id.split_once('-').expect("id is partition-position");
        let partition: u64 = partition.parse().expect("partition");
        let position: u64 = position.parse().expect("position");
        *positions
            .entry(partition)
            .or_default()
            .entry(position)
            .or_default() += 1;
        if version > 1 {
            resent += 1;
        }
    }
    (positions, resent)
}

/// Asserts that every position from 1 to `last[partition]` is exactly one document, and
/// no other position is.
fn assert_exactly_once(server: &TestServer, last: &BTreeMap<u64, i64>) {
    let (indexed, _) = indexed_positions(server);
    for (partition, last) in last {
        let documents = indexed.get(partition).cloned().unwrap_or_default();
        let missing: Vec<u64> = (1..=*last as u64)
            .filter(|p| !documents.contains_key(p))
            .collect();
        assert!(
            missing.is_empty(),
            "partition {partition}: {} of {last} positions not indexed, e.g. {:?}",
            missing.len(),
            &missing[..missing.len().min(10)]
        );
        let twice: Vec<_> = documents.iter().filter(|(_, n)| **n > 1).collect();
        assert!(
            twice.is_empty(),
            "partition {partition}: positions in more than one document: {twice:?}"
        );
        let beyond: Vec<_> = documents.keys().filter(|p| **p > *last as u64).collect();
        assert!(
            beyond.is_empty(),
            "partition {partition}: documents beyond the last position {last}: {beyond:?}"
        );
    }
    let unknown: Vec<_> = indexed.keys().filter(|p| !last.contains_key(p)).collect();
    assert!(
        unknown.is_empty(),
        "documents of unknown partitions {unknown:?}"
    );
}

/// Waits until every running process reports the same last position for each partition
/// and no export backlog; returns the last positions.
async fn wait_exported(
    processes: &[&RillProcess],
    partitions: u64,
    timeout: Duration,
    logs: impl Fn() -> String,
) -> BTreeMap<u64, i64> {
    let deadline = Instant::now() + timeout;
    loop {
        let mut pages = Vec::new();
        for process in processes.iter().filter(|p| p.is_running()) {
            pages.push(metrics(process).await);
        }
        let mut settled = BTreeMap::new();
        let mut report = Vec::new();
        for partition in 1..=partitions {
            let lasts: BTreeSet<Option<i64>> = pages
                .iter()
                .map(|page| gauge(page, LAST_POSITION, partition))
                .collect();
            let backlogs: BTreeSet<Option<i64>> = pages
                .iter()
                .map(|page| gauge(page, BACKLOG, partition))
                .collect();
            let lasts: Vec<Option<i64>> = lasts.into_iter().collect();
            let backlogs: Vec<Option<i64>> = backlogs.into_iter().collect();
            if let ([Some(last)], [Some(0)]) = (lasts.as_slice(), backlogs.as_slice()) {
                settled.insert(partition, *last);
            }
            report.push(format!("{partition}: last {lasts:?} backlog {backlogs:?}"));
        }
        if settled.len() as u64 == partitions {
            return settled;
        }
        assert!(
            Instant::now() < deadline,
            "the export did not settle: {report:?}\n{}",
            logs()
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

/// Waits until `done` holds, checking every 50 ms.
async fn wait_until(what: &str, timeout: Duration, mut done: impl FnMut() -> bool) {
    let deadline = Instant::now() + timeout;
    while !done() {
        assert!(Instant::now() < deadline, "timed out waiting until {what}");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// 3 brokers, 3 partitions, replication 3, exporting to Elasticsearch under the
/// two-rest-calls workload. Elasticsearch answers 503 for a while, later refuses
/// connections for a while, and in between the leader of partition 1 is killed with
/// SIGKILL and restarted. In the end every record position of every partition is
/// exactly one document `{partition}-{position}`.
#[test]
fn exactly_what_was_committed_is_indexed_once() {
    let dir = tempfile::tempdir().expect("tempdir");
    runtime().block_on(async {
        let started = Instant::now();
        let server = TestServer::start().await.expect("test server");
        let options = exporter_options(&server.url());
        let options: Vec<&str> = options.iter().map(String::as_str).collect();
        let mut brokers = Brokers::start(dir.path(), 3, 3, 3, &options);
        brokers.wait_ready(Duration::from_secs(60)).await;
        let apis: Vec<Api> = (0..3).map(|i| brokers.api(i)).collect();
        deploy(&apis[0], &["two-rest-calls.bpmn"]).await;
        let workload = Workload::start(apis.clone(), INSTANCES);
        let jobs = 2 * INSTANCES;

        // First failure: every request answered 503, until the exporters ran into it
        // (their bulk requests failed) and the workload went on meanwhile.
        workload
            .completed(jobs / 6, Duration::from_secs(120), &brokers)
            .await;
        let failed = server.stats().failed_requests;
        server.fail_requests(Some(503));
        wait_until(
            "the exporters hit the failing server",
            Duration::from_secs(60),
            || server.stats().failed_requests >= failed + 6,
        )
        .await;
        workload
            .progress(jobs / 12, Duration::from_secs(120), &brokers)
            .await;
        server.fail_requests(None);
        eprintln!("first failure over after {:?}", started.elapsed());

        // The leader of partition 1 is killed, and restarted once the workload went on.
        workload
            .completed(jobs * 2 / 6, Duration::from_secs(120), &brokers)
            .await;
        let leader = brokers
            .wait_leader(1, Duration::from_secs(30))
            .await
            .expect("no leader of partition 1") as usize;
        brokers.nodes[leader].kill9();
        workload
            .progress(jobs / 30, Duration::from_secs(120), &brokers)
            .await;
        brokers.nodes[leader].restart();
        brokers.wait_ready(Duration::from_secs(60)).await;
        eprintln!(
            "broker {leader} killed and back after {:?}",
            started.elapsed()
        );

        // Second failure: Elasticsearch goes away (connections refused).
        workload
            .completed(jobs * 3 / 6, Duration::from_secs(120), &brokers)
            .await;
        server.stop().await;
        workload
            .progress(jobs / 12, Duration::from_secs(120), &brokers)
            .await;
        server
            .restart()
            .await
            .expect("the test server listens again");
        eprintln!("second failure over after {:?}", started.elapsed());

        workload
            .completed(jobs - 100, Duration::from_secs(300), &brokers)
            .await;
        let keys = workload
            .finish(&apis[0], Duration::from_secs(120), &brokers)
            .await;
        assert!(keys.len() >= INSTANCES, "{} instances", keys.len());
        eprintln!("workload done after {:?}", started.elapsed());

        let processes: Vec<&RillProcess> = brokers.nodes.iter().collect();
        let last = wait_exported(&processes, 3, Duration::from_secs(120), || brokers.logs()).await;
        assert_exactly_once(&server, &last);
        let (_, resent) = indexed_positions(&server);
        let stats = server.stats();
        eprintln!(
            "last positions {last:?}; {} documents indexed in {} bulk requests, {resent} \
             written again, {} requests failed; {:?} in all",
            stats.indexed_items,
            stats.bulk_requests,
            stats.failed_requests,
            started.elapsed()
        );
        assert!(stats.failed_requests > 0, "the failure switch was hit");
    });
}

/// `rill standalone` exporting to Elasticsearch with a small acceptable backlog and a
/// snapshot every second. Elasticsearch goes down: new instances are refused with 503
/// RESOURCE_EXHAUSTED once the backlog passes the limit, the log stops growing, and
/// snapshots (with the log purge behind them) go on without losing an unexported record.
/// Elasticsearch comes back: the backlog drains, creates are accepted again, and every
/// record is indexed exactly once.
#[test]
fn purge_waits_for_export_and_new_work_is_throttled_while_elasticsearch_is_down() {
    const LIMIT: i64 = 300;
    let dir = tempfile::tempdir().expect("tempdir");
    runtime().block_on(async {
        let server = TestServer::start().await.expect("test server");
        let mut options = exporter_options(&server.url());
        options.extend([
            "cluster.partitions-count=1".to_owned(),
            "data.snapshot-period=1s".to_owned(),
            "raft.log-retention-entries=10".to_owned(),
            "flow-control.write.enabled=true".to_owned(),
            "flow-control.write.throttling.enabled=true".to_owned(),
            format!("flow-control.write.throttling.acceptable-backlog={LIMIT}"),
        ]);
        let options: Vec<&str> = options.iter().map(String::as_str).collect();
        let mut rill = Standalone::start(&dir.path().join("data"), &options);
        rill.wait_ready(Duration::from_secs(60)).await;
        let api = Api::new(rill.rest());
        let logs = || rill.log_text();
        deploy(&api, &["two-rest-calls.bpmn"]).await;
        let create = json!({"processDefinitionId": "two-rest-calls"});
        for _ in 0..10 {
            let (status, body) = api
                .post("/v2/process-instances", create.clone())
                .await
                .expect("create");
            assert_eq!(status, 200, "{body}");
        }
        wait_exported(&[&rill], 1, Duration::from_secs(60), logs).await;

        // Elasticsearch goes down. Creates go on until flow control refuses them.
        server.stop().await;
        let deadline = Instant::now() + Duration::from_secs(120);
        let refused = loop {
            let (status, body) = api
                .post("/v2/process-instances", create.clone())
                .await
                .expect("create");
            match status {
                200 => {}
                503 if body["title"] == "RESOURCE_EXHAUSTED" => break body,
                _ => panic!("create answered {status}: {body}"),
            }
            assert!(
                Instant::now() < deadline,
                "never throttled\n{}",
                rill.log_text()
            );
        };
        let page = metrics(&rill).await;
        let backlog = gauge(&page, BACKLOG, 1).expect("backlog gauge");
        let last = gauge(&page, LAST_POSITION, 1).expect("last position gauge");
        assert!(
            backlog > LIMIT,
            "throttled at a backlog of {backlog}: {refused}"
        );
        let applied = gauge(&page, APPLIED_INDEX, 1).expect("applied index gauge");
        eprintln!("throttled at position {last}, backlog {backlog}, applied index {applied}");

        // A snapshot covers every unexported record (and the log is purged behind it,
        // keeping 10 entries): the records stay in the state's export column family.
        let deadline = Instant::now() + Duration::from_secs(60);
        loop {
            let page = metrics(&rill).await;
            if gauge(&page, SNAPSHOT_INDEX, 1).expect("snapshot index gauge") >= applied {
                break;
            }
            assert!(
                Instant::now() < deadline,
                "no snapshot up to index {applied} while the exporter is stuck\n{}",
                rill.log_text()
            );
            tokio::time::sleep(Duration::from_millis(200)).await;
        }
        // Still refused, and the log did not grow: throttled, not filling the disk.
        let (status, body) = api
            .post("/v2/process-instances", create.clone())
            .await
            .expect("create");
        assert_eq!(status, 503, "{body}");
        assert_eq!(body["title"], "RESOURCE_EXHAUSTED", "{body}");
        let page = metrics(&rill).await;
        assert_eq!(gauge(&page, LAST_POSITION, 1), Some(last), "the log grew");
        assert_eq!(gauge(&page, BACKLOG, 1), Some(backlog));

        // Elasticsearch is back: the backlog drains and creates are accepted again.
        server
            .restart()
            .await
            .expect("the test server listens again");
        wait_exported(&[&rill], 1, Duration::from_secs(60), logs).await;
        let deadline = Instant::now() + Duration::from_secs(30);
        loop {
            let (status, body) = api
                .post("/v2/process-instances", create.clone())
                .await
                .expect("create");
            if status == 200 {
                break;
            }
            assert_eq!(body["title"], "RESOURCE_EXHAUSTED", "{body}");
            assert!(Instant::now() < deadline, "still throttled: {body}");
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        let last = wait_exported(&[&rill], 1, Duration::from_secs(60), logs).await;
        assert!(last[&1] > backlog, "{last:?}");
        assert_exactly_once(&server, &last);
    });
}
