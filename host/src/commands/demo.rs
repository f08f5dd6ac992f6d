//! `pve-mcp demo`: the real server, sandbox and gate against the embedded
//! Proxmox simulator, over real HTTPS with the simulator's own CA.

use std::io::IsTerminal;
use std::process::ExitCode;
use std::sync::Arc;
use std::time::Duration;

use pve_sim::{SimConfig, Simulator};

use super::call::{parse_args, print_call};
use super::exit::{config_failure, failure, usage_failure};
use super::global::Global;
use super::tools::tool_table;
use crate::approval::Approvals;
use crate::approval::store::{MemoryApprovals, StoreLimits};
use crate::config::{Auth, Cluster, SandboxLimits};
use crate::endpoint::Endpoint;
use crate::policy::Policy;
use crate::sandbox::component::FirstCompile;
use crate::secret::{Redactor, Secret};
use crate::server::app::App;
use crate::server::mcp::McpServer;
use crate::tier::Tier;
use crate::tls::client::TlsMode;
use crate::tools::ToolInfo;

/// A simulator and the host configured for it.
pub struct Demo {
    /// The simulated cluster; stops when dropped.
    pub simulator: Simulator,
    /// The host, talking to it.
    pub app: App,
}

impl Demo {
    /// Starts the simulator and a host pointed at it, trusting its CA.
    pub async fn start(global: &Global, first: FirstCompile) -> anyhow::Result<Demo> {
        let simulator = Simulator::start(SimConfig::default()).await?;
        let cluster = demo_cluster(&simulator)?;
        // The demo's own cluster replaces any configured one, and it keeps
        // the default sandbox limits so it behaves the same everywhere.
        let limits = SandboxLimits::default();
        let app = App::start(
            &[cluster],
            &limits,
            &global.component(),
            &global.cache(),
            first,
        )
        .await?;
        Ok(Demo { simulator, app })
    }
}

fn demo_cluster(simulator: &Simulator) -> anyhow::Result<Cluster> {
    Ok(Cluster {
        name: "demo".into(),
        endpoint: Endpoint::parse(&simulator.base_url(), false)
            .map_err(|e| anyhow::anyhow!("simulator URL: {e}"))?,
        auth: Auth::Token {
            id: pve_sim::tokens::ADMIN_TOKEN_ID.into(),
            secret: Secret::new(pve_sim::tokens::ADMIN_TOKEN_SECRET),
        },
        tls: TlsMode::CaPem(simulator.ca_pem().into_bytes()),
        timeout: Duration::from_secs(30),
        credential_sets: Vec::new(),
    })
}

/// The policy `demo --writes` runs: every write tool allowed, every
/// destructive one behind an approval the person at the client gives
/// through its form, and commands and files inside the guests bounded as
/// a careful operator would ([`DEMO_COMMANDS`], [`DEMO_PATHS`]). Generated
/// from the tools, so a new tool is covered.
fn writes_policy(tools: &[ToolInfo]) -> String {
    let mut text = String::from("[policy]\ndefault = \"read-only\"\n");
    for tool in tools {
        let rule = match Tier::of(tool) {
            Tier::Read => continue,
            Tier::Write => "action = \"allow\"\n",
            Tier::Destructive => "action = \"require_approval\"\napprover = \"client\"\n",
        };
        text.push_str(&format!("[policy.tools.{}]\n{rule}", tool.name));
        if crate::policy::inside::runs_commands(tool) {
            text.push_str(&format!("commands = {DEMO_COMMANDS}\n"));
        }
        if crate::policy::inside::names_guest_files(tool) {
            text.push_str(&format!("paths = {DEMO_PATHS}\n"));
        }
    }
    text
}

/// The commands the demo lets run inside its VMs: looking, not changing.
const DEMO_COMMANDS: &str = r#"[["systemctl", "status", "*"], ["df", "-h"], ["uname", "-a"], ["journalctl", "-u", "*", "-n", "*", "--no-pager"]]"#;
/// The files the demo lets the file tools name inside its VMs.
const DEMO_PATHS: &str = r#"["/etc/hostname", "/etc/os-release", "/var/log/*", "/tmp/*"]"#;

/// What the demo offers: `[tools]`, `--toolsets`, `--read-only`, and over
/// HTTP each token's own toolsets.
struct Offered {
    settings: crate::config::tools::ToolSettings,
    tokens: Vec<crate::config::http::NamedToken>,
}

