//! A stdio upstream: the child process, its environment (secrets resolved) and its stderr,
//! which goes to Warden's log one line at a time.

use std::process::Stdio;

use rmcp::transport::TokioChildProcess;
use tokio::io::AsyncBufReadExt as _;
use warden_core::config::StdioSpec;
use warden_core::name::Name;

use crate::secrets::Secrets;

/// Starts the child of upstream `name`.
pub(super) fn spawn(
    name: &Name,
    stdio: &StdioSpec,
    secrets: &Secrets,
) -> Result<TokioChildProcess, String> {
    let mut cmd = tokio::process::Command::new(&stdio.command);
    cmd.args(&stdio.args);
    for (k, v) in &stdio.env {
        cmd.env(k, secrets.resolve(v)?);
    }
    if let Some(cwd) = &stdio.cwd {
        cmd.current_dir(cwd);
    }
    let (transport, stderr) = TokioChildProcess::builder(cmd)
        .stderr(Stdio::piped())
        .spawn()
        .map_err(|e| format!("cannot start `{}`: {e}", stdio.command))?;
    if let Some(stderr) = stderr {
        let name = name.clone();
        tokio::spawn(async move {
            let mut lines = tokio::io::BufReader::new(stderr).lines();
            while let Ok(Some(line)) = lines.next_line().await {
                tracing::info!(upstream = %name, "{line}");
            }
        });
    }
    Ok(transport)
}
