//! The BPMN engine alone, on in-memory state: how many instances of
//! `two-rest-calls.bpmn` per second one core runs (create, then activate and complete
//! each of the two jobs), or, with `--process fan-out`, instances of
//! `bench/processes/fan-out-call.bpmn`: a parallel multi-instance call activity over
//! `--items` items, each calling a start-to-end process (no jobs: an instance runs in
//! its create command), or, with `--process order-lines`, instances of
//! `bench/processes/order-lines.bpmn`: a parallel multi-instance service task over
//! `--items` order lines (a job each, collected into `checked`), then a call activity
//! whose child runs one job.
//!
//! `cargo run --release -p rill-bench --bin engine-bench -- --instances 200000`

use std::time::Instant;

use anyhow::{Context, bail};
use clap::Parser;
use rill_engine::BpmnEngine;
use rill_engine_api::{
    Engine, MemoryState, Overlay, ProcessingContext, ProcessingOutput, StateTxn,
};
use rill_protocol::{
    ActivateJobs, Blob, Command, CommandResponse, CreateProcessInstance, JsonValue, Key,
    PartitionId, Position, ProcessSelector, RecordValue, Resource, Timestamp,
};

/// The allocator the broker binary is expected to use as well.
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

const MODEL: &[u8] = include_bytes!("../../../engine/tests/fixtures/two-rest-calls.bpmn");
const FAN_OUT: &[u8] = include_bytes!("../../processes/fan-out-call.bpmn");
const ORDER_LINES: &[u8] = include_bytes!("../../processes/order-lines.bpmn");

#[derive(Parser, Debug)]
#[command(about = "Benchmark the BPMN engine alone on in-memory state")]
struct Args {
    /// Instances to run per mode.
    #[arg(long, default_value_t = 100_000)]
    instances: usize,
    /// Instances created before their jobs are worked on (instances in flight).
    #[arg(long, default_value_t = 1_000)]
    in_flight: usize,
    /// Jobs per activation command.
    #[arg(long, default_value_t = 32)]
    activate_batch: i32,
    /// `memory` (state written directly), `overlay` (one overlay per command, applied
    /// after it, as the broker does), or `both`.
    #[arg(long, default_value = "both")]
    mode: String,
    /// `two-rest-calls`, `fan-out` (a parallel multi-instance call activity), or
    /// `order-lines` (a parallel multi-instance service task, then a call activity).
    #[arg(long, default_value = "two-rest-calls")]
    process: String,
    /// Items of each fan-out or order-lines instance (inner instances).
    #[arg(long, default_value_t = 100)]
    items: usize,
}

type Output = ProcessingOutput<Command, CommandResponse>;

struct Driver {
    engine: BpmnEngine,
    state: MemoryState,
    overlay: bool,
    position: u64,
    now: i64,
    out: Output,
    commands: u64,
    records: u64,
}

impl Driver {
    fn new(overlay: bool) -> Driver {
        Driver {
            engine: BpmnEngine::default(),
            state: MemoryState::new(),
            overlay,
            position: 0,
            now: 1_700_000_000_000,
            out: Output::default(),
            commands: 0,
            records: 0,
        }
    }

    /// A driver with one resource deployed.
    fn deployed(overlay: bool, name: &str, model: &[u8]) -> anyhow::Result<Driver> {
        let mut driver = Driver::new(overlay);
        driver.run(&Command::Deploy {
            resources: vec![Resource {
                name: name.to_owned(),
                content: Blob(model.to_vec()),
            }],
        })?;
        Ok(driver)
    }

    fn run(&mut self, command: &Command) -> anyhow::Result<&Output> {
        self.position += 1;
        self.now += 1;
        let ctx = ProcessingContext {
            partition_id: PartitionId(1),
            partition_count: 1,
            position: Position(self.position),
            timestamp: Timestamp(self.now),
            engine_version: rill_protocol::version::ENGINE_VERSION_2,
            request: None,
            message_partition_count: 1,
            limits: Default::default(),
        };
        self.out.clear();
        if self.overlay {
            let mut overlay = Overlay::new(&self.state);
            self.engine
                .process(&ctx, &mut overlay, command, &mut self.out)?;
            let writes = overlay.into_writes();
            self.state.apply(writes);
        } else {
            let state: &mut dyn StateTxn = &mut self.state;
            self.engine.process(&ctx, state, command, &mut self.out)?;
        }
        self.commands += 1;
        self.records += self.out.records.len() as u64;
        if let Some(CommandResponse::Rejected(rejection)) = &self.out.response {
            bail!("{command:?} rejected: {}", rejection.reason);
        }
        Ok(&self.out)
    }

