//! Runs and tasks (`get runs|tasks`, `describe run|task`) both ways, and the verbs that only a
//! running server can do (`run agent`, `task create`, `explain`, `tools inventory`), which say
//! why when they are given a store.

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

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_verbs_of_a_running_server_say_why_they_need_it() {
    let w = TestWarden::start(&config()).await;
    let cli = Both::new(&w);
    for (args, verb, why) in [
        (
            vec!["explain", "--tool", "alpha__echo"],
            "explain",
            "the decision is made with the server's live catalog (the tools its upstreams advertise)",
        ),
        (
            vec!["tools", "inventory"],
            "tools inventory",
            "the inventory is the server's live catalog (the tools its upstreams advertise)",
        ),
        (
            vec!["run", "agent", "bot"],
            "run agent",
            "the run is started by the server's runner, with a run credential it mints",
        ),
        (
            vec!["task", "create", "--title", "t"],
            "task create",
            "admission decides by the caller's credential, which only the server verifies",
        ),
    ] {
        let ran = cli.store(&args);
        assert_eq!(ran.code, Some(2), "{args:?}");
        assert_eq!(
            ran.stderr,
            format!(
                "error: `warden {verb}` works through a running server, not on a store: {why}; give it --server URL (or WARDEN_SERVER) and a token in WARDEN_TOKEN\n"
            )
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
