//! Transparent huge pages are turned off for the server processes: with the kernel's
//! `madvise` setting and mimalloc asking for them, every first touch of a fresh 2 MiB
//! region zeroed all of it, which cost more CPU than the work itself on a busy machine
//! (docs/decisions/memory.md has the measurements).

/// Turns transparent huge pages off for this process (Linux), unless
/// `MIMALLOC_ALLOW_THP=1` asks to keep them.
pub fn disable_transparent_huge_pages() {
    #[cfg(target_os = "linux")]
    if std::env::var("MIMALLOC_ALLOW_THP").as_deref() != Ok("1")
        && let Err(e) = nix::sys::prctl::set_thp_disable(true)
    {
        tracing::warn!(error = %e, "cannot turn transparent huge pages off");
    }
}
