//! The raft log on a disk that fills up (a small tmpfs; mounting it needs root): an append
//! that fails with ENOSPC is retried and reported through `WriteFaults`, never returned
//! to openraft, and completes once the tmpfs is grown, with every entry durable and
//! readable (docs/decisions/disk-full.md).

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use openraft::storage::RaftLogStorageExt;
use openraft::{EntryPayload, RaftLogReader};
use rill_protocol::Term;
use rill_raft::{Entry, EntryData, LogStore, log_id};
use tokio::runtime::Handle;

/// A tmpfs on `mount_point`, unmounted when dropped.
struct Tmpfs(PathBuf);

impl Tmpfs {
    fn mount(mount_point: &Path, megabytes: u32) -> Tmpfs {
        std::fs::create_dir_all(mount_point).expect("mount point");
        mount(
            Command::new("mount")
                .args(["-t", "tmpfs", "-o", &format!("size={megabytes}m"), "tmpfs"])
                .arg(mount_point),
        );
        Tmpfs(mount_point.to_path_buf())
    }

    fn resize(&self, megabytes: u32) {
        mount(
            Command::new("mount")
                .args(["-o", &format!("remount,size={megabytes}m")])
                .arg(&self.0),
        );
    }
}

impl Drop for Tmpfs {
    fn drop(&mut self) {
        let _ = Command::new("umount").arg("-l").arg(&self.0).status();
    }
}

fn mount(command: &mut Command) {
    let output = command.output().expect("run mount");
    assert!(
        output.status.success(),
        "{command:?} failed (this test mounts a tmpfs and needs root): {}",
        String::from_utf8_lossy(&output.stderr)
    );
}

/// An entry of 100 KB that does not compress.
fn entry(index: u64) -> Entry {
    let mut x = index;
    let bytes: Vec<u8> = (0..100_000)
        .map(|_| {
            x = x
                .wrapping_mul(6_364_136_223_846_793_005)
                .wrapping_add(1_442_695_040_888_963_407);
            (x >> 56) as u8
        })
        .collect();
    Entry {
        log_id: log_id(Term(1), 0, index),
        payload: EntryPayload::Normal(EntryData(bytes.into())),
    }
}

const ENTRIES: u64 = 300;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_append_on_a_full_disk_waits_for_room_and_loses_nothing() {
    let dir = tempfile::tempdir().expect("tempdir");
    let volume = Tmpfs::mount(&dir.path().join("volume"), 16);
    let mut store = LogStore::open(&volume.0.join("log"), Handle::current()).expect("open");
    let faults = store.faults();

    // 30 MB of entries on a 16 MB disk, ten at a time.
    let appending = tokio::spawn(async move {
        for first in (1..=ENTRIES).step_by(10) {
            let entries: Vec<Entry> = (first..first + 10).map(entry).collect();
            store
                .blocking_append(entries)
                .await
                .expect("an append never fails for a full disk");
        }
        store
    });
    let deadline = Instant::now() + Duration::from_secs(60);
    let failing = loop {
        if let Some(failing) = faults.failing() {
            break failing;
        }
        assert!(!appending.is_finished(), "30 MB fit on a 16 MB tmpfs?");
        assert!(Instant::now() < deadline, "no write failed");
        tokio::time::sleep(Duration::from_millis(20)).await;
    };
    assert!(failing.contains("No space left on device"), "{failing}");
    tokio::time::sleep(Duration::from_secs(1)).await;
    assert!(!appending.is_finished(), "the append waits for room");

    volume.resize(512);
    let mut store = tokio::time::timeout(Duration::from_secs(60), appending)
        .await
        .expect("the appends finish once there is room")
        .expect("the append task");
    assert_eq!(faults.failing(), None, "healthy again");
    assert!(faults.retries() > 0);
    let indexes: Vec<u64> = store
        .try_get_log_entries(1..=ENTRIES)
        .await
        .expect("read back")
        .iter()
        .map(|e| e.log_id.index)
        .collect();
    assert_eq!(indexes, (1..=ENTRIES).collect::<Vec<_>>());
    drop(store);
}
