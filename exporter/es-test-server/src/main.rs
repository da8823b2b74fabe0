//! `rill-es-test-server [--port N]`: runs the test server standalone, e.g. as the
//! export target of the benchmark's history-on variant. Stops on Ctrl-C.

use std::net::SocketAddr;

use rill_es_test_server::TestServer;

/// The store holds every document as a `serde_json::Value`: many small allocations, which
/// glibc's malloc made the server's main cost as a benchmark's export target.
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

#[tokio::main]
async fn main() -> std::io::Result<()> {
    // Transparent huge pages cost more than they give here: every first touch of a fresh
    // 2 MiB region zeroes all of it, and the server keeps every document in memory (a
    // third of its CPU in a benchmark run). `MIMALLOC_ALLOW_THP=1` keeps them.
    #[cfg(target_os = "linux")]
    if std::env::var("MIMALLOC_ALLOW_THP").as_deref() != Ok("1") {
        let _ = nix::sys::prctl::set_thp_disable(true);
    }
    let mut args = std::env::args().skip(1);
    let mut port: u16 = 0;
    while let Some(arg) = args.next() {
        match (arg.as_str(), args.next()) {
            ("--port", Some(value)) => {
                port = value.parse().map_err(|_| {
                    std::io::Error::other(format!("--port: '{value}' is not a port number"))
                })?;
            }
            _ => {
                return Err(std::io::Error::other(
                    "usage: rill-es-test-server [--port N]",
                ));
            }
        }
    }
    let server = TestServer::start_on(SocketAddr::from(([127, 0, 0, 1], port))).await?;
    println!("{}", server.url());
    tokio::signal::ctrl_c().await?;
    Ok(())
}
