//! `warden token create|list|revoke` (AUTH-1, AUTH-2, AUTH-3), on the store or through
//! `/api/v1/tokens`. Both paths give the API's token (and, when created, its secret); one
//! function prints it, as the CLI always has: camelCase, RFC 3339 times, the secret beside the
//! fields.

use serde::Deserialize;
use serde_json::{Value, json};
use warden_control::tokens::{self, Token, TokenDraft};
use warden_control::{Caller, Refusal};
use warden_core::policy::Policy;
use warden_core::time::Millis;
use warden_store::Location;

use crate::api::Failure;
use crate::cli::{Output, TokenCommand, TokenCreateArgs};
use crate::common::{cli_actor, control, open, open_existing, usage};
use crate::output;
use crate::target::{Reach, Side, Target, resolve};

/// Where tokens are made by default: the store.
const REACH: Reach = Reach::Both(Side::Store);

/// A token just created, as `POST /api/v1/tokens` answers it.
#[derive(Debug, Deserialize)]
struct Created {
    token: Token,
    secret: String,
}

fn read<T: serde::de::DeserializeOwned>(answer: Value) -> anyhow::Result<T> {
    serde_json::from_value(answer)
        .map_err(|e| anyhow::anyhow!("the server answered tokens this warden cannot read: {e}"))
}

pub(crate) async fn run(cmd: TokenCommand) -> anyhow::Result<()> {
    match cmd {
        TokenCommand::Create(args) => {
            let Created { token, secret } = create(&args).await?;
            let view = TokenView::of(&token, Some(&secret));
            match args.output {
                Output::Json => output::json(&view),
                Output::Yaml => output::yaml_docs(&[view]),
                Output::Table => {
                    // The credential alone on stdout (SPEC Appendix B); its id beside it.
                    eprintln!("created {} (shown once below)", token.id);
                    println!("{secret}");
                    Ok(())
                }
            }
        }
        TokenCommand::List(args) => {
            let tokens: Vec<Token> = match resolve(&args.target, REACH).await? {
                Target::Store(location) => {
                    let store = open_existing(&location).await?;
                    let caller = Caller::Operator(cli_actor());
                    let control = control(store);
                    let credentials = tokens::list(&control, &caller).await.map_err(refused)?;
                    let now = control.now();
                    credentials.iter().map(|c| Token::of(c, now)).collect()
                }
                Target::Server(api) => read(api.get(&["tokens"], &[]).await?)?,
            };
            let views: Vec<TokenView<'_>> = tokens.iter().map(|t| TokenView::of(t, None)).collect();
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
                                t.principal.to_owned(),
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
            let revoked = match resolve(&args.target, REACH).await? {
                Target::Store(location) => {
                    let store = open_existing(&location).await?;
                    let caller = Caller::Operator(cli_actor());
                    tokens::revoke(&control(store), &caller, &args.id)
                        .await
                        .map_err(refused)?;
                    true
                }
                Target::Server(api) => match api.delete(&["tokens", &args.id]).await {
                    Ok(_) => true,
                    Err(Failure::Refused { status: 404, .. }) => false,
                    Err(e) => return Err(e.into()),
                },
            };
            if revoked {
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

/// The flag a field of the admin API's body comes from.
fn flag(field: &str) -> &'static str {
    match field {
        "user" => "--user",
        "serviceAccount" => "--service-account",
        "projects" => "--project",
        "scopes" => "--scope",
        "ttl" => "--ttl",
        _ => "--description",
    }
}

/// A refusal of the token service, as the CLI says it: malformed flags by their names and
/// usage errors (exit 2) for what the caller got wrong.
fn refused(e: Refusal) -> anyhow::Error {
    match e {
        Refusal::Invalid { field, message } => usage(format!("{}: {message}", flag(field))),
        Refusal::Malformed(_) => usage("give exactly one of --user or --service-account"),
        Refusal::Unprocessable { .. } => usage(e.to_string()),
        Refusal::NotFound { .. } => anyhow::anyhow!("{e}; see `warden token list`"),
        other => other.into(),
    }
}

/// `warden token create`: the flags checked here, then the token made on the store or by the
/// server, by the one token service (`warden_control::tokens`).
async fn create(args: &TokenCreateArgs) -> anyhow::Result<Created> {
    let draft = TokenDraft {
        user: args.user.clone(),
        service_account: args.service_account.clone(),
        projects: args.projects.clone(),
        scopes: args.scopes.clone(),
        ttl: args.ttl.clone(),
        description: args.description.clone(),
    };
    draft.check().map_err(refused)?;
    let location: Location = match resolve(&args.target, REACH).await? {
        Target::Store(location) => location,
        Target::Server(api) => {
            let body = json!({
                "user": args.user,
                "serviceAccount": args.service_account,
                "projects": args.projects,
                "scopes": args.scopes,
                "ttl": args.ttl,
                "description": args.description,
            });
            return read(api.post(&["tokens"], &[], body).await?);
        }
    };
    let store = open(&location).await?;
    let (config, revision) = store.load_config().await?;
    let policy = Policy::compile(config, revision);
    let caller = Caller::Operator(cli_actor());
    let control = control(store);
    let token = tokens::create(&control, &policy, &caller, &draft)
        .await
        .map_err(refused)?;
    Ok(Created {
        token: Token::of(&token.credential, control.now()),
        secret: token.secret,
    })
}

/// A token as `token list` and `token create` print it: one shape for both (camelCase, RFC
/// 3339 times), the secret only when just created.
#[derive(Debug, serde::Serialize)]
#[serde(rename_all = "camelCase")]
struct TokenView<'a> {
    id: &'a str,
    #[serde(skip_serializing_if = "Option::is_none")]
    secret: Option<&'a str>,
    /// `api_key`, or `run` for an agent run's credential.
    kind: &'a str,
    principal: &'a str,
    /// `null`: all of the owner's projects.
    projects: Option<Vec<&'a str>>,
    /// `null`: all of the owner's capabilities.
    scopes: Option<Vec<&'a str>>,
    created_at: String,
    expires_at: Option<String>,
    revoked_at: Option<String>,
    description: Option<&'a str>,
    /// `active`, `revoked` or `expired`.
    status: &'a str,
}

impl<'a> TokenView<'a> {
    fn of(t: &'a Token, secret: Option<&'a str>) -> Self {
        let strs =
            |v: &'a Option<Vec<String>>| v.as_ref().map(|v| v.iter().map(String::as_str).collect());
        Self {
            id: &t.id,
            secret,
            kind: &t.kind,
            principal: &t.principal,
            projects: strs(&t.projects),
            scopes: strs(&t.scopes),
            created_at: output::time(Millis(t.created_at)),
            expires_at: t.expires_at.map(|m| output::time(Millis(m))),
            revoked_at: t.revoked_at.map(|m| output::time(Millis(m))),
            description: t.description.as_deref(),
            status: &t.status,
        }
    }
}
