//! A broker's log lines carry its node and partition from spans. (Its own test binary:
//! it installs the process's global subscriber.)

use std::io::Write;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use prometheus::Registry;
use rill_broker::testing::ListEngine;
use rill_broker::{BrokerNode, Role};
use rill_config::RillConfig;
use rill_protocol::{NodeId, PartitionId};

#[derive(Clone, Default)]
struct Captured(Arc<Mutex<Vec<u8>>>);

impl Write for Captured {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0.lock().unwrap().extend_from_slice(buf);
        Ok(buf.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

#[test]
fn partition_events_carry_the_node_and_the_partition() {
    let captured = Captured::default();
    let writer = captured.clone();
    tracing_subscriber::fmt()
        .with_ansi(false)
        .with_max_level(tracing::Level::INFO)
        .with_writer(move || writer.clone())
        .init();
    let dir = tempfile::tempdir().unwrap();
    let mut config = RillConfig::default();
    config.data.directory = dir.path().to_path_buf();
    config.cluster.partitions_count = 2;
    let addresses = [(NodeId(0), "127.0.0.1:1".to_owned())].into();
    let node = BrokerNode::start_with_exporters(
        config,
        &Registry::new(),
        rill_broker::single_node_transport(),
        rill_raft::RaftService::new(),
        addresses,
        |_| ListEngine,
        None,
    )
    .expect("node starts");
    let deadline = Instant::now() + Duration::from_secs(10);
    while !node.statuses().iter().all(|s| s.role == Role::Leader) {
        assert!(Instant::now() < deadline, "no leaders");
        std::thread::sleep(Duration::from_millis(20));
    }
    node.shutdown();
    let logs = String::from_utf8(captured.0.lock().unwrap().clone()).unwrap();
    for partition in [PartitionId(1), PartitionId(2)] {
        let span = format!("node{{node=0}}:partition{{partition={partition}}}");
        assert!(
            logs.lines()
                .any(|line| line.contains(&span) && line.contains("became leader")),
            "no 'became leader' in {span}:\n{logs}"
        );
    }
}
