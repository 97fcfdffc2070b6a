//! The audit trail as OTLP logs (AUD-5, `--otlp-audit`): an in-test OTLP/HTTP collector
//! receives each record of a governed call once, in order, with its sequence number and hash;
//! a collector that refuses gets the same records again until it takes them; and a server
//! that stopped goes on from its cursor, records written meanwhile by the CLI included.

use std::collections::BTreeMap;
use std::sync::Mutex;
use std::sync::atomic::AtomicBool;

use opentelemetry_proto::tonic::collector::logs::v1::ExportLogsServiceRequest;
use opentelemetry_proto::tonic::common::v1::any_value::Value as Any;
use prost::Message as _;

use super::*;

/// A log record as the collector received it.
#[derive(Clone, Debug)]
struct Log {
    event: String,
    attributes: BTreeMap<String, String>,
    body: Value,
}

impl Log {
    fn seq(&self) -> i64 {
        self.attributes["warden.seq"].parse().unwrap()
    }
}

/// What the collector received, and whether it takes what it is sent.
#[derive(Default)]
struct Collector {
    logs: Mutex<Vec<Log>>,
    refusing: AtomicBool,
    refused: AtomicUsize,
}

/// An OTLP/HTTP logs collector (protobuf), refusing with 503 while told to.
async fn logs_collector() -> (SocketAddr, Arc<Collector>) {
    let collector = Arc::new(Collector::default());
    let kept = collector.clone();
    let app = axum::Router::new().route(
        "/v1/logs",
        axum::routing::post(move |body: axum::body::Bytes| {
            let kept = kept.clone();
            async move {
                if kept.refusing.load(Ordering::SeqCst) {
                    kept.refused.fetch_add(1, Ordering::SeqCst);
                    return http::StatusCode::SERVICE_UNAVAILABLE;
                }
                let request = ExportLogsServiceRequest::decode(body).unwrap();
                let mut logs = kept.logs.lock().unwrap();
                for record in request
                    .resource_logs
                    .iter()
                    .flat_map(|r| &r.scope_logs)
                    .flat_map(|s| &s.log_records)
                {
                    let attributes = record
                        .attributes
                        .iter()
                        .map(|kv| {
                            let value = match kv.value.as_ref().and_then(|v| v.value.as_ref()) {
                                Some(Any::StringValue(s)) => s.clone(),
                                Some(Any::IntValue(i)) => i.to_string(),
                                other => panic!("unexpected attribute value {other:?}"),
                            };
                            (kv.key.clone(), value)
                        })
                        .collect();
                    let Some(Any::StringValue(body)) =
                        record.body.as_ref().and_then(|b| b.value.as_ref())
                    else {
                        panic!("a log record's body is its record's line")
                    };
                    logs.push(Log {
                        event: record.event_name.clone(),
                        attributes,
                        body: serde_json::from_str(body).unwrap(),
                    });
                }
                http::StatusCode::OK
            }
        }),
    );
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move { axum::serve(listener, app).await });
    (addr, collector)
}

/// `warden serve` on `data` sending its trail to `collector`, with `extra` arguments: the
/// child, its MCP URL and, on a new store (`new`), the admin token it printed.
fn serve_sending(
    data: &Path,
    log: &Path,
    collector: SocketAddr,
    new: bool,
    extra: &[&str],
) -> (std::process::Child, String, String) {
    let endpoint = format!("http://{collector}");
    let d = dir_arg(data);
    let mut child = warden(&["serve", "--listen", "127.0.0.1:0", "--data-dir", &d])
        .args(["--no-demo", "--otlp-endpoint", &endpoint, "--otlp-audit"])
        .args(["--log-format", "json"])
        .args(extra)
        .stdout(Stdio::piped())
        .stderr(std::fs::File::create(log).unwrap())
        .spawn()
        .unwrap();
    let mut stdout = BufReader::new(child.stdout.take().unwrap());
    let (mut mcp, mut admin) = (String::new(), String::new());
    while mcp.is_empty() || (new && admin.is_empty()) {
        let mut line = String::new();
        assert!(
            stdout.read_line(&mut line).unwrap() > 0,
            "warden serve ended"
        );
        if let Some(url) = line.trim().strip_prefix("mcp: ") {
            mcp = url.to_owned();
        } else if let Some(token) = line.trim().strip_prefix("admin token: ") {
            admin = token.to_owned();
        }
    }
    // Keep reading what it prints, so that it never blocks on a full pipe.
    std::thread::spawn(move || std::io::copy(&mut stdout, &mut std::io::sink()));
    (child, mcp, admin)
}

/// SIGTERM, then the end.
fn stop(mut child: std::process::Child) {
    let pid = child.id().to_string();
    assert!(
        Command::new("kill")
            .args(["-TERM", &pid])
            .status()
            .unwrap()
            .success()
    );
    assert!(child.wait().unwrap().success());
}

