//! Scheduled backups and retention (`backup.schedule`, `backup.retention.*`).
//!
//! ```text
//!   every broker: wait for the schedule's next time T (UTC, wall clock)
//!     └─ only the broker whose replica leads partition 1:
//!          take backup T (epoch seconds)  ── as POST /actuator/backups {"backupId": T}
//!          then delete what the retention no longer keeps
//! ```
//! The ids are the schedule's times, the same on every broker and growing: when
//! leadership moves at a tick and two brokers both ask for backup T, the second is
//! refused (a backup id must be above the latest) and nothing is taken twice. A manual
//! backup with an id above the current epoch seconds makes the scheduled ones refused
//! until the clock passes it (the log says so).

use std::sync::Arc;
use std::time::Duration;

use rill_config::{BackupConfig, BackupRetentionConfig, CronSchedule};
use rill_protocol::PartitionId;

use super::api::{BackupPartitions, blocking, take_backup};
use super::store::{BackupState, Store, overall_state};
use crate::metrics::BackupMetrics;

/// Starts the scheduler on the current runtime if `backup.schedule` is set (and a store
/// configured: validation refuses a schedule without one).
pub fn spawn(
    config: &BackupConfig,
    store: Option<Store>,
    partitions: Arc<dyn BackupPartitions>,
    metrics: BackupMetrics,
) -> Option<tokio::task::JoinHandle<()>> {
    let text = config.schedule.as_deref()?;
    let store = store?;
    let schedule = match CronSchedule::parse(text) {
        Ok(schedule) => schedule,
        Err(e) => {
            tracing::error!(error = %e, "backup.schedule cannot be read; no scheduled backups");
            return None;
        }
    };
    tracing::info!(schedule = text, "scheduled backups on");
    let retention = config.retention.clone();
    Some(tokio::spawn(run(
        schedule, retention, store, partitions, metrics,
    )))
}

fn now_millis() -> i64 {
    crate::clock::now().millis()
}

async fn run(
    schedule: CronSchedule,
    retention: BackupRetentionConfig,
    store: Store,
    partitions: Arc<dyn BackupPartitions>,
    metrics: BackupMetrics,
) {
    let mut last = now_millis().div_euclid(1000);
    loop {
        let Some(next) = schedule.next_after(last) else {
            tracing::warn!("backup.schedule has no time in the next five years");
            return;
        };
        // Short sleeps, so that a wall clock that jumps is followed.
        loop {
            let wait = next * 1000 - now_millis();
            if wait <= 0 {
                break;
            }
            tokio::time::sleep(Duration::from_millis(wait.min(30_000) as u64)).await;
        }
        last = next;
        if !partitions.leads(PartitionId(1)) {
            continue;
        }
        match take_backup(store.clone(), partitions.clone(), next as u64).await {
            Ok(count) => {
                metrics.operation("schedule", true);
                tracing::info!(backup = next, "scheduled backup started");
                // The retention counts this backup once it completed: wait for it, at
                // most until the next time of the schedule.
                let until = schedule.next_after(next).unwrap_or(next + 3600) * 1000;
                settle(&store, next as u64, count, until).await;
            }
            Err(refused) => {
                metrics.operation("schedule", false);
                tracing::warn!(backup = next, reason = %refused.reason(), "scheduled backup not taken");
            }
        }
        if retention.window.is_none() && retention.max_backups == 0 {
            continue;
        }
        let store = store.clone();
        let retention = retention.clone();
        let metrics = metrics.clone();
        let count = partitions.partition_count();
        let applied = tokio::task::spawn_blocking(move || {
            apply_retention(&store, count, &retention, &metrics, now_millis())
        })
        .await;
        match applied {
            Ok(Ok(deleted)) if !deleted.is_empty() => {
                tracing::info!(?deleted, "backups past the retention deleted")
            }
            Ok(Ok(_)) => {}
            Ok(Err(e)) => tracing::warn!(error = %e, "the backup retention cannot read the store"),
            Err(e) => tracing::warn!(error = %e, "the backup retention stopped"),
        }
    }
}

/// Waits until backup `id` is no longer in progress, or the wall clock reaches
/// `until_ms`.
async fn settle(store: &Store, id: u64, partition_count: u16, until_ms: i64) {
    while now_millis() < until_ms {
        let store = store.clone();
        let state = blocking(move || {
            super::api::backup_json(store.as_ref(), id, partition_count).map(|(state, _)| state)
        })
        .await;
        match state {
            Ok(BackupState::InProgress) => {}
            Ok(_) | Err(_) => return,
        }
        tokio::time::sleep(Duration::from_millis(250)).await;
    }
}

