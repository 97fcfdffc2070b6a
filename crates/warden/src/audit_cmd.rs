//! `warden audit` and `warden audit verify` (AUD-2, AUD-4).

use warden_store::AuditFilter;

use crate::cli::{AuditArgs, AuditCommand, Output};
use crate::common::{location, now, open_existing, usage};
use crate::output;

pub(crate) async fn run(args: AuditArgs) -> anyhow::Result<()> {
    if let Some(AuditCommand::Verify(v)) = &args.command {
        let store = open_existing(&location(&v.store)?).await?;
        return match store.verify_audit().await? {
            Ok(n) => {
                println!("audit chain verified: {n} records");
                Ok(())
            }
            Err(b) => Err(anyhow::anyhow!("{b}")),
        };
    }
    let now = now();
    let since = args
        .since
        .as_deref()
        .map(|s| output::parse_time(s, now))
        .transpose()
        .map_err(usage)?;
    let until = args
        .until
        .as_deref()
        .map(|s| output::parse_time(s, now))
        .transpose()
        .map_err(usage)?;
    if args.limit < 1 {
        return Err(usage("--limit must be at least 1"));
    }
    let filter = AuditFilter {
        run_id: args.run.clone(),
        principal: args.principal.clone(),
        agent: args.agent.clone(),
        tool: args.tool.clone(),
        decision: args.decision.clone(),
        code: args.code.clone(),
        kind: args.kind.clone(),
        since,
        until,
        after_seq: None,
        limit: Some(args.limit),
        newest_first: false,
    };
    let store = open_existing(&location(&args.store)?).await?;
    let records = store.audit(&filter).await?;
    match args.output {
        Output::Json => {
            for r in &records {
                let mut v = serde_json::to_value(r)?;
                // Show the payload as JSON, not as a string of JSON.
                if let Some(obj) = v.as_object_mut()
                    && let Some(serde_json::Value::String(p)) = obj.get("payload")
                {
                    let parsed =
                        serde_json::from_str(p).unwrap_or(serde_json::Value::String(p.clone()));
                    obj.insert("payload".into(), parsed);
                }
                println!("{}", serde_json::to_string(&v)?);
            }
            Ok(())
        }
        Output::Yaml => output::yaml_docs(&records),
        Output::Table => {
            let rows: Vec<Vec<String>> = records
                .iter()
                .map(|r| {
                    let rec = &r.record;
                    vec![
                        r.seq.to_string(),
                        output::time(rec.at),
                        rec.kind.as_str().to_owned(),
                        rec.run_id.clone(),
                        rec.principal.clone().unwrap_or_else(|| "-".into()),
                        rec.tool.clone().unwrap_or_else(|| "-".into()),
                        rec.decision.clone().unwrap_or_else(|| "-".into()),
                        rec.code.clone().unwrap_or_else(|| "-".into()),
                    ]
                })
                .collect();
            if rows.is_empty() {
                eprintln!("no audit records match");
            } else {
                output::table(
                    &[
                        "SEQ",
                        "TIME",
                        "KIND",
                        "RUN",
                        "PRINCIPAL",
                        "TOOL",
                        "DECISION",
                        "CODE",
                    ],
                    &rows,
                );
            }
            Ok(())
        }
    }
}
