//! `warden audit export`, `warden audit key --public` and `warden audit verify --file` (AUD-5):
//! an export a SIEM can take, signed at both ends with the audit key, and its verification on a
//! machine without the store, with the key's public half alone. The export's format and its
//! verification are `warden_core::audit::export`'s; which records is `warden_control::audit`'s.

use warden_control::Caller;
use warden_control::audit::signed_export;
use warden_control::audit_file::{self, Destination};
use warden_core::audit::export::{self, Format};

use crate::audit_verify::key_at;
use crate::cli::{
    ArchiveArgs, AuditArgs, ExportArgs, ExportFormat, KeyArgs, VerifyArgs, VerifyKeyArgs,
};
use crate::common::{audit_key_path, cli_actor, control, now, open_existing, usage};
use crate::output;
use crate::target::{Reach, Target, resolve};

/// Why these verbs work on the store only.
const WHY: &str = "it reads the audit key's file, which is where the store is";

/// The audit key of `a`'s store, and the store.
async fn key_and_store(
    a: &VerifyKeyArgs,
    audit: &AuditArgs,
    verb: &'static str,
) -> anyhow::Result<(warden_store::AuditKey, warden_store::Store)> {
    let target = if audit.target.server.is_some() {
        &audit.target
    } else {
        &a.target
    };
    let Target::Store(location) = resolve(target, Reach::StoreOnly(verb, WHY)).await? else {
        return Err(usage(format!("`warden {verb}` works on the store")));
    };
    let store = open_existing(&location).await?;
    let path = audit_key_path(a.audit_key.as_deref(), &location)?;
    let key = key_at(&path)?.ok_or_else(|| {
        anyhow::anyhow!(
            "no audit key at {}: `warden serve` creates it with the first checkpoint",
            path.display()
        )
    })?;
    Ok((key, store))
}

/// `warden audit key --public`.
pub(crate) async fn key(a: &KeyArgs, audit: &AuditArgs) -> anyhow::Result<()> {
    let (key, _) = key_and_store(&a.key, audit, "audit key").await?;
    if !a.public {
        return Err(usage(
            "say `--public`: only the audit key's public half is printed; its secret never leaves its file",
        ));
    }
    println!("{}", key.public_key());
    Ok(())
}

/// `warden audit export`.
pub(crate) async fn run(a: &ExportArgs, audit: &AuditArgs) -> anyhow::Result<()> {
    let since = a
        .since
        .as_deref()
        .map(|s| output::parse_time(s, now()))
        .transpose()
        .map_err(|e| usage(format!("`since`: {e}")))?;
    let (key, store) = key_and_store(&a.key, audit, "audit export").await?;
    let format = match a.format {
        ExportFormat::Jsonl => Format::Jsonl,
        ExportFormat::Ocsf => Format::Ocsf,
    };
    let caller = Caller::Operator(cli_actor());
    let signed = signed_export(&control(store), &caller, since, &key).await?;
    let out: Box<dyn std::io::Write> = match &a.out {
        Some(path) => Box::new(
            std::fs::File::create(path)
                .map_err(|e| anyhow::anyhow!("cannot write {}: {e}", path.display()))?,
        ),
        None => Box::new(std::io::stdout().lock()),
    };
    let end = signed.end.clone();
    let written = audit_file::write(signed, format, out, false).await?;
    if a.out.is_some() {
        eprintln!(
            "exported {written} audit records up to seq {}, signed by {}",
            end.seq, end.key
        );
    }
    Ok(())
}

/// `warden audit archive --before T -o FILE` (AUD-6): the archive is written and on disk
/// before anything is removed from the store (`audit_file::archive`).
pub(crate) async fn archive(a: &ArchiveArgs, audit: &AuditArgs) -> anyhow::Result<()> {
    let before =
        output::parse_time(&a.before, now()).map_err(|e| usage(format!("`before`: {e}")))?;
    let (key, store) = key_and_store(&a.key, audit, "audit archive").await?;
    let caller = Caller::Operator(cli_actor());
    let to = Destination::File(a.out.clone());
    let made = audit_file::archive(&control(store), &caller, before, &key, &to).await?;
    let (written, end, archived) = (made.records, made.end, made.archived);
    eprintln!(
        "archived {written} audit records through seq {} to {}, signed by {}; removed {} from the store, whose chain is verified from seq {} on",
        archived.through,
        a.out.display(),
        end.key,
        archived.removed,
        archived.through + 1
    );
    if let Some(why) = &archived.not_shrunk {
        eprintln!(
            "warning: the store's files were not shrunk ({why}); the next archive tries again"
        );
    }
    Ok(())
}

/// `warden audit verify --file FILE --public-key KEY`: exit 1 naming what is wrong.
pub(crate) fn verify_file(v: &VerifyArgs) -> anyhow::Result<()> {
    let (Some(file), Some(key)) = (&v.file, &v.public_key) else {
        return Err(usage(
            "`--file` needs `--public-key` (the audit key's public half, from `warden audit key --public`)",
        ));
    };
    let text = std::fs::read_to_string(file)
        .map_err(|e| anyhow::anyhow!("cannot read {}: {e}", file.display()))?;
    match export::verify(&text, key.trim()) {
        Ok(v) => {
            println!(
                "export verified: {} audit records (seq {}..={}), {} checkpoints; its end signed {}",
                v.records,
                v.first,
                v.last,
                v.checkpoints,
                output::time(v.end.at)
            );
            Ok(())
        }
        Err(problem) => {
            eprintln!("export broken: {problem}");
            std::process::exit(1);
        }
    }
}
