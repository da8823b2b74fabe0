//! First-page latency of process instance searches over a partition's history store
//! holding many retained instances (issue 22's bar: 1,000,000 instances, filtered by
//! process and state, first page in ≤ 50 ms).
//!
//! Fills a real partition state database (RocksDB, the `history` column family) through
//! the broker's own writer — `HistoryWriter` fed with the process records a partition
//! applies, written with `CfHistory` in one `WriteBatch` per applied batch, as
//! `broker/src/processor.rs` does — then asks the query the gateway sends for a first
//! page through the broker's read path (`rill_broker::answer_history`) and reports the
//! latency distribution.
//!
//! `cargo run --release -p rill-bench --bin history-bench -- --help`

use std::path::PathBuf;
use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail};
use clap::Parser;
use rill_broker::{CfHistory, answer_history};
use rill_history::HistoryWriter;
use rill_protocol::history::{
    Condition, FieldValue, ProcessInstanceField as F, ProcessInstanceSearch, SortBy,
};
use rill_protocol::value::{BpmnElementType, BpmnEventType, ProcessInstanceRecord};
use rill_protocol::{
    Intent, Key, PartitionId, Position, Query, QueryResult, Record, RecordType, RecordValue,
    RejectionType, Timestamp,
};
use rill_raft::StateStore;

#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

#[derive(Parser)]
struct Args {
    /// Process instances in the store.
    #[arg(long, default_value_t = 1_000_000)]
    instances: u64,
    /// Distinct BPMN process ids the instances are spread over.
    #[arg(long, default_value_t = 20)]
    processes: u64,
    /// Instances per applied batch (one RocksDB write each).
    #[arg(long, default_value_t = 1_000)]
    batch: u64,
    /// Timed searches per query shape (after 10 untimed ones).
    #[arg(long, default_value_t = 200)]
    repeat: usize,
    /// Items per page (the gateway's default page asks each partition for 100).
    #[arg(long, default_value_t = 100)]
    page: u32,
    /// Where to put the database (default: a temporary directory under /var/tmp, removed
    /// at the end). An existing store filled by an earlier run is searched as it is.
    #[arg(long)]
    dir: Option<PathBuf>,
}

const PARTITION: PartitionId = PartitionId(1);

/// How instance `n` finishes (`None`: it stays active): 70 % complete, 20 % stay active,
/// 10 % are terminated, spread evenly over the key range.
fn fate(n: u64) -> Option<Intent> {
    match n % 10 {
        0 | 3 => None,
        5 => Some(Intent::ElementTerminated),
        _ => Some(Intent::ElementCompleted),
    }
}

/// The process of instance `n`: hashed, so that a process's instances are spread over the
/// key range and over every state.
fn process_of(n: u64, processes: u64) -> u64 {
    (n.wrapping_mul(0x9E37_79B9_7F4A_7C15) >> 32) % processes
}

fn process_id(process: u64) -> String {
    format!("process-{process}")
}

fn record(intent: Intent, time: i64, n: u64, process: u64) -> Record {
    let id = process_id(process);
    Record {
        position: Position(n),
        source_record_position: None,
        key: Key::new(PARTITION, n),
        timestamp: Timestamp(time),
        record_type: RecordType::Event,
        value_type: rill_protocol::ValueType::ProcessInstance,
        intent,
        partition_id: PARTITION,
        rejection_type: RejectionType::NullVal,
        rejection_reason: String::new(),
        operation_reference: -1,
        broker_version: "bench".into(),
        value: RecordValue::ProcessInstance(ProcessInstanceRecord {
            bpmn_element_type: BpmnElementType::Process,
            element_id: id.clone(),
            bpmn_process_id: id,
            version: 1,
            process_definition_key: Key::new(PARTITION, 1 + process).get(),
            process_instance_key: Key::new(PARTITION, n).get(),
            flow_scope_key: -1,
            bpmn_event_type: BpmnEventType::Unspecified,
            parent_process_instance_key: -1,
            parent_element_instance_key: -1,
            tenant_id: "<default>".into(),
            root_process_instance_key: Key::new(PARTITION, n).get(),
            tags: Vec::new(),
            tree_path: None,
        }),
    }
}

fn fill(store: &StateStore, args: &Args) -> Result<Duration> {
    let started = Instant::now();
    let db = store.current();
    // A fixed origin (2026-01-01), one start every 2 ms: runs are alike.
    let origin = 1_767_225_600_000i64;
    let mut n = 1;
    while n <= args.instances {
        let cf = CfHistory::new(&db)?;
        let mut writer = HistoryWriter::new(&cf);
        let end = (n + args.batch).min(args.instances + 1);
        for i in n..end {
            let process = process_of(i, args.processes);
            let start = origin + 2 * i as i64;
            writer.index(&record(Intent::ElementActivating, start, i, process))?;
            if let Some(finish) = fate(i) {
                let took = 50 + (i % 97) as i64 * 37;
                writer.index(&record(finish, start + took, i, process))?;
            }
        }
        let mut batch = rocksdb::WriteBatch::default();
        cf.write(&mut batch, writer.into_writes());
        db.write(batch)?;
        n = end;
        if n % 100_000 < args.batch {
            eprintln!("  {} instances written", n - 1);
        }
    }
    db.db()
        .flush_cf(db.history_cf()?)
        .context("flush the history")?;
    Ok(started.elapsed())
}

