//! `docs/configuration.md` is the generated reference, kept current by this test.
//! Regenerate with `UPDATE_DOCS=1 cargo test -p rill-config --test reference`.

use std::path::PathBuf;

#[test]
fn docs_configuration_md_is_up_to_date() {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../docs/configuration.md");
    let generated = rill_config::reference_markdown();
    if std::env::var_os("UPDATE_DOCS").is_some() {
        std::fs::write(&path, &generated).expect("write docs/configuration.md");
        return;
    }
    let on_disk = std::fs::read_to_string(&path).unwrap_or_default();
    assert!(
        on_disk == generated,
        "docs/configuration.md is out of date with the option schema; regenerate it with \
         `UPDATE_DOCS=1 cargo test -p rill-config --test reference`"
    );
}
