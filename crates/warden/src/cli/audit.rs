//! `warden audit`, `warden audit verify`, `warden audit checkpoint export`.

use std::path::PathBuf;

use clap::{Args, Subcommand};

use super::options::{Output, TargetArgs};

/// `warden audit`.
#[derive(Debug, Args)]
pub struct AuditArgs {
    /// `verify` checks the hash chain; without it, records are listed.
    #[command(subcommand)]
    pub command: Option<AuditCommand>,

    /// Only this run.
    #[arg(long)]
    pub run: Option<String>,
    /// Only this principal (`user:alice`, `serviceAccount:deploy-bot`).
    #[arg(long)]
    pub principal: Option<String>,
    /// Only runs of this agent.
    #[arg(long)]
    pub agent: Option<String>,
    /// Only this tool.
    #[arg(long)]
    pub tool: Option<String>,
    /// Only this decision: allow, deny, park, stage (calls); executed, failed, cancelled,
    /// input_required, task, interrupted (outcomes); approve, reject, veto, expire, refuse
    /// (approvals); relayed, refused (relays).
    #[arg(long, value_parser = clap::builder::PossibleValuesParser::new(warden_core::audit::DECISIONS))]
    pub decision: Option<String>,
    /// Only this denial code (e.g. CAPABILITY).
    #[arg(long)]
    pub code: Option<String>,
    /// Only this kind of record: run, call, decision, outcome, admin, relay.
    #[arg(long, value_parser = clap::builder::PossibleValuesParser::new(warden_core::audit::KINDS))]
    pub kind: Option<String>,
    /// At or after this time: RFC 3339 (`2026-11-29T10:00:00Z`) or an age (`1h`, `30m`).
    #[arg(long)]
    pub since: Option<String>,
    /// Before this time (same forms as `--since`).
    #[arg(long)]
    pub until: Option<String>,
    /// Only records with this text, ignoring case, in an id, the principal, agent, tool, code
    /// or payload (a rule's name, an argument's hash).
    #[arg(long)]
    pub text: Option<String>,
    /// At most this many records, the newest (a notice on stderr says when more match).
    #[arg(long, default_value_t = 100)]
    pub limit: i64,
    /// The oldest records first (the default is the newest first), e.g. to export in order.
    #[arg(long)]
    pub oldest_first: bool,
    /// Output format (`json` gives JSON Lines).
    #[arg(short, long, value_enum, default_value_t = Output::Table)]
    pub output: Output,
    /// The server or the store.
    #[command(flatten)]
    pub target: TargetArgs,
}

/// `warden audit …`.
#[derive(Debug, Subcommand)]
pub enum AuditCommand {
    /// Verify the hash chain, and its end against the latest signed checkpoint (AUD-2); names
    /// the first record that breaks it, or the records missing after a truncation (exit 1).
    Verify(VerifyArgs),
    /// Signed checkpoints of the chain's head.
    #[command(subcommand)]
    Checkpoint(CheckpointCommand),
    /// Write the records (from `--since`, else all) with the signed checkpoints that cover
    /// them, for a SIEM, verifiable without Warden by `warden audit verify --file` (AUD-5).
    Export(ExportArgs),
    /// Print the audit key's public half, which verifies its checkpoints (AUD-5).
    Key(KeyArgs),
    /// Write the records before a time to a file, as `export` does, then remove them from the
    /// store, which keeps a signed cut: `verify` proves the store from there, `verify --file`
    /// the archive (AUD-6).
    Archive(ArchiveArgs),
}

/// `warden audit archive`.
#[derive(Debug, Args)]
pub struct ArchiveArgs {
    /// Archive the records before this time: RFC 3339 or an age (`90d` — older than that).
    #[arg(long)]
    pub before: String,
    /// Write the archive here (a new file: an archive is never written over).
    #[arg(short = 'o', long = "out", value_name = "FILE")]
    pub out: PathBuf,
    /// The audit key, which signs the archive's ends and the store's cut.
    #[command(flatten)]
    pub key: VerifyKeyArgs,
}

/// The formats of `warden audit export`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, clap::ValueEnum)]
pub enum ExportFormat {
    /// The records as Warden keeps them, one JSON object per line.
    #[default]
    Jsonl,
    /// OCSF API Activity events (class 6003), each carrying its record in `unmapped.warden`.
    Ocsf,
}

/// `warden audit export`.
#[derive(Debug, Args)]
pub struct ExportArgs {
    /// From the first record at or after this time: RFC 3339 or an age (`24h`).
    #[arg(long)]
    pub since: Option<String>,
    /// The records' format.
    #[arg(long, value_enum, default_value_t = ExportFormat::Jsonl)]
    pub format: ExportFormat,
    /// Write here [default: standard output].
    #[arg(short = 'o', long = "out", value_name = "FILE")]
    pub out: Option<PathBuf>,
    /// The audit key, which signs the export's ends and the store's checkpoints.
    #[command(flatten)]
    pub key: VerifyKeyArgs,
}

/// `warden audit key`.
#[derive(Debug, Args)]
pub struct KeyArgs {
    /// Print the public half (the only half this prints; the secret never leaves its file).
    #[arg(long)]
    pub public: bool,
    /// The audit key and its store.
    #[command(flatten)]
    pub key: VerifyKeyArgs,
}

/// `warden audit verify`.
#[derive(Debug, Args)]
pub struct VerifyArgs {
    /// Check the chain's end against the checkpoints in this file (from `warden audit
    /// checkpoint export`, kept where the database's writers cannot reach), trusting the key
    /// that signed them.
    #[arg(long, value_name = "FILE")]
    pub anchor: Option<PathBuf>,
    /// Verify this export (from `warden audit export`) instead of a store, offline: its chain,
    /// its checkpoints and that nothing is missing from either end (AUD-5). Needs
    /// `--public-key`.
    #[arg(long, value_name = "FILE", conflicts_with = "anchor")]
    pub file: Option<PathBuf>,
    /// The audit key's public half (hex, from `warden audit key --public`) that must have
    /// signed the export's checkpoints.
    #[arg(long, value_name = "KEY", requires = "file")]
    pub public_key: Option<String>,
    /// The audit key, whose public half the checkpoints must verify with, and beside which the
    /// checkpoint file is [default: as for `warden serve`; through a server (`--server`), none:
    /// only this file's key, or the `--anchor`'s, is trusted].
    #[arg(long, value_name = "FILE", env = "WARDEN_AUDIT_KEY")]
    pub audit_key: Option<PathBuf>,
    /// The server or the store.
    #[command(flatten)]
    pub target: TargetArgs,
}

/// `warden audit checkpoint …`.
#[derive(Debug, Subcommand)]
pub enum CheckpointCommand {
    /// Print the latest signed checkpoint as one JSON line, to keep outside the database (and
    /// give to `warden audit verify --anchor`).
    Export(VerifyKeyArgs),
}

/// The store and the audit key.
#[derive(Debug, Args)]
pub struct VerifyKeyArgs {
    /// The audit key [default: as for `warden serve`].
    #[arg(long, value_name = "FILE", env = "WARDEN_AUDIT_KEY")]
    pub audit_key: Option<PathBuf>,
    /// The store (this verb reads the audit key's file, so it does not work through a server).
    #[command(flatten)]
    pub target: TargetArgs,
}
