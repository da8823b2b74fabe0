//! `rill`: the one binary. Server roles (`standalone`), configuration tools, and client
//! commands against a running gateway.

mod backup;
mod client;
mod logging;
mod management;
mod memory;
mod search;
mod security;
mod server;

use std::path::PathBuf;

use anyhow::Result;
use clap::{Parser, Subcommand};
use rill_config::ConfigLoader;

use crate::client::{Client, ClientCommand, Output};
use crate::server::{ConfigArgs, validated};

/// mimalloc: the engine and the exporters allocate many small, short-lived values, and
/// glibc's malloc spent about a sixth of the broker's CPU on them under load.
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

#[derive(Debug, Parser)]
#[command(
    name = "rill",
    version,
    about = "Rill: a clustered BPMN workflow engine"
)]
struct Cli {
    /// The gateway's REST address, for client commands.
    #[arg(
        long,
        global = true,
        env = "RILL_ADDRESS",
        default_value = "http://localhost:8080"
    )]
    address: String,
    /// PEM file of the CA certificate(s) to trust for `https://` addresses (the gateway's
    /// and the management API's), besides the system's roots.
    #[arg(long, global = true, env = "RILL_CA_CERTIFICATE")]
    ca_certificate: Option<PathBuf>,
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Run a broker and its gateway in one process (data in ./data by default).
    Standalone {
        #[command(flatten)]
        config: ConfigArgs,
    },
    /// Run one broker of a cluster (`cluster.node-id`, `cluster.size`,
    /// `cluster.initial-contact-points`, ...), with an embedded gateway unless
    /// `gateway.enabled=false`.
    Broker {
        #[command(flatten)]
        config: ConfigArgs,
    },
    /// Run a gateway alone, routing to the brokers at `gateway.contact-points`.
    Gateway {
        #[command(flatten)]
        config: ConfigArgs,
    },
    /// The cluster's brokers and partitions, and changes to them (the cluster management
    /// API on a broker's monitoring port).
    Cluster(management::ClusterArgs),
    /// Backups of every partition (the backup management API on a broker's monitoring
    /// port): take, status, list, delete.
    Backup(backup::BackupArgs),
    /// Restore a backup into an empty data directory, before the broker starts on it
    /// (`--backup-id N --data-dir DIR`, with the broker's configuration).
    Restore(backup::RestoreArgs),
    /// Inspect or check configuration.
    Config {
        #[command(subcommand)]
        command: ConfigCommand,
    },
    #[command(flatten)]
    Client(ClientCommand),
}

#[derive(Debug, Subcommand)]
enum ConfigCommand {
    /// Print the effective configuration (defaults, file, environment and flags).
    Show {
        #[command(flatten)]
        config: ConfigArgs,
    },
    /// Check a configuration file and report every mistake at once.
    Validate { file: PathBuf },
}

fn main() -> std::process::ExitCode {
    match run(Cli::parse()) {
        Ok(()) => std::process::ExitCode::SUCCESS,
        Err(e) => {
            // `{:#}` prints the whole chain of causes on one line, without a backtrace.
            eprintln!("error: {e:#}");
            std::process::ExitCode::FAILURE
        }
    }
}

/// What every long-running server command sets up first: logging, then memory.
fn init_server_process() {
    logging::init();
    memory::disable_transparent_huge_pages();
}

fn run(cli: Cli) -> Result<()> {
    match cli.command {
        Command::Standalone { config } => {
            init_server_process();
            server::standalone(config.load()?)
        }
        Command::Broker { config } => {
            init_server_process();
            server::broker(config.load()?)
        }
        Command::Gateway { config } => {
            init_server_process();
            server::gateway(config.load()?)
        }
        Command::Cluster(args) => {
            let runtime = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()?;
            print!(
                "{}",
                runtime.block_on(management::run(args, cli.ca_certificate.as_deref()))?
            );
            Ok(())
        }
        Command::Backup(args) => {
            let runtime = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()?;
            print!(
                "{}",
                runtime.block_on(backup::run(args, cli.ca_certificate.as_deref()))?
            );
            Ok(())
        }
        Command::Restore(args) => {
            print!("{}", backup::restore(args)?);
            Ok(())
        }
        Command::Config { command } => match command {
            ConfigCommand::Show { config } => {
                print!("{}", config.load()?.to_toml()?);
                Ok(())
            }
            ConfigCommand::Validate { file } => {
                let config = ConfigLoader::new().file(&file).load()?;
                validated(config)?;
                println!("{}: valid", file.display());
                Ok(())
            }
        },
        Command::Client(command) => {
            let runtime = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()?;
            let output = runtime.block_on(async {
                let client = Client::new(&cli.address, cli.ca_certificate.as_deref()).await?;
                client.run(command).await
            })?;
            match output {
                Output::Value(value) => println!("{}", serde_json::to_string_pretty(&value)?),
                Output::Text(text) => print!("{text}"),
            }
            Ok(())
        }
    }
}
