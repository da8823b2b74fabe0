//! One replica: commands in, answers, records and state out; errors; restart; overload.

mod common;

use std::sync::Arc;
use std::time::Duration;

use common::Cluster;
use rill_broker::Error;
use rill_broker::backup::BackupStore;
use rill_broker::testing::{ListCommand, ListQuery, ListQueryResult, ListResponse};
use rill_config::{FixedLimitConfig, LimitAlgorithm, RequestLimitConfig};
use rill_protocol::{Intent, PartitionId, Position, RecordType, RejectionType};

async fn single(tweak: impl Fn(&mut rill_broker::PartitionConfig)) -> Cluster {
    let mut cluster = Cluster::new(1, tweak);
    cluster.start_all().await;
    cluster.leader(Duration::from_secs(10)).await;
    cluster
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn commands_are_answered_in_order_with_dense_positions() {
    let cluster = single(|_| {}).await;
    let p = cluster.node(0);
    let mut last_ts = 0;
    for id in 1..=50u64 {
        match p.submit(ListCommand::Append { id: id * 10 }).await.unwrap() {
            ListResponse::Appended {
                seq,
                key,
                timestamp,
            } => {
                assert_eq!(seq, id);
                assert_eq!(key.partition(), PartitionId(1));
                assert_eq!(key.local(), id, "keys come from the counter in state");
                assert!(timestamp.millis() >= last_ts, "timestamps never go back");
                last_ts = timestamp.millis();
            }
            other => panic!("unexpected {other:?}"),
        }
    }
    let items = p
        .query(ListQuery::Items {
            from: 1,
            limit: 100,
        })
        .await
        .unwrap();
    assert_eq!(
        items,
        ListQueryResult::Items((1..=50).map(|i| i * 10).collect())
    );

    let records = p.read_records(Position(1), 1000).await.unwrap();
    assert_eq!(records.len(), 100);
    for (i, pair) in records.chunks(2).enumerate() {
        let (command, event) = (&pair[0], &pair[1]);
        assert_eq!(command.position, Position(2 * i as u64 + 1));
        assert_eq!(event.position, Position(2 * i as u64 + 2));
        assert_eq!(command.record_type, RecordType::Command);
        assert_eq!(command.source_record_position, None);
        assert_eq!(event.intent, Intent::Created);
        assert_eq!(event.source_record_position, Some(command.position));
        assert_eq!(event.timestamp, command.timestamp);
    }
    assert_eq!(p.status().last_position, Position(100));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_processing_error_rolls_back_and_writes_a_rejection() {
    let cluster = single(|_| {}).await;
    let p = cluster.node(0);
    assert!(matches!(
        p.submit(ListCommand::Append { id: 1 }).await.unwrap(),
        ListResponse::Appended { seq: 1, .. }
    ));
    let failed = p
        .submit(ListCommand::FailAfterWriting { id: 2 })
        .await
        .unwrap();
    assert!(
        matches!(&failed, ListResponse::Failed { reason } if reason.contains("fails on purpose")),
        "{failed:?}"
    );
    assert!(matches!(
        p.submit(ListCommand::Append { id: 3 }).await.unwrap(),
        ListResponse::Appended { seq: 2, .. }
    ));
    let poison = p
        .query(ListQuery::Raw {
            key: b"list/poison".to_vec(),
        })
        .await
        .unwrap();
    assert_eq!(
        poison,
        ListQueryResult::Raw(None),
        "the failed command's write was rolled back"
    );
    let records = p.read_records(Position(1), 100).await.unwrap();
    let rejection = &records[2];
    assert_eq!(rejection.position, Position(3));
    assert_eq!(rejection.record_type, RecordType::CommandRejection);
    assert_eq!(rejection.rejection_type, RejectionType::ProcessingError);
    assert_eq!(records.len(), 5);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_command_the_engine_answers_from_state_needs_no_log_entry() {
    let cluster = single(|_| {}).await;
    let p = cluster.node(0);
    for id in [10, 20] {
        p.submit(ListCommand::Append { id }).await.unwrap();
    }
    // The status is published after the replies of an apply round: wait for the
    // appends' records (a command and an event each).
    let before = status_reaching(p, Position(4)).await;
    assert_eq!(
        p.submit(ListCommand::Lookup { seq: 2 }).await.unwrap(),
        ListResponse::Found {
            seq: 2,
            id: Some(20)
        }
    );
    let after = p.status();
    assert_eq!(after.last_position, before.last_position, "no record");
    assert_eq!(after.applied_index, before.applied_index, "no log entry");
    // Not in state: it goes through the log, which answers it.
    assert_eq!(
        p.submit(ListCommand::Lookup { seq: 3 }).await.unwrap(),
        ListResponse::Found { seq: 3, id: None }
    );
    let expected = Position(before.last_position.get() + 1);
    assert_eq!(status_reaching(p, expected).await.last_position, expected);
}

/// The partition's status once its last position is at least `position`.
async fn status_reaching(
    p: &rill_broker::Partition<rill_broker::testing::ListEngine>,
    position: Position,
) -> rill_broker::PartitionStatus {
    let mut status = p.watch_status();
    let reached = status.wait_for(|s| s.last_position >= position);
    tokio::time::timeout(Duration::from_secs(10), reached)
        .await
        .expect("the status reaches the position in time")
        .expect("the partition is running")
        .clone()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn restart_keeps_state_and_applies_nothing_twice() {
    let mut cluster = single(|_| {}).await;
    for id in 1..=30 {
        cluster
            .node(0)
            .submit(ListCommand::Append { id })
            .await
            .unwrap();
    }
    let before = cluster.node(0).state_digest().await.unwrap();
    cluster.stop(0).await;
    cluster.start(0).await;
    cluster.leader(Duration::from_secs(10)).await;
    let p = cluster.node(0);
    assert_eq!(
        p.query(ListQuery::Count).await.unwrap(),
        ListQueryResult::Count(30)
    );
    let after = p.state_digest().await.unwrap();
    assert!(after.applied_index >= before.applied_index);
    match p.submit(ListCommand::Append { id: 31 }).await.unwrap() {
        ListResponse::Appended { seq, .. } => assert_eq!(seq, 31),
        other => panic!("{other:?}"),
    }
    let records = p.read_records(Position(59), 10).await.unwrap();
    let positions: Vec<u64> = records.iter().map(|r| r.position.get()).collect();
    assert_eq!(positions, vec![59, 60, 61, 62]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn answers_carry_the_term_of_the_leader() {
    let timeout = Duration::from_secs(5);
    let cluster = single(|_| {}).await;
    let p = cluster.node(0);
    let first_term = p.status().term;
    assert!(first_term > rill_protocol::Term::ZERO);
    let appended = p
        .submit_answered(ListCommand::Append { id: 1 }, timeout)
        .await
        .unwrap();
    assert_eq!(appended.term, first_term);
    status_reaching(p, Position(2)).await;
    // Answered from state, without an entry: the term of the leader that read it.
    let found = p
        .submit_answered(ListCommand::Lookup { seq: 1 }, timeout)
        .await
        .unwrap();
    assert_eq!(
        found,
        rill_broker::Answered {
            response: ListResponse::Found {
                seq: 1,
                id: Some(1)
            },
            term: first_term
        }
    );
}

/// Fires `count` commands at once and sorts the outcomes.
async fn burst(
    p: &rill_broker::Partition<rill_broker::testing::ListEngine>,
    count: u64,
    finish: bool,
) -> (usize, usize) {
    let p = Arc::new(p.clone());
    let mut tasks = Vec::new();
    for id in 0..count {
        let p = p.clone();
        tasks.push(tokio::spawn(async move {
            let command = if finish {
                ListCommand::Finish { id }
            } else {
                ListCommand::Append { id }
            };
            p.submit(command).await
        }));
    }
    let (mut ok, mut rejected) = (0, 0);
    for task in tasks {
        match task.await.unwrap() {
            Ok(ListResponse::Appended { .. }) => ok += 1,
            Err(Error::ResourceExhausted { .. }) => rejected += 1,
            other => panic!("unexpected outcome {other:?}"),
        }
    }
    (ok, rejected)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn overload_is_rejected_and_in_flight_stays_within_the_limit() {
    let cluster = single(|c| {
        c.flow_control = RequestLimitConfig {
            algorithm: LimitAlgorithm::Fixed,
            fixed: FixedLimitConfig { limit: 16 },
            ..RequestLimitConfig::default()
        };
    })
    .await;
    let p = cluster.node(0);
    let (ok, rejected) = burst(p, 2000, false).await;
    assert!(
        rejected > 0,
        "a burst of 2000 over a limit of 16 must be rejected in part"
    );
    assert!(ok >= 16, "at least the limit gets through: {ok}");
    assert_eq!(ok + rejected, 2000);
    let status = p.status();
    assert!(
        status.peak_inflight <= 16,
        "peak in flight {} above the limit",
        status.peak_inflight
    );
    let err = Error::ResourceExhausted {
        partition: PartitionId(1),
        limit: 16,
    };
    assert!(err.to_string().starts_with("RESOURCE_EXHAUSTED"));
    assert_eq!(err.code(), "RESOURCE_EXHAUSTED");
    // Everything admitted was applied exactly once.
    assert_eq!(
        p.query(ListQuery::Count).await.unwrap(),
        ListQueryResult::Count(ok as u64)
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn commands_that_finish_work_are_never_rejected() {
    let cluster = single(|c| {
        c.flow_control = RequestLimitConfig {
            algorithm: LimitAlgorithm::Fixed,
            fixed: FixedLimitConfig { limit: 1 },
            ..RequestLimitConfig::default()
        };
    })
    .await;
    let (ok, rejected) = burst(cluster.node(0), 300, true).await;
    assert_eq!((ok, rejected), (300, 0));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn aimd_rejects_a_burst_and_stays_within_its_limits() {
    let cluster = single(|c| c.flow_control = RequestLimitConfig::default()).await;
    let p = cluster.node(0);
    let (ok, rejected) = burst(p, 3000, false).await;
    assert!(
        rejected > 0,
        "3000 at once exceed AIMD's initial limit of 100"
    );
    let status = p.status();
    let aimd = RequestLimitConfig::default().aimd;
    assert!(
        status.peak_inflight <= aimd.max_limit,
        "{}",
        status.peak_inflight
    );
    assert!(status.limit >= aimd.min_limit && status.limit <= aimd.max_limit);
    assert_eq!(
        p.query(ListQuery::Count).await.unwrap(),
        ListQueryResult::Count(ok as u64)
    );
}

/// A command another partition delivers carries that partition's latest checkpoint id:
/// a partition that has not recorded it records it first, through its own log, and its
/// leader takes its part of that backup as if the backup's request had reached it; the
/// command is applied after the cut, and the answer carries the checkpoint id. The
/// backup's own checkpoint arriving later is refused as not above the latest.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_delivered_command_records_the_checkpoint_it_carries_first() {
    let timeout = Duration::from_secs(5);
    let backups = tempfile::tempdir().unwrap();
    let base = backups.path().to_owned();
    let cluster = single(move |config| {
        config.backup.store = rill_config::BackupStoreKind::Filesystem;
        config.backup.filesystem.base_path = Some(base.clone());
    })
    .await;
    let p = cluster.node(0);
    p.submit(ListCommand::Append { id: 1 }).await.unwrap();
    assert_eq!(p.status().checkpoint_id, 0);

    let (answered, checkpoint_id) = p
        .deliver_now(ListCommand::Append { id: 2 }, 5, timeout)
        .await
        .unwrap();
    assert!(
        matches!(answered.response, ListResponse::Appended { seq: 2, .. }),
        "{answered:?}"
    );
    assert_eq!(checkpoint_id, 5, "the answer carries the checkpoint");
    assert_eq!(p.status().checkpoint_id, 5);

    // The part of backup 5 was taken at the cut: after the first command's records,
    // before the delivered one's.
    let store = rill_broker::backup::FilesystemStore::new(backups.path());
    let deadline = std::time::Instant::now() + Duration::from_secs(20);
    let manifest = loop {
        if let Some(manifest) = store.manifest(5, 1).unwrap() {
            break manifest;
        }
        assert!(std::time::Instant::now() < deadline, "no part of backup 5");
        tokio::time::sleep(Duration::from_millis(50)).await;
    };
    assert_eq!(manifest.checkpoint_position, 2);
    let records = p.read_records(Position(3), 10).await.unwrap();
    assert_eq!(records.len(), 2, "the delivered command's records");
    assert!(records.iter().all(|r| r.position.get() > 2));

    // The backup's own checkpoint comes later: refused, with the same id as the latest.
    assert_eq!(
        p.checkpoint(5).await.unwrap(),
        rill_broker::backup::CheckpointOutcome::Refused { latest: 5 }
    );
    // A command carrying a lower id needs no checkpoint; the answer carries the latest.
    let (_, checkpoint_id) = p
        .deliver_now(ListCommand::Append { id: 3 }, 4, timeout)
        .await
        .unwrap();
    assert_eq!(checkpoint_id, 5);
    assert!(matches!(
        p.checkpoint(6).await.unwrap(),
        rill_broker::backup::CheckpointOutcome::Created { .. }
    ));
    let (_, checkpoint_id) = p
        .deliver_now(ListCommand::Append { id: 4 }, 0, timeout)
        .await
        .unwrap();
    assert_eq!(checkpoint_id, 6);
    assert_eq!(
        p.query(ListQuery::Count).await.unwrap(),
        ListQueryResult::Count(4)
    );
}

/// Two partitions in one process, delivering to each other through their couriers: a
/// send carries the sender's checkpoint id and the answer the receiver's, and each side
/// records the other's checkpoint before it applies the command or the acknowledgement.
/// The sender here has a backup store and takes its part when an acknowledgement brings
/// it the checkpoint; the receiver has none and only records the id.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sends_and_acknowledgements_carry_checkpoints_both_ways() {
    let backups = tempfile::tempdir().unwrap();
    let base = backups.path().to_owned();
    let sender = single(move |config| {
        config.backup.store = rill_config::BackupStoreKind::Filesystem;
        config.backup.filesystem.base_path = Some(base.clone());
    })
    .await;
    let receiver = single(|config| config.partition_id = PartitionId(2)).await;
    let (a, b) = (sender.node(0), receiver.node(0));
    let map = rill_broker::Partitions::new(
        [(PartitionId(1), a.clone()), (PartitionId(2), b.clone())].into(),
    );
    let router = Arc::new(rill_broker::LocalRouter::new(map));
    a.set_router(router.clone());
    b.set_router(router);
    a.submit(ListCommand::Append { id: 1 }).await.unwrap();

    // The receiver took backup 7; the sender has none. Its acknowledgement of what
    // the receiver took after its cut comes after the sender's own cut for backup 7.
    assert!(matches!(
        b.checkpoint(7).await.unwrap(),
        rill_broker::backup::CheckpointOutcome::Created { .. }
    ));
    a.submit(ListCommand::SendTo {
        partition: 2,
        id: 42,
    })
    .await
    .unwrap();
    let deadline = std::time::Instant::now() + Duration::from_secs(20);
    while a.query(ListQuery::Count).await.unwrap() != ListQueryResult::Count(2) {
        assert!(std::time::Instant::now() < deadline, "no acknowledgement");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert_eq!(
        b.query(ListQuery::Items { from: 1, limit: 10 })
            .await
            .unwrap(),
        ListQueryResult::Items(vec![42])
    );
    assert_eq!(a.status().checkpoint_id, 7);
    let store = rill_broker::backup::FilesystemStore::new(backups.path());
    let manifest = loop {
        if let Some(manifest) = store.manifest(7, 1).unwrap() {
            break manifest;
        }
        assert!(std::time::Instant::now() < deadline, "no part of backup 7");
        tokio::time::sleep(Duration::from_millis(50)).await;
    };
    // Append 1 and SendTo: three records before the cut; the acknowledgement after.
    assert_eq!(manifest.checkpoint_position, 3);
    let acknowledgement = a.read_records(Position(4), 10).await.unwrap();
    assert_eq!(acknowledgement.len(), 2, "{acknowledgement:?}");

    // The sender takes backup 9 first: the receiver records it before the command.
    assert!(matches!(
        a.checkpoint(9).await.unwrap(),
        rill_broker::backup::CheckpointOutcome::Created { .. }
    ));
    a.submit(ListCommand::SendTo {
        partition: 2,
        id: 43,
    })
    .await
    .unwrap();
    while a.query(ListQuery::Count).await.unwrap() != ListQueryResult::Count(3) {
        assert!(std::time::Instant::now() < deadline, "no acknowledgement");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert_eq!(b.status().checkpoint_id, 9);
    assert_eq!(a.status().checkpoint_id, 9);
    assert!(
        store.partitions(9).unwrap() == vec![1],
        "no store on the receiver: it takes no part"
    );
    // The receiver's checkpoint came before the command's records: after append 42's
    // two records, and append 43's two after it.
    let records = b.read_records(Position(1), 10).await.unwrap();
    assert_eq!(records.len(), 4, "two appends: {records:?}");
    let position = b
        .query(ListQuery::Raw {
            key: b"\x00core/checkpoint/position".to_vec(),
        })
        .await
        .unwrap();
    assert_eq!(
        position,
        ListQueryResult::Raw(Some(2u64.to_be_bytes().to_vec()))
    );
    assert_eq!(
        b.checkpoint(9).await.unwrap(),
        rill_broker::backup::CheckpointOutcome::Refused { latest: 9 }
    );
}