impl Offered {
    fn load(
        global: &Global,
        tokens: Vec<crate::config::http::NamedToken>,
    ) -> Result<Offered, crate::error::ConfigError> {
        let settings =
            crate::config::Config::load_tools(global.config.as_deref(), &|k| global.env(k))?;
        Ok(Offered { settings, tokens })
    }
}

/// The demo's MCP server: read-only, or with `writes` the write tools on
/// (see [`writes_policy`]) and approvals asked of the client only: the
/// demo has no operator and no admin endpoint.
fn demo_server(app: App, writes: bool, mut offered: Offered) -> anyhow::Result<McpServer> {
    if writes && offered.settings.toolsets.is_none() {
        // The demo with writes shows every tool its policy enables,
        // opt-in toolsets included, unless told otherwise.
        offered.settings.toolsets = Some(vec![crate::tools::ALL_TOOLSETS.to_string()]);
    }
    let exposure =
        crate::server::serving::exposure(&offered.settings, &offered.tokens, app.tools())?;
    let app = app.with_exposure(exposure);
    if !writes {
        return Ok(McpServer::new(Arc::new(app)));
    }
    let text = writes_policy(app.tools());
    let policy = Policy::parse(&text, "demo --writes", app.tools())
        .map_err(|e| anyhow::anyhow!("the demo's write policy: {e}"))?;
    let engine = crate::policy::Engine::new(policy)
        .map_err(|e| anyhow::anyhow!("the demo's write policy: {e}"))?;
    let store = MemoryApprovals::new(StoreLimits::with_ttl(Duration::from_secs(600)));
    let approvals = Approvals::new(
        Arc::new(store),
        Duration::from_secs(600),
        Redactor::new(Vec::new()),
    )
    .without_admin();
    Ok(McpServer::new(Arc::new(app.with_policy(Arc::new(engine))))
        .with_approvals(Arc::new(approvals)))
}

/// `pve-mcp demo`, over stdio (or a tour in a terminal), or with `--http`
/// over Streamable HTTP; `writes` enables the write tools.
pub async fn run(global: &Global, http: Option<&str>, writes: bool) -> ExitCode {
    if let Some(listen) = http {
        return serve_http(global, listen, writes).await;
    }
    let offered = match Offered::load(global, Vec::new()) {
        Ok(offered) => offered,
        Err(e) => return config_failure(&e),
    };
    let demo = match Demo::start(global, FirstCompile::Quick).await {
        Ok(d) => d,
        Err(e) => return failure(&e),
    };
    if std::io::stdin().is_terminal() {
        tour(&demo).await
    } else {
        tracing::info!(simulator = %demo.simulator.base_url(), writes, "serving MCP on stdio against the simulated cluster");
        let server = match demo_server(demo.app, writes, offered) {
            Ok(server) => server,
            Err(e) => return failure(&e),
        };
        match crate::transport::stdio::serve(server).await {
            Ok(()) => ExitCode::SUCCESS,
            Err(e) => failure(&e),
        }
    }
}

