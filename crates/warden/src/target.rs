//! Where a verb works: through a running server's admin API, or on the store directly — and
//! how that is chosen (docs/cli.md, "Server or store"):
//!
//! 1. flags: `--server URL`, or `--data-dir`/`--database-url` (both: a usage error);
//! 2. the environment: `WARDEN_SERVER`, or `WARDEN_DATA_DIR`/`WARDEN_DATABASE_URL` (both: a
//!    usage error naming them);
//! 3. the context (`warden context set`);
//! 4. the verb's default: the store for the verbs that always worked on it, the server at
//!    `http://127.0.0.1:8600` for those that always asked one.
//!
//! A verb that works one way only refuses the other's flags with a usage error that says why,
//! and ignores the other's environment. When the choice is ambiguous, one line on stderr
//! says which was used ([`say_which`]): a server taken from the default, or a store not named on
//! the command line while a server on this machine serves another.

use std::path::{Path, PathBuf};

use warden_store::Location;

use crate::api::Api;
use crate::cli::{StoreArgs, TargetArgs};
use crate::common::{SERVING_FILE, default_data_dir, usage};
use crate::context_cmd::{self, Context};

/// The server the verbs that ask one have always asked by default.
pub(crate) const DEFAULT_SERVER: &str = "http://127.0.0.1:8600";

/// What chose a server or a store.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Source {
    /// The command line.
    Flag,
    /// This environment variable.
    Environment(&'static str),
    /// `warden context`.
    Context,
    /// The verb's default.
    Default,
}

/// Where a verb works.
#[derive(Debug)]
pub(crate) enum Target {
    /// Through this server's admin API.
    Server(Api),
    /// On this store.
    Store(Location),
}

/// Which side a verb that can work on both takes when nothing chooses.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Side {
    /// The server at [`DEFAULT_SERVER`].
    Server,
    /// The default data directory.
    Store,
}

/// What a verb can work on.
#[derive(Clone, Copy, Debug)]
pub(crate) enum Reach {
    /// A server or a store, with the default side.
    Both(Side),
    /// A server only: the verb (`approvals approve`) and why.
    ServerOnly(&'static str, &'static str),
    /// A store only: the verb and why.
    StoreOnly(&'static str, &'static str),
}

/// A non-empty environment variable.
fn env(name: &str) -> Option<String> {
    std::env::var(name).ok().filter(|v| !v.trim().is_empty())
}

/// The store named by flags.
fn store_flags(args: &StoreArgs) -> Option<Location> {
    match (&args.data_dir, &args.database_url) {
        (_, Some(url)) => Some(Location::Url(url.clone())),
        (Some(dir), None) => Some(Location::DataDir(dir.clone())),
        (None, None) => None,
    }
}

/// The store named by the environment, and the variable that named it.
fn store_env() -> Option<(Location, &'static str)> {
    if let Some(url) = env("WARDEN_DATABASE_URL") {
        return Some((Location::Url(url), "WARDEN_DATABASE_URL"));
    }
    env("WARDEN_DATA_DIR").map(|d| (Location::DataDir(PathBuf::from(d)), "WARDEN_DATA_DIR"))
}

/// The store of `args`: its flags, else the environment, else the default data directory —
/// for `warden serve`, which needs no notice of it.
pub(crate) fn location(args: &StoreArgs) -> anyhow::Result<Location> {
    Ok(store_of(args)?.0)
}

fn store_of(args: &StoreArgs) -> anyhow::Result<(Location, Source)> {
    if let Some(l) = store_flags(args) {
        return Ok((l, Source::Flag));
    }
    if let Some((l, var)) = store_env() {
        return Ok((l, Source::Environment(var)));
    }
    Ok((Location::DataDir(default_data_dir()?), Source::Default))
}

/// The store of a verb that works on a store only (`migrate`, `stdio`, …), saying which when
/// that is ambiguous.
pub(crate) async fn store(args: &StoreArgs) -> anyhow::Result<Location> {
    let (location, from) = store_of(args)?;
    say_which_store(&location, from, false).await;
    Ok(location)
}

/// Where a verb that `reach`es so works, by the rule of the module docs.
pub(crate) async fn resolve(args: &TargetArgs, reach: Reach) -> anyhow::Result<Target> {
    let server_flag = args.server.as_deref().filter(|s| !s.trim().is_empty());
    let store_flag = store_flags(&args.store);
    match reach {
        Reach::ServerOnly(verb, why) => {
            if store_flag.is_some() {
                return Err(usage(format!(
                    "`warden {verb}` works through a running server, not on a store: {why}; give it --server URL (or WARDEN_SERVER) and a token in WARDEN_TOKEN"
                )));
            }
            let server = match server_flag {
                Some(s) => s.to_owned(),
                None => server_after_flags()?,
            };
            // Which side is not in question: no notice.
            server_target(&server, Source::Flag)
        }
        Reach::StoreOnly(verb, why) => {
            if server_flag.is_some() {
                return Err(usage(format!(
                    "`warden {verb}` works on the store, not through a server: {why}; give it --data-dir or --database-url (or run it where the store is)"
                )));
            }
            Ok(Target::Store(store(&args.store).await?))
        }
        Reach::Both(default) => {
            match (server_flag, store_flag) {
                (Some(_), Some(_)) => {
                    return Err(usage(
                        "give --server or --data-dir/--database-url, not both: the first works through the server, the others on the store",
                    ));
                }
                (Some(server), None) => return server_target(server, Source::Flag),
                (None, Some(l)) => return Ok(Target::Store(l)),
                (None, None) => {}
            }
            match (env("WARDEN_SERVER"), store_env()) {
                (Some(_), Some((_, var))) => {
                    return Err(usage(format!(
                        "WARDEN_SERVER and {var} are both set, so it is not clear whether to work through the server or on the store: unset one, or choose with --server or --data-dir/--database-url"
                    )));
                }
                (Some(server), None) => {
                    return server_target(&server, Source::Environment("WARDEN_SERVER"));
                }
                (None, Some((l, var))) => {
                    say_which_store(&l, Source::Environment(var), true).await;
                    return Ok(Target::Store(l));
                }
                (None, None) => {}
            }
            if let Some(c) = context_cmd::load()? {
                return server_target(&c.server, Source::Context);
            }
            match default {
                Side::Server => server_target(DEFAULT_SERVER, Source::Default),
                Side::Store => {
                    let l = Location::DataDir(default_data_dir()?);
                    say_which_store(&l, Source::Default, true).await;
                    Ok(Target::Store(l))
                }
            }
        }
    }
}