    /// Activates and completes every activatable job of `job_type`; returns how many.
    fn work_jobs(&mut self, job_type: &str, batch: i32) -> anyhow::Result<usize> {
        let activate = Command::ActivateJobs(ActivateJobs {
            job_type: job_type.to_owned(),
            worker: "bench".to_owned(),
            timeout: 300_000,
            max_jobs: batch,
            fetch_variables: Vec::new(),
        });
        let mut done = 0;
        loop {
            let keys: Vec<i64> = match &self.run(&activate)?.response {
                Some(CommandResponse::Accepted {
                    value: RecordValue::JobBatch(b),
                    ..
                }) => b.job_keys.clone(),
                other => bail!("unexpected activation response {other:?}"),
            };
            if keys.is_empty() {
                return Ok(done);
            }
            for key in keys {
                self.run(&Command::CompleteJob {
                    job_key: Key(key),
                    variables: JsonValue::empty_object(),
                    result: Default::default(),
                })?;
                done += 1;
            }
        }
    }
}

/// CPU time this thread has run, in seconds (Linux `/proc/thread-self/schedstat`),
/// so the figure means "on one core" even when other processes share the machine.
fn cpu_seconds() -> Option<f64> {
    let text = std::fs::read_to_string("/proc/thread-self/schedstat").ok()?;
    let nanos: f64 = text.split_whitespace().next()?.parse().ok()?;
    Some(nanos / 1e9)
}

/// Instances of `fan-out-call`: each one runs to its end in its create command.
fn bench_fan_out(mode: &str, args: &Args) -> anyhow::Result<()> {
    let mut driver = Driver::deployed(mode == "overlay", "fan-out-call.bpmn", FAN_OUT)?;
    let items: Vec<usize> = (1..=args.items).collect();
    let create = Command::CreateProcessInstance(CreateProcessInstance {
        process: ProcessSelector::ById {
            bpmn_process_id: "fan-out-call".to_owned(),
            version: None,
        },
        variables: JsonValue::from(serde_json::json!({ "items": items })),
        await_result: false,
        fetch_variables: Vec::new(),
        tags: Vec::new(),
    });
    let started = Instant::now();
    let cpu_started = cpu_seconds();
    for _ in 0..args.instances {
        driver.run(&create)?;
    }
    let elapsed = started.elapsed();
    let cpu = match (cpu_started, cpu_seconds()) {
        (Some(a), Some(b)) => b - a,
        _ => elapsed.as_secs_f64(),
    };
    let elements = (args.instances * args.items) as f64;
    println!(
        "mode={mode:<8} process=fan-out items={} instances={} wall={:.3}s cpu={cpu:.3}s \
         instances/cpu-s={:.1} cpu-us/item={:.2} records/item={:.1} state_entries_after={}",
        args.items,
        args.instances,
        elapsed.as_secs_f64(),
        args.instances as f64 / cpu,
        cpu * 1e6 / elements,
        driver.records as f64 / elements,
        driver.state.len(),
    );
    Ok(())
}

