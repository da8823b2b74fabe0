//! The node's thread pools have the configured sizes and the partition runs on the cpu
//! pool. (Its own test binary: it counts every thread of the process.)

mod common;

use std::collections::BTreeSet;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use rill_broker::testing::{
    ListCommand, ListEngine, ListQuery, ListQueryResult, ListResponse, LoopbackNetwork,
};
use rill_broker::{BrokerMetrics, Partition, PartitionEnv, Role, Runtimes};
use rill_config::ThreadsConfig;
use rill_engine_api::{
    Engine, EngineResult, ProcessingContext, ProcessingOutput, StateRead, StateTxn,
};
use rill_protocol::{NodeId, PartitionId, RecordDraft, Timestamp};

/// The test engine, noting which threads it runs on.
struct ThreadNoting {
    inner: ListEngine,
    threads: Arc<Mutex<BTreeSet<String>>>,
}

impl Engine for ThreadNoting {
    type Command = ListCommand;
    type Response = ListResponse;
    type Query = ListQuery;
    type QueryResult = ListQueryResult;

    fn process(
        &mut self,
        ctx: &ProcessingContext,
        state: &mut dyn StateTxn,
        command: &ListCommand,
        out: &mut ProcessingOutput<ListCommand, ListResponse>,
    ) -> EngineResult<()> {
        let name = std::thread::current()
            .name()
            .unwrap_or("unnamed")
            .to_owned();
        self.threads.lock().unwrap().insert(name);
        self.inner.process(ctx, state, command, out)
    }
    fn processing_error_response(&self, reason: &str) -> ListResponse {
        self.inner.processing_error_response(reason)
    }
    fn processing_error_record(&self, command: &ListCommand, reason: &str) -> RecordDraft {
        self.inner.processing_error_record(command, reason)
    }
    fn due_commands(
        &mut self,
        s: &dyn StateRead,
        now: Timestamp,
        l: usize,
        o: &mut Vec<ListCommand>,
    ) -> EngineResult<Option<Timestamp>> {
        self.inner.due_commands(s, now, l, o)
    }
    fn pending_sends(
        &mut self,
        s: &dyn StateRead,
        l: usize,
        o: &mut Vec<(PartitionId, ListCommand)>,
    ) -> EngineResult<()> {
        self.inner.pending_sends(s, l, o)
    }
    fn query(&mut self, s: &dyn StateRead, q: &ListQuery) -> EngineResult<ListQueryResult> {
        self.inner.query(s, q)
    }
    fn is_never_rejected(c: &ListCommand) -> bool {
        ListEngine::is_never_rejected(c)
    }
}

fn thread_names() -> Vec<String> {
    let mut names = Vec::new();
    for task in std::fs::read_dir("/proc/self/task").expect("procfs") {
        let path = task.expect("task").path().join("comm");
        if let Ok(name) = std::fs::read_to_string(path) {
            names.push(name.trim().to_owned());
        }
    }
    names
}

/// The distinct names `<prefix><number>` among `names`: one per worker of a pool.
///
/// Distinct, because on Linux a thread starts with its creator's name: a thread that
/// RocksDB (or any library) starts from a worker is called `rill-io-0` too until it
/// names itself, or for good if it never does. Counting names would count those.
fn count(names: &[String], prefix: &str) -> usize {
    names
        .iter()
        .filter(|n| {
            n.strip_prefix(prefix)
                .is_some_and(|rest| !rest.is_empty() && rest.bytes().all(|b| b.is_ascii_digit()))
        })
        .collect::<BTreeSet<_>>()
        .len()
}

#[test]
fn pools_have_the_configured_sizes_and_partitions_run_on_cpu() {
    // Declared first, so it is removed last: after the runtimes (and the databases
    // closed on their threads) are gone, even when an assertion fails.
    let dir = tempfile::tempdir().unwrap();
    let runtimes = Runtimes::new(&ThreadsConfig {
        cpu_thread_count: 3,
        io_thread_count: 2,
    })
    .unwrap();
    let threads = Arc::new(Mutex::new(BTreeSet::new()));
    let engine = ThreadNoting {
        inner: ListEngine,
        threads: threads.clone(),
    };
    let members = [(NodeId(0), "local".to_owned())].into();
    let config = common::test_config(dir.path().join("partition-1"), NodeId(0), members);
    let env = PartitionEnv {
        cpu: runtimes.cpu().clone(),
        io: runtimes.io().clone(),
        transport: LoopbackNetwork::new().transport(),
        raft_service: rill_raft::RaftService::new(),
        metrics: BrokerMetrics::unregistered(),
        exporters: None,
        state: rill_raft::StateOptions::default(),
        disk: rill_broker::DiskUsage::unsampled(std::env::temp_dir()),
    };
    let test_rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    test_rt.block_on(async {
        let partition = Partition::start(config, engine, env).await.unwrap();
        partition
            .watch_status()
            .wait_for(|s| s.role == Role::Leader)
            .await
            .unwrap();
        for id in 0..20 {
            partition.submit(ListCommand::Append { id }).await.unwrap();
        }
        let names = thread_names();
        assert_eq!(count(&names, "rill-cpu-"), 3, "cpu workers in {names:?}");
        assert_eq!(count(&names, "rill-io-"), 2, "io workers in {names:?}");
        partition.shutdown().await;
    });
    let seen = threads.lock().unwrap().clone();
    assert!(!seen.is_empty());
    assert!(
        count(&seen.iter().cloned().collect::<Vec<_>>(), "rill-cpu-") == seen.len(),
        "the engine ran on {seen:?}"
    );
    let _ = Duration::ZERO;
}
