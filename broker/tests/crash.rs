//! A real broker process killed with SIGKILL while commands are being written, then
//! restarted: every acknowledged command is there, none was applied twice.

use std::collections::{BTreeMap, BTreeSet};
use std::process::Stdio;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use parking_lot::Mutex;
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};
use tokio::net::TcpStream;
use tokio::process::{Child, Command};

async fn spawn_node(dir: &std::path::Path) -> (Child, String) {
    let mut child = Command::new(env!("CARGO_BIN_EXE_rill-partition-node"))
        .arg("--data-dir")
        .arg(dir)
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .kill_on_drop(true)
        .spawn()
        .expect("start rill-partition-node");
    let stdout = child.stdout.take().expect("stdout");
    let mut lines = BufReader::new(stdout).lines();
    let line = tokio::time::timeout(Duration::from_secs(60), lines.next_line())
        .await
        .expect("node ready in time")
        .expect("read stdout")
        .expect("node printed its address");
    let addr = line
        .strip_prefix("LISTENING ")
        .expect("LISTENING line")
        .to_owned();
    (child, addr)
}

/// The ids in the node's list, in order.
async fn items(addr: &str) -> Vec<u64> {
    let stream = TcpStream::connect(addr).await.unwrap();
    let (read, mut write) = stream.into_split();
    write.write_all(b"ITEMS 1 100000000\n").await.unwrap();
    let mut lines = BufReader::new(read).lines();
    let line = lines.next_line().await.unwrap().unwrap();
    let list = line.strip_prefix("ITEMS").expect("ITEMS reply").trim();
    if list.is_empty() {
        return Vec::new();
    }
    list.split(',').map(|s| s.parse().unwrap()).collect()
}

/// Writes pipelined APPENDs on one connection until the node goes away.
async fn writer(addr: String, next_id: Arc<AtomicU64>, acked: Arc<Mutex<BTreeMap<u64, u64>>>) {
    let Ok(stream) = TcpStream::connect(&addr).await else {
        return;
    };
    let (read, mut write) = stream.into_split();
    let mut lines = BufReader::new(read).lines();
    loop {
        let mut batch = String::new();
        for _ in 0..32 {
            let id = next_id.fetch_add(1, Ordering::Relaxed);
            batch.push_str(&format!("APPEND {id}\n"));
        }
        if write.write_all(batch.as_bytes()).await.is_err() {
            return;
        }
        for _ in 0..32 {
            let Ok(Some(line)) = lines.next_line().await else {
                return;
            };
            let words: Vec<&str> = line.split_whitespace().collect();
            if let ["OK", id, seq] = words.as_slice() {
                let (id, seq): (u64, u64) = (id.parse().unwrap(), seq.parse().unwrap());
                assert!(
                    acked.lock().insert(id, seq).is_none(),
                    "id {id} acknowledged twice"
                );
            }
        }
    }
}

fn check(items: &[u64], acked: &BTreeMap<u64, u64>) {
    let unique: BTreeSet<u64> = items.iter().copied().collect();
    assert_eq!(unique.len(), items.len(), "a command was applied twice");
    for (id, seq) in acked {
        assert_eq!(
            items.get(*seq as usize - 1),
            Some(id),
            "acknowledged id {id} (seq {seq}) is missing after the crash"
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sigkill_during_writes_loses_no_acknowledged_command() {
    let dir = tempfile::tempdir().unwrap();
    let next_id = Arc::new(AtomicU64::new(1));
    let acked = Arc::new(Mutex::new(BTreeMap::new()));
    for round in 0..3 {
        let (mut child, addr) = spawn_node(dir.path()).await;
        check(&items(&addr).await, &acked.lock());
        let before = acked.lock().len();
        let writers: Vec<_> = (0..4)
            .map(|_| tokio::spawn(writer(addr.clone(), next_id.clone(), acked.clone())))
            .collect();
        // Kill in the middle of the stream, once this round has been acknowledged a bit.
        let deadline = tokio::time::Instant::now() + Duration::from_secs(20);
        while acked.lock().len() < before + 2000 && tokio::time::Instant::now() < deadline {
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
        child.start_kill().expect("SIGKILL");
        child.wait().await.unwrap();
        for w in writers {
            w.await.unwrap();
        }
        let acked_now = acked.lock().len();
        assert!(acked_now > before, "round {round}: nothing acknowledged");
    }
    let (mut child, addr) = spawn_node(dir.path()).await;
    let items = items(&addr).await;
    let acked = acked.lock().clone();
    check(&items, &acked);
    assert!(items.len() >= acked.len());
    eprintln!(
        "{} acknowledged, {} applied after 3 crashes",
        acked.len(),
        items.len()
    );
    child.start_kill().unwrap();
    child.wait().await.unwrap();
}
