//! `warden provider discover|import` (WORK-3), on the store or through a server's
//! `/api/v1/gitproviders/{name}/…`; both end in `warden_control::forges`.

use serde_json::{Value, json};
use warden_control::{Caller, forges};

use crate::cli::{Output, ProviderCommand};
use warden_store::Location;

use crate::common::{cli_actor, control, open_existing, store_secrets};
use crate::output;
use crate::target::{Reach, Side, Target, resolve};
use crate::views::{cell, items};

/// Where the provider verbs work by default: the store, as the configuration verbs.
const REACH: Reach = Reach::Both(Side::Store);

/// The services on the store at `location`, reading a provider's credentials from its
/// secrets directory (`WARDEN_SECRETS_DIR`, else `secrets` in the data directory).
async fn on_store(location: &Location) -> anyhow::Result<warden_control::Control> {
    Ok(control(open_existing(location).await?).with_secrets(store_secrets(location)))
}

pub(crate) async fn run(cmd: ProviderCommand) -> anyhow::Result<()> {
    match cmd {
        ProviderCommand::Discover(a) => {
            let found = match resolve(&a.target, REACH).await? {
                Target::Store(location) => {
                    let control = on_store(&location).await?;
                    let caller = Caller::Operator(cli_actor());
                    serde_json::to_value(forges::discover(&control, &caller, &a.name).await?)?
                }
                Target::Server(api) => {
                    api.get(&["gitproviders", &a.name, "repositories"], &[])
                        .await?
                }
            };
            let found = items(found);
            match a.output {
                Output::Json => output::json(&found),
                Output::Yaml => output::yaml_docs(&found),
                Output::Table => {
                    if found.is_empty() {
                        eprintln!("GitProvider `{}` has no repositories", a.name);
                        return Ok(());
                    }
                    let rows: Vec<Vec<String>> = found
                        .iter()
                        .map(|r| {
                            vec![
                                cell(r, "name"),
                                cell(r, "url"),
                                r.get("problem")
                                    .and_then(Value::as_str)
                                    .map_or_else(|| "ok".into(), |p| format!("unreadable: {p}")),
                            ]
                        })
                        .collect();
                    output::table(&["NAME", "URL", "STATUS"], &rows);
                    Ok(())
                }
            }
        }
        ProviderCommand::Import(a) => {
            let added: Vec<String> = match resolve(&a.target, REACH).await? {
                Target::Store(location) => {
                    let control = on_store(&location).await?;
                    let caller = Caller::Operator(cli_actor());
                    forges::import(&control, &caller, &a.name, &a.workspace, &a.repositories)
                        .await?
                        .added
                }
                Target::Server(api) => {
                    let body = json!({ "workspace": a.workspace, "repositories": a.repositories });
                    let answer = api
                        .post(&["gitproviders", &a.name, "import"], &[], body)
                        .await?;
                    answer
                        .get("added")
                        .cloned()
                        .and_then(|a| serde_json::from_value(a).ok())
                        .unwrap_or_default()
                }
            };
            if added.is_empty() {
                println!("workspace/{} unchanged: it has them all", a.workspace);
            }
            for name in added {
                println!("workspace/{} repository {name} added", a.workspace);
            }
            Ok(())
        }
    }
}
