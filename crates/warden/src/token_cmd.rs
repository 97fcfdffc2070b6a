//! `warden token create|list|revoke` (AUTH-1, AUTH-2, AUTH-3).

use warden_core::capability::{Capability, CapabilitySet, validate_capability};
use warden_core::config::Kind;
use warden_core::name::Name;
use warden_core::principal::{Credential, CredentialKind, CredentialRejection, Principal};
use warden_core::time::Millis;
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
            let view = TokenView::of(&token.credential, now(), Some(&token.secret));
            match args.output {
                Output::Json => output::json(&view),
                Output::Yaml => output::yaml_docs(&[view]),
                Output::Table => {
                    // The credential alone on stdout (SPEC Appendix B); its id beside it.
                    eprintln!("created {} (shown once below)", token.credential.id);
                    println!("{}", token.secret);
                    Ok(())
                }
            }
        }
        TokenCommand::List(args) => {
            let store = open_existing(&location(&args.store)?).await?;
            let credentials = store.credentials().await?;
            let now = now();
            let views: Vec<TokenView<'_>> = credentials
                .iter()
                .map(|c| TokenView::of(c, now, None))
                .collect();
            match args.output {
                Output::Json => output::json(&views),
                Output::Yaml => output::yaml_docs(&views),
                Output::Table => {
                    let list = |items: &Option<Vec<&str>>| {
                        items.as_ref().map_or("*".into(), |items| items.join(","))
                    };
                    let rows: Vec<Vec<String>> = views
                        .iter()
                        .map(|t| {
                            vec![
                                t.id.to_owned(),
                                t.principal.clone(),
                                list(&t.projects),
                                list(&t.scopes),
                                t.created_at.clone(),
                                t.expires_at.clone().unwrap_or_else(|| "never".into()),
                                t.status.to_owned(),
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

/// A token as `token list` and `token create` show it: one shape for both (camelCase, RFC
/// 3339 times), the secret only when just created.
#[derive(Debug, serde::Serialize)]
#[serde(rename_all = "camelCase")]
struct TokenView<'a> {
    id: &'a str,
    #[serde(skip_serializing_if = "Option::is_none")]
    secret: Option<&'a str>,
    /// `api_key`, or `run` for an agent run's credential.
    kind: &'static str,
    principal: String,
    /// `null`: all of the owner's projects.
    projects: Option<Vec<&'a str>>,
    /// `null`: all of the owner's capabilities.
    scopes: Option<Vec<&'a str>>,
    created_at: String,
    expires_at: Option<String>,
    revoked_at: Option<String>,
    description: Option<&'a str>,
    /// `active`, `revoked` or `expired`.
    status: &'static str,
}

impl<'a> TokenView<'a> {
    fn of(c: &'a Credential, now: Millis, secret: Option<&'a str>) -> Self {
        Self {
            id: &c.id,
            secret,
            kind: match c.kind {
                CredentialKind::ApiKey => "api_key",
                CredentialKind::Run => "run",
            },
            principal: c.principal.to_string(),
            projects: c
                .projects
                .as_ref()
                .map(|p| p.iter().map(Name::as_str).collect()),
            scopes: c
                .scopes
                .as_ref()
                .map(|s| s.patterns().iter().map(Capability::as_str).collect()),
            created_at: output::time(c.created_at),
            expires_at: c.expires_at.map(output::time),
            revoked_at: c.revoked_at.map(output::time),
            description: c.description.as_deref(),
            status: match c.check_usable(now) {
                Ok(()) => "active",
                Err(CredentialRejection::Revoked) => "revoked",
                Err(CredentialRejection::Expired) => "expired",
                Err(_) => "unusable",
            },
        }
    }
}
