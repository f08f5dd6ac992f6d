//! MCP over stdio: one client, which started this process.

use crate::server::mcp::McpServer;

/// Serves `server` on stdin/stdout until the client closes them.
pub async fn serve(server: McpServer) -> anyhow::Result<()> {
    // Pipes (how MCP clients spawn servers) are driven by the I/O reactor;
    // plain stdio would hand every read and write to a blocking thread,
    // ~75 µs per call. Anything else falls back to plain stdio.
    let running = rmcp::ServiceExt::serve(server, rmcp::transport::stdio_pipes()).await?;
    running.waiting().await?;
    Ok(())
}
