//! Each broker's own copy of the cluster configuration, on disk: the highest version it
//! has seen. It tells a restarting broker which partitions it holds before it hears from
//! any peer (a broker added by a change, or one whose replicas moved off, must not fall
//! back to the placement of its static settings).

use std::io::Write;
use std::path::{Path, PathBuf};

use super::configuration::ClusterConfiguration;

/// `<data.directory>/cluster/configuration.json`.
pub fn path(data_directory: &Path) -> PathBuf {
    data_directory.join("cluster").join("configuration.json")
}

/// The stored configuration; `Ok(None)` when there is none yet.
pub fn load(file: &Path) -> Result<Option<ClusterConfiguration>, String> {
    match std::fs::read_to_string(file) {
        Ok(text) => ClusterConfiguration::from_json(&text)
            .map(Some)
            .map_err(|e| format!("{}: {e}", file.display())),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(format!("cannot read {}: {e}", file.display())),
    }
}

/// Replaces the stored configuration atomically and durably: a crash leaves the old
/// file or the new one, never a mix.
pub fn save(file: &Path, config: &ClusterConfiguration) -> Result<(), String> {
    let fail = |what: &str, e: std::io::Error| format!("cannot {what} {}: {e}", file.display());
    let dir = file.parent().unwrap_or(Path::new("."));
    std::fs::create_dir_all(dir).map_err(|e| fail("create the directory of", e))?;
    let temporary = file.with_extension("json.tmp");
    let mut out = std::fs::File::create(&temporary).map_err(|e| fail("write", e))?;
    out.write_all(config.to_json().as_bytes())
        .and_then(|()| out.sync_all())
        .map_err(|e| fail("write", e))?;
    std::fs::rename(&temporary, file).map_err(|e| fail("replace", e))?;
    std::fs::File::open(dir)
        .and_then(|d| d.sync_all())
        .map_err(|e| fail("sync the directory of", e))
}

#[cfg(test)]
mod tests {
    use rill_config::RillConfig;

    use super::*;

    #[test]
    fn a_saved_configuration_is_loaded_back_and_a_missing_one_is_none() {
        let dir = tempfile::tempdir().unwrap();
        let file = path(dir.path());
        assert_eq!(load(&file).unwrap(), None);
        let config = ClusterConfiguration::initial(&RillConfig::default());
        save(&file, &config).unwrap();
        let newer = config.start_change(Vec::new(), 5);
        save(&file, &newer).unwrap();
        assert_eq!(load(&file).unwrap(), Some(newer));
        std::fs::write(&file, "{").unwrap();
        assert!(load(&file).unwrap_err().contains("configuration.json"));
    }
}