/// `pve-mcp demo --http ADDR[:PORT]`: the simulated cluster behind the
/// real Streamable HTTP endpoint, with the `[http]` settings and `MCP_*`
/// variables (a token is optional on loopback).
async fn serve_http(global: &Global, listen: &str, writes: bool) -> ExitCode {
    let settings = match crate::config::Config::load_http(global.config.as_deref(), &|k| {
        std::env::var(k).ok()
    }) {
        Ok(settings) => settings,
        Err(e) => return config_failure(&e),
    };
    let addr = match crate::transport::http::resolve_listen(&settings, Some(listen)) {
        Ok(addr) => addr,
        Err(e) => return config_failure(&e),
    };
    let offered = match Offered::load(global, settings.tokens.clone()) {
        Ok(offered) => offered,
        Err(e) => return config_failure(&e),
    };
    let simulator = match Simulator::start(SimConfig::default()).await {
        Ok(simulator) => simulator,
        Err(e) => return failure(&e),
    };
    let cluster = match demo_cluster(&simulator) {
        Ok(cluster) => cluster,
        Err(e) => return failure(&e),
    };
    let (component, cache) = (global.component(), global.cache());
    let app = async move {
        let app = App::start(
            &[cluster],
            &SandboxLimits::default(),
            &component,
            &cache,
            FirstCompile::Quick,
        )
        .await?;
        demo_server(app, writes, offered).map(crate::server::serving::Serving::from_server)
    };
    let token = settings.tokens.first().map(|t| t.name.clone());
    let announce = |bound: &crate::transport::http::serve::Bound| {
        eprintln!("pve-mcp: MCP endpoint {}", bound.url);
        println!(
            "pve-mcp demo: a simulated Proxmox VE cluster behind {}",
            bound.url
        );
        match &token {
            Some(name) if name.as_ref() == crate::config::http::DEFAULT_TOKEN_NAME => println!(
                "Clients must send the token in MCP_AUTH_TOKEN as a bearer token:\n  \
                 claude mcp add --transport http pve-demo {} --header \"Authorization: Bearer $MCP_AUTH_TOKEN\"",
                bound.url
            ),
            Some(name) => println!(
                "Clients must send a bearer token from the config's [http.tokens] (e.g. {name:?}):\n  \
                 claude mcp add --transport http pve-demo {} --header \"Authorization: Bearer TOKEN\"",
                bound.url
            ),
            None => println!(
                "No token is set (fine on loopback):\n  claude mcp add --transport http pve-demo {}",
                bound.url
            ),
        }
        println!(
            "Health: {}/healthz  Ready: {}/readyz  Stop: Ctrl-C",
            origin(&bound.url),
            origin(&bound.url)
        );
    };
    let served = crate::transport::http::serve::run(&settings, addr, app, announce).await;
    drop(simulator);
    match served {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => failure(&e),
    }
}

/// `scheme://host:port` of a URL.
fn origin(url: &str) -> &str {
    let after_scheme = url.find("://").map_or(0, |i| i + 3);
    match url[after_scheme..].find('/') {
        Some(i) => &url[..after_scheme + i],
        None => url,
    }
}

/// `pve-mcp call --demo`.
pub async fn call(global: &Global, tool: &str, raw_args: &str) -> ExitCode {
    let args = match parse_args(raw_args) {
        Ok(a) => a,
        Err(e) => return usage_failure(&e),
    };
    match Demo::start(global, FirstCompile::Optimised).await {
        Ok(demo) => print_call(&demo.app, tool, &args).await,
        Err(e) => failure(&e),
    }
}

async fn tour(demo: &Demo) -> ExitCode {
    let exe = std::env::current_exe()
        .map(|p| p.display().to_string())
        .unwrap_or_else(|_| "pve-mcp".into());
    println!(
        "pve-mcp demo: a simulated Proxmox VE cluster at {}",
        demo.simulator.base_url()
    );
    println!(
        "Every tool below runs in a WebAssembly sandbox that can only reach that API, read-only;\n\
         `pve-mcp demo --writes` lets a client act on it (destructive tools ask first).\n"
    );
    print!("{}", tool_table(&demo.app));

    let samples: [(&str, serde_json::Value); 2] = [
        ("pve_list_vms", serde_json::json!({"status": "running"})),
        ("pve_get_vm_status", serde_json::json!({"vmid": 100})),
    ];
    let mut ok = true;
    for (tool, args) in samples {
        println!("\n$ pve-mcp call {tool} --args '{args}' --demo");
        let args = args.as_object().cloned().unwrap_or_default();
        let report = demo
            .app
            .call(&crate::caller::Caller::stdio(), tool, &args)
            .await;
        ok &= !report.outcome.is_error();
        println!("{}", super::call::outcome_text(&report.outcome));
        if let crate::tools::CallOutcome::Output { structured, .. } = &report.outcome {
            let pretty = serde_json::to_string_pretty(structured).unwrap_or_default();
            for line in pretty.lines().take(25) {
                println!("  {line}");
            }
            if pretty.lines().count() > 25 {
                println!("  ...");
            }
        }
    }

    let config = serde_json::json!({
        "mcpServers": { "pve-mcp-demo": { "command": exe, "args": ["demo"] } }
    });
    println!("\nTo use the demo from Claude Desktop, add this to claude_desktop_config.json:");
    println!(
        "{}",
        serde_json::to_string_pretty(&config).unwrap_or_default()
    );
    println!(
        "\nFor a real cluster use \"args\": [\"serve\"] and an \"env\" block with PVE_BASE_URL, \
PVE_API_TOKEN_ID, PVE_API_TOKEN_SECRET and PVE_CA_FILE or PVE_TLS_FINGERPRINT (see the README)."
    );
    if ok {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(1)
    }
}