/// Instances of `order-lines`, in waves of about `--in-flight` line jobs: create, work
/// the line jobs (the body completes, the call activity starts its child), then work
/// the children's `dispatch` jobs. The cost is CPU time per order line.
fn bench_order_lines(mode: &str, args: &Args) -> anyhow::Result<()> {
    let mut driver = Driver::deployed(mode == "overlay", "order-lines.bpmn", ORDER_LINES)?;
    let lines: Vec<usize> = (1..=args.items).collect();
    let create = Command::CreateProcessInstance(CreateProcessInstance {
        process: ProcessSelector::ById {
            bpmn_process_id: "order-lines".to_owned(),
            version: None,
        },
        variables: JsonValue::from(serde_json::json!({ "lines": lines })),
        await_result: false,
        fetch_variables: Vec::new(),
        tags: Vec::new(),
    });
    let per_wave = (args.in_flight / args.items.max(1)).max(1);
    let started = Instant::now();
    let cpu_started = cpu_seconds();
    let (mut created, mut line_jobs, mut dispatched) = (0, 0, 0);
    while created < args.instances {
        let wave = per_wave.min(args.instances - created);
        for _ in 0..wave {
            driver.run(&create)?;
        }
        created += wave;
        line_jobs += driver.work_jobs("check-line", args.activate_batch)?;
        dispatched += driver.work_jobs("dispatch", args.activate_batch)?;
    }
    let elapsed = started.elapsed();
    let cpu = match (cpu_started, cpu_seconds()) {
        (Some(a), Some(b)) => b - a,
        _ => elapsed.as_secs_f64(),
    };
    if line_jobs != args.instances * args.items || dispatched != args.instances {
        bail!(
            "expected {} line jobs and {} dispatch jobs, got {line_jobs} and {dispatched}",
            args.instances * args.items,
            args.instances
        );
    }
    let elements = (args.instances * args.items) as f64;
    println!(
        "mode={mode:<8} process=order-lines items={} instances={} wall={:.3}s cpu={cpu:.3}s \
         instances/cpu-s={:.1} cpu-us/item={:.2} records/item={:.1} state_entries_after={}",
        args.items,
        args.instances,
        elapsed.as_secs_f64(),
        args.instances as f64 / cpu,
        cpu * 1e6 / elements,
        driver.records as f64 / elements,
        driver.state.len(),
    );
    Ok(())
}

fn bench(mode: &str, args: &Args) -> anyhow::Result<()> {
    let mut driver = Driver::deployed(mode == "overlay", "two-rest-calls.bpmn", MODEL)?;
    let create = Command::CreateProcessInstance(CreateProcessInstance {
        process: ProcessSelector::ById {
            bpmn_process_id: "two-rest-calls".to_owned(),
            version: None,
        },
        variables: JsonValue::empty_object(),
        await_result: false,
        fetch_variables: Vec::new(),
        tags: Vec::new(),
    });
    let started = Instant::now();
    let cpu_started = cpu_seconds();
    let mut created = 0;
    let mut jobs = 0;
    while created < args.instances {
        let wave = args.in_flight.min(args.instances - created);
        for _ in 0..wave {
            driver.run(&create)?;
        }
        created += wave;
        jobs += driver.work_jobs("restCall", args.activate_batch)?; // first jobs
        jobs += driver.work_jobs("restCall", args.activate_batch)?; // second jobs
    }
    let elapsed = started.elapsed();
    let cpu = match (cpu_started, cpu_seconds()) {
        (Some(a), Some(b)) => b - a,
        _ => elapsed.as_secs_f64(),
    };
    if jobs != 2 * args.instances {
        bail!("expected {} completed jobs, got {jobs}", 2 * args.instances);
    }
    let live = driver.state.len();
    let secs = elapsed.as_secs_f64();
    println!(
        "mode={mode:<8} instances={} wall={secs:.3}s cpu={cpu:.3}s instances/s(wall)={:.0} \
         instances/cpu-s={:.0} commands/cpu-s={:.0} records/cpu-s={:.0} state_entries_after={live}",
        args.instances,
        args.instances as f64 / secs,
        args.instances as f64 / cpu,
        driver.commands as f64 / cpu,
        driver.records as f64 / cpu,
    );
    Ok(())
}

fn main() -> anyhow::Result<()> {
    let args = Args::parse();
    let modes: Vec<&str> = match args.mode.as_str() {
        "both" => vec!["memory", "overlay"],
        "memory" => vec!["memory"],
        "overlay" => vec!["overlay"],
        other => bail!("unknown mode '{other}' (memory, overlay, both)"),
    };
    for mode in modes {
        match args.process.as_str() {
            "two-rest-calls" => bench(mode, &args),
            "fan-out" => bench_fan_out(mode, &args),
            "order-lines" => bench_order_lines(mode, &args),
            other => bail!("unknown process '{other}' (two-rest-calls, fan-out, order-lines)"),
        }
        .with_context(|| format!("mode {mode}"))?;
    }
    Ok(())
}
