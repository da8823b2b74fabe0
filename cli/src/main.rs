//! `rill`: the one binary. Server roles (`standalone`, `broker`, `gateway`), configuration
//! tools, and client commands against a running gateway.

mod client;

use anyhow::Result;
use clap::{Parser, Subcommand};

use crate::client::{Client, ClientCommand};

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
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
enum Command {
    #[command(flatten)]
    Client(ClientCommand),
}

fn main() -> Result<()> {
    let cli = Cli::parse();
    match cli.command {
        Command::Client(command) => {
            let runtime = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()?;
            let client = Client::new(&cli.address)?;
            let output = runtime.block_on(client.run(command))?;
            println!("{}", serde_json::to_string_pretty(&output)?);
            Ok(())
        }
    }
}