/// A backup as the retention sees it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Summary {
    pub id: u64,
    pub state: BackupState,
    /// When its checkpoint was taken (epoch milliseconds); the earliest part's.
    pub created_at: i64,
}

/// Deletes the backups the retention does not keep; returns their ids.
fn apply_retention(
    store: &Store,
    partition_count: u16,
    retention: &BackupRetentionConfig,
    metrics: &BackupMetrics,
    now_ms: i64,
) -> Result<Vec<u64>, String> {
    let mut backups = Vec::new();
    for id in store.backup_ids()? {
        let mut partitions: Vec<u16> = (1..=partition_count).collect();
        for p in store.partitions(id)? {
            if !partitions.contains(&p) {
                partitions.push(p);
            }
        }
        let mut states = Vec::new();
        let mut created_at = i64::MAX;
        for p in partitions {
            let status = store.status(id, p)?;
            if let Some(status) = &status {
                created_at = created_at.min(status.created_at);
            }
            states.push(status.map(|s| s.state));
        }
        backups.push(Summary {
            id,
            state: overall_state(&states),
            created_at,
        });
    }
    let mut deleted = Vec::new();
    for id in to_delete(&backups, retention, now_ms) {
        match store.delete(id) {
            Ok(_) => {
                metrics.operation("delete", true);
                deleted.push(id);
            }
            Err(e) => {
                metrics.operation("delete", false);
                tracing::warn!(backup = id, error = %e, "cannot delete a backup past the retention");
            }
        }
    }
    Ok(deleted)
}

/// Which backups the retention deletes: the newest completed backup is always kept,
/// and so is every backup newer than it (some may still be in progress). An older one
/// is deleted if it was created before the window, or if `max-backups` is set and it is
/// not among that many newest completed backups.
pub(crate) fn to_delete(
    backups: &[Summary],
    retention: &BackupRetentionConfig,
    now_ms: i64,
) -> Vec<u64> {
    let mut completed: Vec<u64> = backups
        .iter()
        .filter(|b| b.state == BackupState::Completed)
        .map(|b| b.id)
        .collect();
    completed.sort_unstable_by(|a, b| b.cmp(a));
    let Some(&newest) = completed.first() else {
        return Vec::new();
    };
    let max = retention.max_backups as usize;
    let kept_by_count: &[u64] = if max == 0 {
        &[]
    } else {
        &completed[..max.min(completed.len())]
    };
    let horizon = retention
        .window
        .map(|window| now_ms.saturating_sub(window.as_millis() as i64));
    let mut ids: Vec<u64> = backups
        .iter()
        .filter(|b| b.id < newest && b.state != BackupState::InProgress)
        .filter(|b| {
            let too_old = horizon.is_some_and(|horizon| b.created_at < horizon);
            let beyond_count = max > 0 && !kept_by_count.contains(&b.id);
            too_old || beyond_count
        })
        .map(|b| b.id)
        .collect();
    ids.sort_unstable();
    ids
}

#[cfg(test)]
mod tests {
    use super::*;

    fn backup(id: u64, state: BackupState, created_at: i64) -> Summary {
        Summary {
            id,
            state,
            created_at,
        }
    }

    #[test]
    fn retention_keeps_the_newest_completed_and_deletes_by_count_or_age() {
        use BackupState::*;
        let backups = [
            backup(10, Completed, 1_000),
            backup(20, Failed, 2_000),
            backup(30, Completed, 3_000),
            backup(40, Completed, 4_000),
            backup(50, InProgress, 5_000),
        ];
        let count = |max_backups| BackupRetentionConfig {
            window: None,
            max_backups,
        };
        assert_eq!(to_delete(&backups, &count(0), 6_000), Vec::<u64>::new());
        assert_eq!(to_delete(&backups, &count(2), 6_000), vec![10, 20]);
        assert_eq!(to_delete(&backups, &count(1), 6_000), vec![10, 20, 30]);
        let window = |millis| BackupRetentionConfig {
            window: Some(Duration::from_millis(millis)),
            max_backups: 0,
        };
        // Older than 2.5 s at 6 s: 10, 20 and 30; 40 is the newest completed.
        assert_eq!(to_delete(&backups, &window(2_500), 6_000), vec![10, 20, 30]);
        // Even past the window the newest completed stays, and the one in progress.
        assert_eq!(to_delete(&backups, &window(1), 60_000), vec![10, 20, 30]);
        // Nothing completed: nothing deleted.
        let failed = [backup(1, Failed, 0), backup(2, Incomplete, 0)];
        assert_eq!(to_delete(&failed, &count(1), 60_000), Vec::<u64>::new());
    }
}
