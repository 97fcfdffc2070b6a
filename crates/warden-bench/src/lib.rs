//! `warden bench`: measures any MCP endpoint over Streamable HTTP in both protocol eras — and,
//! with `--direct`, the upstream behind it in the same run, alternating rounds, so that the
//! gateway/direct ratios hold on a noisy machine (PERF-1, PERF-2). Also a fast fixture upstream,
//! a bare TCP forwarder (the floor of any proxy) and the generators for the catalog and audit-growth
//! scenarios (PERF-3, PERF-4).

pub mod client;
pub mod forward;
pub mod load;
pub mod report;
pub mod seed;
pub mod upstream;

use std::sync::Arc;

use serde_json::{Value, json};

pub use client::Era;
pub use load::{Amount, Mix, Op, Tools};
pub use report::Report;

/// Everything one `warden bench` run needs.
#[derive(Clone, Debug)]
pub struct BenchOptions {
    /// The endpoint under test.
    pub url: String,
    /// Its bearer token.
    pub token: Option<String>,
    /// The upstream, measured directly in the same run.
    pub direct: Option<String>,
    /// What the endpoint puts before the upstream's tool names, taken off them for the direct
    /// rounds; `None`: everything up to the first `__` (Warden's `<prefix>__`).
    pub direct_prefix: Option<String>,
    /// The era to speak.
    pub era: Era,
    /// Clients, duration or request count, warm-up.
    pub amount: Amount,
    /// Rounds per target (alternating with `direct`).
    pub rounds: usize,
    /// The call mix.
    pub mix: Mix,
    /// Tool names at the endpoint under test.
    pub tools: Tools,
    /// Sample this process's resident memory after the run.
    pub rss_pid: Option<u32>,
}

/// The tool names at the upstream: catalog names lose `prefix`, or without one their
/// `<prefix>__`.
fn direct_tools(tools: &Tools, prefix: Option<&str>) -> Tools {
    let strip = |name: &str| {
        match prefix {
            Some(p) => name.strip_prefix(p).unwrap_or(name),
            None => name.split_once("__").map_or(name, |(_, rest)| rest),
        }
        .to_owned()
    };
    Tools {
        read: strip(&tools.read),
        write: strip(&tools.write),
        denied: strip(&tools.denied),
        arguments: tools.arguments.clone(),
    }
}

/// Runs the benchmark and builds its report.
pub async fn run(options: BenchOptions) -> Result<Report, String> {
    let gateway = Arc::new(client::Endpoint {
        url: options.url.clone(),
        token: options.token.clone(),
        era: options.era,
    });
    let tools = Arc::new(options.tools.clone());
    let direct = options.direct.as_ref().map(|url| {
        (
            Arc::new(client::Endpoint {
                url: url.clone(),
                token: None,
                era: options.era,
            }),
            Arc::new(direct_tools(
                &options.tools,
                options.direct_prefix.as_deref(),
            )),
        )
    });
    // The upstream denies nothing: a direct round runs the rest of the mix.
    let direct_mix = options.mix.without(Op::Denied);
    let mut measured_gateway: Option<load::Measured> = None;
    let mut measured_direct: Option<load::Measured> = None;
    for _ in 0..options.rounds.max(1) {
        let m = load::run(gateway.clone(), tools.clone(), &options.mix, options.amount).await?;
        match &mut measured_gateway {
            Some(all) => all.merge(&m),
            None => measured_gateway = Some(m),
        }
        if let (Some((endpoint, tools)), Some(mix)) = (&direct, &direct_mix) {
            let m = load::run(endpoint.clone(), tools.clone(), mix, options.amount).await?;
            match &mut measured_direct {
                Some(all) => all.merge(&m),
                None => measured_direct = Some(m),
            }
        }
    }
    let gateway_report = measured_gateway
        .map(|m| report::TargetReport::of(&options.url, &m))
        .ok_or("nothing was measured")?;
    let direct_report = match (&options.direct, measured_direct) {
        (Some(url), Some(m)) => Some(report::TargetReport::of(url, &m)),
        _ => None,
    };
    let config = json!({
        "url": options.url,
        "direct": options.direct,
        "direct_prefix": options.direct_prefix,
        "era": options.era,
        "amount": options.amount,
        "rounds": options.rounds.max(1),
        "mix": options.mix.0.iter().map(|(op, w)| (op.as_str().to_owned(), json!(w))).collect::<serde_json::Map<String, Value>>(),
        "tools": options.tools,
        "version": env!("CARGO_PKG_VERSION"),
    });
    let rss = options.rss_pid.and_then(seed::rss_mib);
    Ok(Report::new(config, gateway_report, direct_report, rss))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tools(read: &str, write: &str) -> Tools {
        Tools {
            read: read.into(),
            write: write.into(),
            denied: "bench__tool_0000".into(),
            arguments: json!({}),
        }
    }

    #[test]
    fn direct_rounds_call_the_upstreams_own_names() {
        let t = direct_tools(&tools("bench__read", "x__y__write"), None);
        assert_eq!((t.read.as_str(), t.write.as_str()), ("read", "y__write"));
        assert_eq!(t.denied, "tool_0000");
        // Another gateway's naming (ContextForge's `<gateway>-<tool>`).
        let t = direct_tools(&tools("bench-read", "bench__write"), Some("bench-"));
        assert_eq!(
            (t.read.as_str(), t.write.as_str()),
            ("read", "bench__write")
        );
        let t = direct_tools(&tools("read", "write"), Some(""));
        assert_eq!((t.read.as_str(), t.write.as_str()), ("read", "write"));
    }
}