/// Waits (at most 20 s) until the collector holds a record of `event`; the first.
async fn until_event(collector: &Collector, event: &str) -> Log {
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        if let Some(log) = collector
            .logs
            .lock()
            .unwrap()
            .iter()
            .find(|l| l.event == event)
        {
            return log.clone();
        }
        assert!(Instant::now() < deadline, "no {event} arrived");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// Waits (at most 20 s) until the collector holds a record with a sequence number of at
/// least `seq`.
async fn until_received(collector: &Collector, seq: i64) {
    let deadline = Instant::now() + Duration::from_secs(20);
    while !collector
        .logs
        .lock()
        .unwrap()
        .iter()
        .any(|l| l.seq() >= seq)
    {
        assert!(Instant::now() < deadline, "record {seq} never arrived");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_trail_reaches_a_collector_once_in_order_across_refusals_and_restarts() {
    let (addr, collector) = logs_collector().await;
    collector.refusing.store(true, Ordering::SeqCst);
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data");
    let log = dir.path().join("warden.log");
    let d = dir_arg(&data);
    let config = dir.path().join("notes.yaml");
    std::fs::write(
        &config,
        format!(
            "kind: Project\nname: t\n---\n{}",
            stdio_upstream("notes", "t", "")
        ),
    )
    .unwrap();
    let (child, mcp, token) =
        serve_sending(&data, &log, addr, true, &["--config", &dir_arg(&config)]);
    // Settled before the server answered anything: the records from here on are sent.
    let cursor: i64 = std::fs::read_to_string(data.join("audit-otlp-logs.cursor"))
        .unwrap()
        .trim()
        .parse()
        .unwrap();
    let client = http_client(&mcp, &token, Era::Stateless).await;
    let result = call(&client, "notes__echo", json!({ "text": "hello" })).await;
    assert_eq!(decision(&result)["status"], "executed", "{result:?}");
    // Refused, and asked again: nothing taken yet.
    let deadline = Instant::now() + Duration::from_secs(20);
    while collector.refused.load(Ordering::SeqCst) < 2 {
        assert!(
            Instant::now() < deadline,
            "the collector was not asked again"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert!(collector.logs.lock().unwrap().is_empty());
    collector.refusing.store(false, Ordering::SeqCst);
    let outcome = until_event(&collector, "warden.audit.outcome").await;
    let store = warden_store::Store::open(&warden_store::Location::DataDir(data.clone()))
        .await
        .unwrap();
    let stored = store
        .audit(&warden_store::AuditFilter {
            after_seq: Some(outcome.seq() - 1),
            limit: Some(1),
            ..Default::default()
        })
        .await
        .unwrap()
        .pop()
        .expect("the call's outcome in the store");
    assert_eq!(outcome.attributes["warden.hash"], stored.hash);
    assert_eq!(outcome.attributes["warden.kind"], "outcome");
    assert_eq!(outcome.attributes["warden.tool"], "notes__echo");
    assert_eq!(outcome.body["seq"], stored.seq);
    assert_eq!(outcome.body["hash"], stored.hash.as_str());
    {
        let logs = collector.logs.lock().unwrap();
        let events: Vec<&str> = logs.iter().map(|l| l.event.as_str()).collect();
        for kind in ["call", "decision"] {
            assert!(
                events.contains(&format!("warden.audit.{kind}").as_str()),
                "{events:?}"
            );
        }
    }
    stop(child);

    // Stopped: the CLI changes the configuration (an admin record); started again, the
    // server sends that record, and nothing twice.
    let more = dir.path().join("more.yaml");
    std::fs::write(&more, "kind: Project\nname: later\n").unwrap();
    let applied = warden(&["apply", "-f", &dir_arg(&more), "--data-dir", &d])
        .output()
        .unwrap();
    assert!(applied.status.success(), "{applied:?}");
    let head = store.audit_head().await.unwrap();
    let (child, _, _) = serve_sending(&data, &log, addr, false, &[]);
    until_received(&collector, head).await;
    stop(child);
    let logs = collector.logs.lock().unwrap();
    let seqs: Vec<i64> = logs.iter().map(Log::seq).collect();
    let last = seqs[seqs.len() - 1];
    assert!(last >= head);
    assert_eq!(
        seqs,
        (cursor + 1..=last).collect::<Vec<_>>(),
        "each record once, in order, none missing"
    );
    assert!(
        logs.iter().any(
            |l| l.attributes.get("warden.tool").map(String::as_str) == Some("apply")
                && l.seq() > outcome.seq()
        ),
        "the CLI's change was sent: {:?}",
        logs.iter().map(|l| &l.attributes).collect::<Vec<_>>()
    );
}