struct Shape {
    name: &'static str,
    state: &'static str,
    sort: Vec<SortBy<F>>,
}

fn search(shape: &Shape, process: &str, page: u32) -> Query {
    let text = |s: &str| FieldValue::Text(s.to_owned());
    // What the gateway asks each partition for a first page (history_search.rs: the
    // sort made total by the key, `from + limit` items, counting to 10,000).
    let mut sort = shape.sort.clone();
    let descending = match sort.as_slice() {
        [only] if only.field == F::StartDate => only.descending,
        _ => false,
    };
    sort.push(SortBy {
        field: F::ProcessInstanceKey,
        descending,
    });
    Query::SearchProcessInstances(ProcessInstanceSearch {
        filter: vec![
            (F::ProcessDefinitionId, Condition::Eq(text(process))),
            (F::State, Condition::Eq(text(shape.state))),
        ],
        sort,
        after: None,
        limit: page,
        count_limit: rill_history::COUNT_LIMIT,
    })
}

fn percentile(sorted: &[Duration], p: f64) -> Duration {
    let at = ((sorted.len() as f64 - 1.0) * p).round() as usize;
    sorted[at.min(sorted.len() - 1)]
}

fn ms(d: Duration) -> String {
    format!("{:.2}", d.as_secs_f64() * 1000.0)
}

fn main() -> Result<()> {
    let args = Args::parse();
    let temp = match &args.dir {
        Some(_) => None,
        None => Some(
            tempfile::Builder::new()
                .prefix("history-bench")
                .tempdir_in("/var/tmp")?,
        ),
    };
    let dir = args.dir.clone().unwrap_or_else(|| {
        temp.as_ref()
            .map(|t| t.path().to_path_buf())
            .unwrap_or_default()
    });
    let store = StateStore::open(&dir.join("state"))?;
    let db = store.current();
    let cf = CfHistory::new(&db)?;
    let kept = rill_history::process_instance(&cf, Key::new(PARTITION, args.instances))?;
    if kept.is_none() {
        eprintln!(
            "filling {} instances over {} processes",
            args.instances, args.processes
        );
        let took = fill(&store, &args)?;
        println!(
            "filled {} instances in {:.1} s ({:.0}/s)",
            args.instances,
            took.as_secs_f64(),
            args.instances as f64 / took.as_secs_f64()
        );
    }
    let size: u64 = walk_size(&dir);
    println!("database size {:.0} MiB", size as f64 / (1 << 20) as f64);

    let shapes = [
        Shape {
            name: "process + ACTIVE, default sort (key)",
            state: "ACTIVE",
            sort: vec![],
        },
        Shape {
            name: "process + COMPLETED, default sort (key)",
            state: "COMPLETED",
            sort: vec![],
        },
        Shape {
            name: "process + COMPLETED, startDate ASC",
            state: "COMPLETED",
            sort: vec![SortBy {
                field: F::StartDate,
                descending: false,
            }],
        },
        Shape {
            name: "process + TERMINATED, startDate DESC",
            state: "TERMINATED",
            sort: vec![SortBy {
                field: F::StartDate,
                descending: true,
            }],
        },
        Shape {
            name: "process + COMPLETED, endDate DESC (reads every match)",
            state: "COMPLETED",
            sort: vec![SortBy {
                field: F::EndDate,
                descending: true,
            }],
        },
    ];
    println!(
        "{:<56} {:>6} {:>8} {:>9} {:>8} {:>8} {:>8}",
        "first page of", "items", "total", "more", "p50 ms", "p99 ms", "max ms"
    );
    for shape in &shapes {
        let mut times = Vec::with_capacity(args.repeat);
        let mut last = (0, 0, false);
        for round in 0..args.repeat + 10 {
            let process = process_id(round as u64 % args.processes);
            let query = search(shape, &process, args.page);
            let started = Instant::now();
            let answer = answer_history(&db, &query)?;
            let took = started.elapsed();
            let QueryResult::ProcessInstancePage(page) = answer else {
                bail!("not a page of process instances: {answer:?}");
            };
            if page.items.len() != args.page as usize
                || page.items.iter().any(|i| i.bpmn_process_id != process)
            {
                bail!("{}: wrong answer for {process}: {page:?}", shape.name);
            }
            last = (page.items.len(), page.total, page.more);
            if round >= 10 {
                times.push(took);
            }
        }
        times.sort();
        println!(
            "{:<56} {:>6} {:>8} {:>9} {:>8} {:>8} {:>8}",
            shape.name,
            last.0,
            last.1,
            last.2,
            ms(percentile(&times, 0.5)),
            ms(percentile(&times, 0.99)),
            ms(*times.last().expect("timed"))
        );
    }
    Ok(())
}

fn walk_size(dir: &std::path::Path) -> u64 {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return 0;
    };
    entries
        .flatten()
        .map(|e| match e.file_type() {
            Ok(t) if t.is_dir() => walk_size(&e.path()),
            _ => e.metadata().map(|m| m.len()).unwrap_or(0),
        })
        .sum()
}
