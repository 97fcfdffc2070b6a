//! Runs and tasks (`get runs|tasks`, `describe run|task`) both ways, and the verbs that work
//! one way only (docs/cli.md's table of them), which say why when given the other side.

use serde_json::json;

use crate::common::{Era, TestWarden, call, decision, http_client};
use crate::support::{Both, config};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn runs_and_tasks_read_the_same_both_ways() {
    let w = TestWarden::start(&config()).await;
    let cli = Both::new(&w);
    let client = http_client(&w.mcp(), &w.admin, Era::Stateless).await;
    let echoed = call(&client, "alpha__echo", json!({"text": "hi"})).await;
    call(&client, "nope", json!({})).await;
    let run = decision(&echoed)["runId"].as_str().unwrap().to_owned();
    // An unattended run, started by the server's runner.
    let agent_run = cli.api(&["run", "agent", "bot", "--wait"]).ok();
    let agent_run = agent_run.stdout.trim().to_owned();
    assert!(agent_run.starts_with("run_"), "{agent_run}");
    for format in ["table", "json", "yaml"] {
        cli.same(&["get", "runs", "-o", format]).ok();
        cli.same(&["describe", "run", &run, "-o", format]).ok();
        cli.same(&["describe", "run", &agent_run, "-o", format])
            .ok();
    }
    let one = cli.same(&["get", "runs", &run, "-o", "json"]).json();
    assert_eq!(one[0]["status"], "executed", "{one}");
    let described = cli
        .same(&["describe", "run", &agent_run, "-o", "json"])
        .json();
    assert_eq!(described["lifecycle"]["status"], "succeeded", "{described}");
    assert_eq!(
        described["lifecycle"]["requestedBy"]["kind"], "principal",
        "{described}"
    );
    cli.same_failure(
        &["describe", "run", "run_nope"],
        1,
        "error: no run `run_nope`\n",
    );

    // A task, created where admission is decided: through the server.
    let created = cli
        .api(&["task", "create", "--workspace", "board", "--title", "first"])
        .ok();
    let task = created.stdout.trim().to_owned();
    assert!(task.starts_with("task_"), "{task}");
    for format in ["table", "json", "yaml"] {
        cli.same(&["get", "tasks", "-o", format]).ok();
        cli.same(&["get", "tasks", &task, "-o", format]).ok();
        cli.same(&["describe", "task", &task, "-o", format]).ok();
    }
    let detail = cli.same(&["describe", "task", &task, "-o", "json"]).json();
    assert_eq!(detail["task"]["title"], "first", "{detail}");
    assert_eq!(detail["task"]["createdBy"]["kind"], "principal", "{detail}");
    cli.same_failure(
        &["describe", "task", "task_nope"],
        1,
        "error: no task `task_nope`\n",
    );
}

