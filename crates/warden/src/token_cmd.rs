//! `warden token create|list|revoke` (AUTH-1, AUTH-2, AUTH-3).

use warden_core::capability::{Capability, CapabilitySet, validate_capability};
use warden_core::config::Kind;
use warden_core::name::Name;
use warden_core::principal::{CredentialKind, Principal};
use warden_store::TokenRequest;

use crate::cli::{Output, TokenCommand};
use crate::common::{cli_actor, location, now, open, open_existing, usage};
use crate::output;

pub(crate) async fn run(cmd: TokenCommand) -> anyhow::Result<()> {
    match cmd {
        TokenCommand::Create(args) => {
            let principal = match (&args.user, &args.service_account) {
                (Some(u), None) => Principal::User {
                    name: Name::new(u).map_err(|e| usage(format!("--user: {e}")))?,
                },
                (None, Some(s)) => Principal::ServiceAccount {
                    name: Name::new(s).map_err(|e| usage(format!("--service-account: {e}")))?,
                },
                _ => return Err(usage("give exactly one of --user or --service-account")),
            };
            let mut projects = Vec::new();
            for p in &args.projects {
                projects.push(Name::new(p).map_err(|e| usage(format!("--project: {e}")))?);
            }
            for s in &args.scopes {
                validate_capability(s).map_err(|e| usage(format!("--scope: {e}")))?;
            }
            let ttl = args
                .ttl
                .as_deref()
                .map(warden_core::time::parse_duration)
                .transpose()
                .map_err(|e| usage(format!("--ttl: {e}")))?;
            if ttl.is_some_and(|t| t.is_zero()) {
                return Err(usage("--ttl: must be greater than zero"));
            }
            let store = open(&location(&args.store)?).await?;
            let (config, _) = store.load_config().await?;
            let (kind, name) = match &principal {
                Principal::User { name } => (Kind::User, name),
                Principal::ServiceAccount { name } => (Kind::ServiceAccount, name),
                Principal::AgentRun { agent, .. } => (Kind::Agent, agent),
            };
            if !config.contains(kind, name.as_str()) {
                return Err(usage(format!("no {kind} named `{name}`; apply it first")));
            }
            for p in &projects {
                if !config.contains(Kind::Project, p.as_str()) {
                    return Err(usage(format!("--project: no Project named `{p}`")));
                }
            }
            let request = TokenRequest {
                principal,
                projects: (!projects.is_empty()).then_some(projects),
                scopes: (!args.scopes.is_empty())
                    .then(|| CapabilitySet::from_patterns(args.scopes.iter().map(Capability::new))),
                ttl,
                description: args.description.clone(),
                kind: CredentialKind::ApiKey,
            };
            let token = store.create_token(request, &cli_actor(), now()).await?;
            match args.output {
                Output::Json => output::json(&serde_json::json!({
                    "id": token.credential.id,
                    "secret": token.secret,
                    "principal": token.credential.principal.to_string(),
                    "expiresAt": token.credential.expires_at.map(output::time),
                })),
                _ => {
                    println!("{}", token.secret);
                    Ok(())
                }
            }
        }
        TokenCommand::List(args) => {
            let store = open_existing(&location(&args.store)?).await?;
            let credentials = store.credentials().await?;
            let now = now();
            match args.output {
                Output::Json => output::json(&credentials),
                Output::Yaml => output::yaml_docs(&credentials),
                Output::Table => {
                    let rows: Vec<Vec<String>> = credentials
                        .iter()
                        .map(|c| {
                            let status = match c.check_usable(now) {
                                Ok(()) => "active".to_owned(),
                                Err(e) => e.to_string().replace("token ", ""),
                            };
                            vec![
                                c.id.clone(),
                                c.principal.to_string(),
                                c.projects.as_ref().map_or("*".into(), |p| {
                                    p.iter().map(Name::as_str).collect::<Vec<_>>().join(",")
                                }),
                                c.scopes.as_ref().map_or("*".into(), |s| {
                                    s.patterns()
                                        .iter()
                                        .map(Capability::as_str)
                                        .collect::<Vec<_>>()
                                        .join(",")
                                }),
                                output::time(c.created_at),
                                c.expires_at.map_or("never".into(), output::time),
                                status,
                            ]
                        })
                        .collect();
                    output::table(
                        &[
                            "ID", "OWNER", "PROJECTS", "SCOPES", "CREATED", "EXPIRES", "STATUS",
                        ],
                        &rows,
                    );
                    Ok(())
                }
            }
        }
        TokenCommand::Revoke(args) => {
            let store = open_existing(&location(&args.store)?).await?;
            if store.revoke_token(&args.id, &cli_actor(), now()).await? {
                println!("token {} revoked", args.id);
                Ok(())
            } else {
                Err(anyhow::anyhow!(
                    "no token with id `{}`; see `warden token list`",
                    args.id
                ))
            }
        }
    }
}
