//! The options every command takes, and what they mean for a start: the
//! component, its compile cache, the policy's origin and the configuration.

use std::path::PathBuf;

use clap::Args;

use crate::config::Config;
use crate::error::ConfigError;
use crate::sandbox::component::{CacheDir, ComponentSource, FirstCompile};
use crate::server::serving::Startup;

/// Options every command takes.
#[derive(Debug, Clone, Args)]
pub struct Global {
    /// TOML configuration file; environment variables override its keys.
    #[arg(long, global = true, env = "PVE_MCP_CONFIG", value_name = "FILE")]
    pub config: Option<PathBuf>,

    /// Policy file ([policy] section: which tools run, with what limits);
    /// overrides the configuration file's [policy].
    #[arg(long, global = true, env = "PVE_MCP_POLICY", value_name = "FILE")]
    pub policy: Option<PathBuf>,

    /// Run this component instead of the embedded one (it must implement
    /// the pve-mcp:guest/pve-tools world in wit/).
    #[arg(long, global = true, value_name = "PATH")]
    pub component: Option<PathBuf>,

    /// Compile the component at every start instead of caching it.
    #[arg(long, global = true)]
    pub no_cache: bool,

    /// More logging on stderr (-v debug, -vv trace).
    #[arg(short, long, global = true, action = clap::ArgAction::Count)]
    pub verbose: u8,

    /// Offer only the tools of these toolsets, e.g. guests,tasks or
    /// default,agent (default: the toolsets offered when none are named,
    /// which `pve-mcp tools` lists; all: every one; `discover` offers
    /// the rest through pve_search_tools and pve_call_tool); overrides
    /// [tools] toolsets and PVE_MCP_TOOLSETS.
    #[arg(long, global = true, value_name = "A,B")]
    pub toolsets: Option<String>,

    /// Offer and run only tools that read, whatever the policy allows;
    /// overrides [tools] read_only and PVE_MCP_READ_ONLY.
    #[arg(long, global = true)]
    pub read_only: bool,
}

impl Global {
    /// The component to run.
    pub fn component(&self) -> ComponentSource {
        match &self.component {
            Some(path) => ComponentSource::File(path.clone()),
            None => ComponentSource::Embedded,
        }
    }

    /// Where compiled components are cached.
    pub fn cache(&self) -> CacheDir {
        if self.no_cache {
            CacheDir::Disabled
        } else {
            CacheDir::Default
        }
    }

    /// Where the policy is looked for: --policy, then --config.
    pub fn policy_origin(&self) -> crate::policy::reload::Origin {
        crate::policy::reload::Origin {
            flag: self.policy.clone(),
            config: self.config.clone(),
        }
    }

    /// The component, cache and policy origin a one-shot command starts
    /// with: on a cache miss it compiles with Cranelift, and caches that.
    pub fn startup(&self) -> Startup {
        Startup {
            component: self.component(),
            cache: self.cache(),
            first_compile: FirstCompile::Optimised,
            policy: self.policy_origin(),
        }
    }

    /// The same for a server, which on a cache miss starts at once on code
    /// from Winch while Cranelift fills the cache for the next start.
    pub fn server_startup(&self) -> Startup {
        Startup {
            first_compile: FirstCompile::Quick,
            ..self.startup()
        }
    }

    /// Loads the configuration from --config and the environment.
    pub fn load_config(&self) -> Result<Config, ConfigError> {
        Config::load(self.config.as_deref(), &|key| self.env(key))
    }

    /// The environment, with `--toolsets` and `--read-only` over their
    /// variables.
    pub fn env(&self, key: &str) -> Option<String> {
        use crate::config::tools::{READ_ONLY_ENV, TOOLSETS_ENV};
        match key {
            TOOLSETS_ENV if self.toolsets.is_some() => self.toolsets.clone(),
            READ_ONLY_ENV if self.read_only => Some("1".into()),
            _ => std::env::var(key).ok(),
        }
    }
}
