//! The format of everything a broker keeps under its data directory: raft log entries,
//! engine state and records, snapshots, the cluster configuration. A broker refuses to
//! start on a directory written in another format instead of misreading it (see
//! docs/decisions/data-format.md).

use std::io::Write;
use std::path::Path;

/// Raised whenever the encoding of anything stored changes (a field added to a record
/// or a state value, a new column family layout…).
pub const DATA_FORMAT: u32 = 4;

const MARKER: &str = "DATA_FORMAT";

/// Checks that `directory` (which exists) holds data in [`DATA_FORMAT`], or nothing yet,
/// in which case it is marked as holding that format. The error names the directory,
/// both formats and what to do.
pub fn prepare_data_directory(directory: &Path, rill_version: &str) -> Result<(), String> {
    let marker = directory.join(MARKER);
    match std::fs::read_to_string(&marker) {
        Ok(text) => match text.trim().parse::<u32>() {
            Ok(found) if found == DATA_FORMAT => Ok(()),
            Ok(found) => Err(refusal(
                directory,
                &format!("data in format {found}"),
                rill_version,
            )),
            Err(_) => Err(format!(
                "{} does not hold a data format number (it holds {:?}); restore it or \
                 remove the data directory",
                marker.display(),
                text.trim()
            )),
        },
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            if holds_data(directory)? {
                let written_by = "data written by a Rill that did not mark its data format";
                return Err(refusal(directory, written_by, rill_version));
            }
            write_marker(directory, &marker)
        }
        Err(e) => Err(format!("cannot read {}: {e}", marker.display())),
    }
}

fn refusal(directory: &Path, found: &str, rill_version: &str) -> String {
    format!(
        "the data directory {} holds {found}, and Rill {rill_version} reads data \
         format {DATA_FORMAT} only: start this broker with an empty data.directory (a \
         broker that joins a running cluster gets its partitions from the other replicas), \
         or run the Rill version that wrote it",
        directory.display()
    )
}

/// `lost+found` is what a freshly formatted volume (a new PersistentVolumeClaim) holds.
fn holds_data(directory: &Path) -> Result<bool, String> {
    let entries = std::fs::read_dir(directory).map_err(|e| {
        format!(
            "cannot list the data directory {}: {e}",
            directory.display()
        )
    })?;
    Ok(entries
        .flatten()
        .any(|entry| entry.file_name() != "lost+found"))
}

/// Written durably before anything else goes into the directory.
fn write_marker(directory: &Path, marker: &Path) -> Result<(), String> {
    let fail = |what: &str, e: std::io::Error| format!("cannot {what} {}: {e}", marker.display());
    let temporary = marker.with_extension("tmp");
    let mut out = std::fs::File::create(&temporary).map_err(|e| fail("write", e))?;
    out.write_all(format!("{DATA_FORMAT}\n").as_bytes())
        .and_then(|()| out.sync_all())
        .map_err(|e| fail("write", e))?;
    std::fs::rename(&temporary, marker).map_err(|e| fail("replace", e))?;
    std::fs::File::open(directory)
        .and_then(|d| d.sync_all())
        .map_err(|e| fail("sync the directory of", e))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_empty_directory_or_a_fresh_volume_is_marked_and_then_accepted() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir(dir.path().join("lost+found")).unwrap();
        prepare_data_directory(dir.path(), "0.1.0").unwrap();
        let marker = std::fs::read_to_string(dir.path().join(MARKER)).unwrap();
        assert_eq!(marker.trim(), DATA_FORMAT.to_string());
        std::fs::create_dir(dir.path().join("partition-1")).unwrap();
        prepare_data_directory(dir.path(), "0.1.0").unwrap();
    }

    #[test]
    fn data_without_a_marker_or_in_another_format_is_refused_and_left_alone() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir(dir.path().join("partition-1")).unwrap();
        let error = prepare_data_directory(dir.path(), "0.1.0").unwrap_err();
        assert!(error.contains("did not mark its data format"), "{error}");
        assert!(error.contains("data.directory"), "{error}");
        assert!(!dir.path().join(MARKER).exists());

        std::fs::write(dir.path().join(MARKER), format!("{}\n", DATA_FORMAT + 1)).unwrap();
        let error = prepare_data_directory(dir.path(), "0.1.0").unwrap_err();
        assert!(
            error.contains(&format!("format {}", DATA_FORMAT + 1)),
            "{error}"
        );
        assert!(
            error.contains(&format!("reads data format {DATA_FORMAT} only")),
            "{error}"
        );

        std::fs::write(dir.path().join(MARKER), "banana").unwrap();
        let error = prepare_data_directory(dir.path(), "0.1.0").unwrap_err();
        assert!(error.contains("banana"), "{error}");
    }
}
