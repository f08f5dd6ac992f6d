//! `deploy/Dockerfile`'s steps, run here without a container engine (none
//! runs on these machines): the compile cache filled the way the build
//! stage fills it, then made read-only as the root filesystem is in
//! `deploy/docker-compose.yml`, and `pve-mcp` started with the image's
//! environment. It must load the component from that cache without
//! compiling and answer the `HEALTHCHECK`'s URL. The Dockerfile is read,
//! not copied, so a changed step is tested as changed.

use std::os::unix::fs::PermissionsExt;

use crate::common::*;
use crate::http::{HttpServer, TOKEN, http_client};

/// The Dockerfile's `ENV` assignments, in order.
fn env_of(dockerfile: &str) -> Vec<(String, String)> {
    let joined = dockerfile.replace("\\\n", " ");
    joined
        .lines()
        .filter_map(|l| l.trim().strip_prefix("ENV "))
        .flat_map(|l| l.split_whitespace())
        .filter_map(|kv| kv.split_once('='))
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect()
}

#[tokio::test]
async fn the_dockerfiles_steps_start_warm_from_a_read_only_cache() {
    within(async {
        let dockerfile =
            std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/../deploy/Dockerfile"))
                .unwrap();
        // The build stage fills the cache with `pve-mcp tools`, the run
        // stage runs as a user of its own and probes /healthz.
        assert!(
            dockerfile.contains("PVE_MCP_CACHE_DIR=/cache ./target/release/pve-mcp tools"),
            "{dockerfile}"
        );
        let user = dockerfile
            .lines()
            .find_map(|l| l.strip_prefix("USER "))
            .expect("a USER line");
        assert!(
            !user.starts_with('0') && !user.starts_with("root"),
            "{user}"
        );
        let health = dockerfile
            .lines()
            .find_map(|l| l.trim().strip_prefix("CMD curl -fsS "))
            .and_then(|l| l.split_whitespace().next())
            .expect("a HEALTHCHECK probing a URL");
        let health_path = &health[health.find("/healthz").expect("the /healthz probe")..];
        let env = env_of(&dockerfile);
        assert!(
            env.iter()
                .any(|(k, v)| k == "MCP_TRANSPORT" && v == "streamable-http")
        );

        let sim = simulator().await;
        let dir = tempfile::tempdir().unwrap();
        let cache = dir.path().join("cache");
        std::fs::create_dir(&cache).unwrap();
        std::fs::set_permissions(&cache, std::fs::Permissions::from_mode(0o700)).unwrap();
        fill_cache(&cache, None);
        assert_eq!(
            std::fs::read_dir(&cache).unwrap().count(),
            1,
            "one artifact"
        );
        // The read-only root filesystem: nothing more can be written there.
        std::fs::set_permissions(&cache, std::fs::Permissions::from_mode(0o500)).unwrap();

        let mut opts = Opts::default().arg("-v").env("MCP_AUTH_TOKEN", TOKEN);
        for (key, value) in env {
            // Tests listen on loopback only, on a port of their own.
            let value = match key.as_str() {
                "PVE_MCP_CACHE_DIR" => cache.display().to_string(),
                "MCP_HOST" => "127.0.0.1".into(),
                "MCP_PORT" => "0".into(),
                _ => value,
            };
            opts = opts.env(&key, &value);
        }
        let server = HttpServer::spawn(&sim, opts, &["serve"], http_client()).await;
        let probe = http_client()
            .get(format!("{}{health_path}", server.base))
            .send()
            .await
            .unwrap();
        assert_eq!(probe.status(), 200);
        assert!(
            server.log().contains("component ready") && server.log().contains("compiled=false"),
            "the component was compiled instead of loaded from the cache:\n{}",
            server.log()
        );
        assert_eq!(std::fs::read_dir(&cache).unwrap().count(), 1);
        std::fs::set_permissions(&cache, std::fs::Permissions::from_mode(0o700)).unwrap();
    })
    .await;
}
