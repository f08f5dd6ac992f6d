//! MCP logging: after `logging/setLevel`, the client is told about requests
//! the egress gate refused, at or above the level it asked for.

#![allow(deprecated)] // MCP logging is deprecated in 2026-07-28; 2025 clients use it

use rmcp::model::{LoggingLevel, LoggingMessageNotificationParam, SetLevelRequestParams};
use rmcp::service::{MaybeSendFuture, NotificationContext};
use rmcp::{ClientHandler, RoleClient, ServiceExt};
use serde_json::json;
use tokio::sync::mpsc::UnboundedSender;

use crate::common::*;

struct LogCollector(UnboundedSender<LoggingMessageNotificationParam>);

impl ClientHandler for LogCollector {
    fn on_logging_message(
        &self,
        params: LoggingMessageNotificationParam,
        _context: NotificationContext<RoleClient>,
    ) -> impl Future<Output = ()> + MaybeSendFuture + '_ {
        let _ = self.0.send(params);
        std::future::ready(())
    }
}

#[tokio::test]
async fn refused_egress_is_logged_to_a_client_that_set_a_level() {
    within(async {
        let sim = simulator().await;
        let dir = tempfile::tempdir().unwrap();
        let opts = Opts::default().arg("--component").arg(HOSTILE_WASM);
        let cmd = command(&sim, &opts, dir.path(), &["serve"]);
        let (transport, _) = rmcp::transport::TokioChildProcess::builder(cmd)
            .stderr(std::process::Stdio::null())
            .spawn()
            .expect("spawning pve-mcp serve");
        let (tx, mut messages) = tokio::sync::mpsc::unbounded_channel();
        let client = LogCollector(tx).serve(transport).await.expect("handshake");
        let caps = client
            .peer_info()
            .expect("server info")
            .capabilities
            .clone();
        assert!(caps.logging.is_some(), "logging capability: {caps:?}");

        let call = |tool: &str| {
            rmcp::model::CallToolRequestParams::new(tool.to_string())
                .with_arguments(json!({}).as_object().cloned().unwrap())
        };
        // Before any setLevel nothing is sent.
        client.call_tool(call("hostile_egress")).await.unwrap();
        client
            .call_tool(call("hostile_slow_upstream"))
            .await
            .unwrap();
        assert!(messages.try_recv().is_err(), "a message before setLevel");

        client
            .set_level(SetLevelRequestParams::new(LoggingLevel::Warning))
            .await
            .unwrap();
        client.call_tool(call("hostile_egress")).await.unwrap();
        let first = messages.recv().await.expect("a log message");
        assert_eq!(first.level, LoggingLevel::Warning);
        assert_eq!(first.logger.as_deref(), Some("pve-mcp"));
        assert_eq!(first.data["event"], "egress refused", "{:?}", first.data);
        assert_eq!(first.data["tool"], "hostile_egress");
        assert!(first.data["reason"].as_str().is_some_and(|r| !r.is_empty()));

        // A call with no refused request says nothing at warning level; the
        // ping afterwards makes sure anything sent has arrived.
        while messages.try_recv().is_ok() {}
        client
            .call_tool(call("hostile_slow_upstream"))
            .await
            .unwrap();
        client.list_tools(None).await.unwrap();
        assert!(messages.try_recv().is_err(), "a warning for a clean call");
        let _ = client.cancel().await;
    })
    .await;
}