/// The server named by the environment, else the context's, else the default.
fn server_after_flags() -> anyhow::Result<String> {
    if let Some(s) = env("WARDEN_SERVER") {
        return Ok(s);
    }
    if let Some(c) = context_cmd::load()? {
        return Ok(c.server);
    }
    Ok(DEFAULT_SERVER.to_owned())
}

/// The API of `server`, with the token from `WARDEN_TOKEN`, else from the context's token file
/// when `server` is the context's server; said when it is the default of a verb that could have
/// worked on the store.
fn server_target(server: &str, from: Source) -> anyhow::Result<Target> {
    if from == Source::Default {
        say_which(&format!(
            "using the server at {} (from the default; --data-dir for the store)",
            server.trim_end_matches('/')
        ));
    }
    let token = match env("WARDEN_TOKEN") {
        Some(t) => t.trim().to_owned(),
        None => context_cmd::load()?
            .map(|c: Context| c.token_for(server))
            .transpose()?
            .flatten()
            .ok_or_else(|| {
                usage(format!(
                    "WARDEN_TOKEN is not set: export a token for the server at {server} (`warden token create`), or keep it in a file named by `warden context set --server {server} --token-file PATH`"
                ))
            })?,
    };
    Ok(Target::Server(Api::new(server, token)?))
}

/// The one line on stderr that says which server or store a verb uses (never on stdout).
fn say_which(line: &str) {
    eprintln!("{line}");
}

/// The address of the server the CLI would ask (`WARDEN_SERVER`, else the context's, else
/// [`DEFAULT_SERVER`]), when it is on this machine.
fn local_server() -> Option<(String, std::net::SocketAddr)> {
    let server = env("WARDEN_SERVER")
        .or_else(|| context_cmd::load().ok().flatten().map(|c| c.server))
        .unwrap_or_else(|| DEFAULT_SERVER.into());
    let url = reqwest::Url::parse(&server).ok()?;
    let ip: std::net::IpAddr = match url.host_str()? {
        "localhost" => std::net::Ipv4Addr::LOCALHOST.into(),
        host => host
            .trim_start_matches('[')
            .trim_end_matches(']')
            .parse()
            .ok()?,
    };
    let port = url.port_or_known_default()?;
    ip.is_loopback()
        .then(|| (server.clone(), std::net::SocketAddr::new(ip, port)))
}

/// Whether the `serving` file of `dir` names the server at `addr`.
fn serves(dir: &Path, addr: std::net::SocketAddr) -> bool {
    std::fs::read_to_string(dir.join(SERVING_FILE))
        .ok()
        .and_then(|s| s.trim().parse::<std::net::SocketAddr>().ok())
        .is_some_and(|bound| {
            bound.port() == addr.port()
                && (bound.ip() == addr.ip()
                    || bound.ip().is_unspecified()
                    || (bound.ip().is_loopback() && addr.ip().is_loopback()))
        })
}

/// Which store a verb uses is ambiguous when its data directory was not named on its command
/// line (it came from `WARDEN_DATA_DIR`, or is the default) while a server answers at the
/// CLI's server address ([`local_server`], when that is a loopback address) that does not serve
/// this data directory (its `serving` file names another address, or there is none): then one
/// line on stderr names the store, because the server never sees what the verb changes.
/// `through` adds how to work through that server instead, for the verbs that can.
async fn say_which_store(location: &Location, from: Source, through: bool) {
    let (Location::DataDir(dir), Source::Environment(_) | Source::Default) = (location, from)
    else {
        return;
    };
    let Some((server, addr)) = local_server() else {
        return;
    };
    if serves(dir, addr) {
        return;
    }
    let probe = tokio::net::TcpStream::connect(addr);
    if !matches!(
        tokio::time::timeout(std::time::Duration::from_millis(200), probe).await,
        Ok(Ok(_))
    ) {
        return;
    }
    let from = match from {
        Source::Environment(var) => format!("from {var}"),
        _ => "the default data directory".to_owned(),
    };
    let or_through = if through {
        format!(", or --server {server} to work through that server")
    } else {
        String::new()
    };
    say_which(&format!(
        "using the store at {} ({from}), which the server at {server} does not serve: it will not see these changes (give the command the server's store with --data-dir{or_through})",
        dir.display()
    ));
}
