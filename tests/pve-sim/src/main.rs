//! `pve-sim`: run the Proxmox VE API simulator standalone.

use std::path::PathBuf;

use anyhow::Context;
use clap::Parser;
use pve_sim::{ClusterFlavor, Scenario, Shapes, SimConfig, Simulator, tokens};

/// Serve a simulated Proxmox VE cluster API on 127.0.0.1 until Ctrl-C.
#[derive(Parser, Debug)]
#[command(name = "pve-sim", version)]
struct Args {
    /// TCP port to listen on (0 picks a free one).
    #[arg(long, env = "PVE_SIM_PORT", default_value_t = 0)]
    port: u16,
    /// Serve the large scenario with this many guests in total.
    #[arg(long, value_name = "N")]
    large: Option<usize>,
    /// Validate every request against this apidata.json (PVE API schema).
    #[arg(long, value_name = "PATH")]
    schema: Option<PathBuf>,
    /// Write the cluster CA certificate here (default: a file in the
    /// temporary directory).
    #[arg(long, value_name = "FILE")]
    write_ca: Option<PathBuf>,
    /// Old-style error bodies without "message" (PVE < 8.3).
    #[arg(long)]
    no_message: bool,
    /// Serve the secondary installation (standalone node `lab1`, guests
    /// 300-303, its own token and password) instead of `demo-cluster`.
    #[arg(long)]
    secondary: bool,
    /// Answer in the shapes real clusters send (PVE 9.2 network resources,
    /// the HA fencing row, agent errors, ...) rather than the schema's.
    #[arg(long)]
    real_shapes: bool,
    /// How long the worker tasks of write requests take, in milliseconds.
    #[arg(long, value_name = "MS", default_value_t = pve_sim::DEFAULT_TASK_DURATION.as_millis() as u64)]
    task_ms: u64,
    /// A node that runs PVE 8 (its agent endpoints check `VM.Monitor`,
    /// file-read takes no count/decode/offset); repeat for more.
    #[arg(long = "pve8-node", value_name = "NODE")]
    pve8_nodes: Vec<String>,
    /// The pve-manager version every node runs (e.g. 8.0.9, 8.4.14),
    /// instead of the cluster's own (9.1.5; --secondary: 8.4.14).
    #[arg(long, value_name = "VERSION")]
    pve_version: Option<String>,
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    tracing_subscriber::fmt()
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_default_env()
                .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("warn")),
        )
        .with_writer(std::io::stderr)
        .init();
    let args = Args::parse();
    let cfg = SimConfig {
        scenario: match args.large {
            Some(guests) => Scenario::Large { guests },
            None => Scenario::Standard,
        },
        schema_path: args.schema,
        message_in_body: !args.no_message,
        cluster: if args.secondary {
            ClusterFlavor::Secondary
        } else {
            ClusterFlavor::Primary
        },
        shapes: if args.real_shapes {
            Shapes::Real
        } else {
            Shapes::Schema
        },
        task_duration: std::time::Duration::from_millis(args.task_ms),
        pve8_nodes: args.pve8_nodes,
        pve_version: args.pve_version,
        ..SimConfig::default()
    };
    let sim = Simulator::start_on(cfg, args.port).await?;
    let ca_path = args
        .write_ca
        .unwrap_or_else(|| std::env::temp_dir().join(format!("pve-sim-{}-ca.pem", sim.port())));
    std::fs::write(&ca_path, sim.ca_pem())
        .with_context(|| format!("writing CA to {}", ca_path.display()))?;

    println!("pve-sim listening on {}", sim.base_url());
    println!("  API base:      {}/api2/json", sim.base_url());
    println!("  CA file:       {}", ca_path.display());
    println!("  fingerprint:   {}", sim.leaf_fingerprint());
    if args.secondary {
        println!(
            "  lab token:     PVEAPIToken={}={}",
            tokens::LAB_TOKEN_ID,
            tokens::LAB_TOKEN_SECRET
        );
        println!(
            "  ticket login:  {} / {}",
            tokens::TICKET_USER,
            tokens::LAB_TICKET_PASSWORD
        );
    } else {
        println!(
            "  admin token:   PVEAPIToken={}={}",
            tokens::ADMIN_TOKEN_ID,
            tokens::ADMIN_TOKEN_SECRET
        );
        println!(
            "  auditor token: PVEAPIToken={}={}",
            tokens::AUDITOR_TOKEN_ID,
            tokens::AUDITOR_TOKEN_SECRET
        );
        println!(
            "  ticket login:  {} / {}",
            tokens::TICKET_USER,
            tokens::TICKET_PASSWORD
        );
    }
    println!("Press Ctrl-C to stop.");

    tokio::signal::ctrl_c()
        .await
        .context("waiting for Ctrl-C")?;
    sim.shutdown().await;
    Ok(())
}
