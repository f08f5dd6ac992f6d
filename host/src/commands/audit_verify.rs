//! `pve-mcp audit verify`: checks an audit log's hash chain.

use std::path::PathBuf;
use std::process::ExitCode;

use crate::audit::verify::{VerifyError, VerifyOptions, verify};

/// `pve-mcp audit verify`: 0 when the chain holds, 1 at the first broken
/// record, 2 when the files cannot be read.
pub fn run(inputs: &[PathBuf], anchor: Option<String>, partial: bool) -> ExitCode {
    match verify(inputs, &VerifyOptions { partial, anchor }) {
        Ok(summary) => {
            let first = summary.files.first().map(|f| f.seqs.0).unwrap_or(0);
            let last = summary.files.last().map(|f| f.seqs.1).unwrap_or(0);
            println!(
                "ok: {} records, seq {first}..{last}, in {} file(s):",
                summary.records,
                summary.files.len()
            );
            for part in &summary.files {
                println!(
                    "  {} (seq {}..{})",
                    part.path.display(),
                    part.seqs.0,
                    part.seqs.1
                );
            }
            println!("last hash: {}", summary.last_hash);
            ExitCode::SUCCESS
        }
        Err(e @ VerifyError::Broken { .. }) => {
            eprintln!("error: {e}");
            ExitCode::from(1)
        }
        Err(VerifyError::Input(message)) => super::exit::usage_failure(&message),
    }
}