/// The one-sided verbs of docs/cli.md's table: verb, where it works, why.
fn one_sided_verbs_of_the_docs() -> Vec<[String; 3]> {
    let docs = include_str!("../../../../docs/cli.md");
    let start = docs.find("| verb | works | why |").unwrap();
    docs[start..]
        .lines()
        .take_while(|l| l.starts_with('|'))
        .skip(2)
        .map(|row| {
            let cells: Vec<&str> = row.trim_matches('|').split(" | ").map(str::trim).collect();
            [
                cells[0].trim_matches('`').to_owned(),
                cells[1].to_owned(),
                cells[2].to_owned(),
            ]
        })
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn each_one_sided_verb_refuses_the_other_side_in_one_line_naming_the_flags_to_use() {
    let w = TestWarden::start(&config()).await;
    let cli = Both::new(&w);
    let verbs = one_sided_verbs_of_the_docs();
    let names: Vec<&str> = verbs.iter().map(|[verb, _, _]| verb.as_str()).collect();
    assert_eq!(
        names,
        [
            "approvals approve",
            "approvals reject",
            "approvals veto",
            "explain",
            "call",
            "chat",
            "tools inventory",
            "tools upstreams",
            "run agent",
            "task create",
            "epic create",
            "epic list",
            "epic get",
            "epic update",
            "epic task add",
            "epic task move",
            "epic task review",
            "epic task accept",
            "audit checkpoint export",
            "audit export",
            "audit key",
            "audit archive",
        ]
    );
    for [verb, works, why] in &verbs {
        let mut args: Vec<&str> = verb.split(' ').collect();
        args.extend(match verb.as_str() {
            "approvals approve" | "approvals reject" | "approvals veto" => vec!["apr_x"],
            "explain" => vec!["--tool", "alpha__echo"],
            "call" => vec!["alpha__echo"],
            "chat" => vec!["bot", "hello"],
            "run agent" => vec!["bot"],
            "task create" => vec!["--title", "t"],
            "epic create" => vec!["--project", "p", "--title", "t"],
            "epic get" | "epic update" => vec!["epc_x"],
            "epic task add" => vec![
                "epc_x",
                "--title",
                "t",
                "--workspace",
                "w",
                "--repository",
                "r",
                "--branch",
                "b",
            ],
            "epic task move" => vec!["ept_x", "review"],
            "epic task review" => vec!["ept_x", "--verdict", "approve"],
            "epic task accept" => vec!["ept_x"],
            "audit archive" => vec!["--before", "90d", "-o", "archive.jsonl"],
            _ => vec![],
        });
        let (ran, expected) = match works.as_str() {
            "through a server" => (
                cli.store(&args),
                format!(
                    "error: `warden {verb}` works through a running server, not on a store: {why}; give it --server URL (or WARDEN_SERVER) and a token in WARDEN_TOKEN\n"
                ),
            ),
            "on the store" => (
                cli.api(&args),
                format!(
                    "error: `warden {verb}` works on the store, not through a server: {why}; give it --data-dir or --database-url (or run it where the store is)\n"
                ),
            ),
            other => panic!("`{verb}` works `{other}`"),
        };
        assert_eq!(
            (ran.code, ran.stderr.as_str(), ran.stdout.as_str()),
            (Some(2), expected.as_str(), ""),
            "{args:?}"
        );
    }
    let explained = cli
        .api(&[
            "explain",
            "--tool",
            "alpha__add_note",
            "--args",
            r#"{"text": "x"}"#,
            "-o",
            "json",
        ])
        .ok()
        .json();
    assert_eq!(explained["explanation"]["would"], "pending_approval");
    let inventory = cli.api(&["tools", "inventory", "-o", "json"]).ok().json();
    assert!(!inventory["tools"].as_array().unwrap().is_empty());
    // Their refusals are the server's: an unknown agent is a 404 (exit 1).
    let unknown = cli.api(&["run", "agent", "nobody"]);
    assert_eq!(unknown.code, Some(1), "{}", unknown.stderr);
}

/// `warden tools upstreams`: each upstream with its state — up and in which protocol, or down
/// with why — as `/readyz` has it; refused without `tools:inventory`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tools_upstreams_shows_each_upstream_and_its_state() {
    let config = format!(
        "{}---\nkind: Upstream\nname: broken\nproject: alpha\nstdio: {{ command: \"/nonexistent/warden-test-command\" }}\n",
        config()
    );
    let w = TestWarden::start(&config).await;
    let cli = Both::new(&w);
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(20);
    let shown = loop {
        let shown = cli.api(&["tools", "upstreams", "-o", "json"]).ok().json();
        let states: Vec<&str> = shown["upstreams"]
            .as_array()
            .unwrap()
            .iter()
            .map(|u| u["state"].as_str().unwrap())
            .collect();
        if !states.contains(&"starting") {
            break shown;
        }
        assert!(std::time::Instant::now() < deadline, "{shown}");
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    };
    let by_name = |name: &str| {
        shown["upstreams"]
            .as_array()
            .unwrap()
            .iter()
            .find(|u| u["name"] == name)
            .cloned()
            .unwrap_or_else(|| panic!("no {name}: {shown}"))
    };
    let alpha = by_name("alpha");
    assert_eq!(alpha["state"], "up", "{shown}");
    assert!(alpha["protocol"].is_string(), "{shown}");
    assert!(alpha["tools"].as_u64().unwrap() > 0, "{shown}");
    let broken = by_name("broken");
    assert_eq!(broken["state"], "down", "{shown}");
    assert!(
        broken["reason"]
            .as_str()
            .unwrap()
            .contains("/nonexistent/warden-test-command"),
        "{shown}"
    );
    let table = cli.api(&["tools", "upstreams"]).ok().stdout;
    assert!(table.starts_with("UPSTREAM"), "{table}");
    assert!(table.contains("down"), "{table}");
}
