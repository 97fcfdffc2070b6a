//! A form the server does not accept comes back as it was typed, with the error beside the
//! field it is about — never a page of its own that throws the form away.

use crate::common::*;
use crate::config;
use crate::plain::Plain;

/// The error shown beside `field` in `page`, as text.
fn error_at(page: &str, field: &str) -> String {
    let marker = format!("class=\"field-error\" role=\"alert\" data-field=\"{field}\">");
    let at = page
        .find(&marker)
        .unwrap_or_else(|| panic!("no error beside `{field}`: {page}"));
    let rest = &page[at + marker.len()..];
    rest[..rest.find("</p>").unwrap()]
        .replace("<code>", "")
        .replace("</code>", "")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_refused_kill_switch_keeps_what_was_typed_and_says_which_field() {
    let w = TestWarden::start(&config()).await;
    let console = Plain::sign_in(&w, &w.admin).await;
    let (status, page) = console
        .post(
            "/kill-switches",
            &[
                ("scope", "project"),
                ("target", ""),
                ("reason", "incident 4411"),
            ],
        )
        .await;
    assert_eq!(status, 400, "{page}");
    assert_eq!(
        error_at(&page, "target"),
        "name what the switch freezes (or choose everything)"
    );
    assert!(
        page.contains(r#"value="incident 4411""#),
        "the reason kept: {page}"
    );
    assert!(
        page.contains(r#"<option value="project" selected>"#),
        "the scope kept: {page}"
    );
    assert!(!page.contains("Back to the overview"), "{page}");
    let (status, page) = console
        .post(
            "/kill-switches",
            &[("scope", "agent"), ("target", "Not A Name"), ("reason", "")],
        )
        .await;
    assert_eq!(status, 400, "{page}");
    assert!(error_at(&page, "target").starts_with("agent: "), "{page}");
    assert!(page.contains(r#"value="Not A Name""#), "{page}");
    assert!(
        w.gateway
            .snapshot()
            .policy
            .config
            .of_kind(warden_core::config::Kind::KillSwitch)
            .next()
            .is_none()
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_token_for_an_unknown_user_is_refused_beside_the_owner_with_the_form_kept() {
    let w = TestWarden::start(&config()).await;
    let console = Plain::sign_in(&w, &w.admin).await;
    let before = w.store.store.credentials().await.unwrap().len();
    let (status, page) = console
        .post(
            "/tokens",
            &[
                ("owner_kind", "user"),
                ("owner", "mallory"),
                ("projects", "payments"),
                ("ttl", "30d"),
                ("description", "for the drill"),
            ],
        )
        .await;
    assert_eq!(status, 422, "{page}");
    assert_eq!(
        error_at(&page, "owner"),
        "no User named mallory; apply it first"
    );
    for kept in [
        r#"value="mallory""#,
        r#"value="payments""#,
        r#"value="30d""#,
        r#"value="for the drill""#,
    ] {
        assert!(page.contains(kept), "{kept} kept: {page}");
    }
    let (status, page) = console
        .post(
            "/tokens",
            &[("owner_kind", "user"), ("owner", "alice"), ("ttl", "soon")],
        )
        .await;
    assert_eq!(status, 400, "{page}");
    assert!(error_at(&page, "ttl").contains("soon"), "{page}");
    assert_eq!(
        w.store.store.credentials().await.unwrap().len(),
        before,
        "nothing created"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn explain_shows_bad_json_and_an_unknown_user_beside_their_fields() {
    let w = TestWarden::start(&config()).await;
    let console = Plain::sign_in(&w, &w.admin).await;
    let (status, page) = console
        .get("/explain?tool=ledger__echo&arguments=%7Bnot+json&user=alice")
        .await;
    assert_eq!(status, 400, "{page}");
    assert!(
        error_at(&page, "arguments").starts_with("the arguments are not JSON: "),
        "{page}"
    );
    assert!(
        page.contains("{not json</textarea>"),
        "the arguments kept: {page}"
    );
    let (status, page) = console.get("/explain?tool=ledger__echo&user=nobody").await;
    assert_eq!(status, 404, "{page}");
    // Not "the credential's owner no longer exists": nobody was ever configured.
    assert_eq!(error_at(&page, "user"), "user:nobody is not configured");
    assert!(page.contains(r#"value="nobody""#), "{page}");
    // Each beside its own field: the service's refusal names which (not words read back).
    let (status, page) = console
        .get("/explain?tool=ledger__echo&service_account=nobody")
        .await;
    assert_eq!(status, 404, "{page}");
    assert!(
        error_at(&page, "service_account").ends_with("nobody is not configured"),
        "{page}"
    );
    let (status, page) = console.get("/explain?tool=ledger__echo&agent=ghost").await;
    assert_eq!(status, 404, "{page}");
    assert_eq!(error_at(&page, "agent"), "no agent named ghost");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn run_now_starts_an_agents_run_and_says_which_or_why_not() {
    let w = TestWarden::start(&format!(
        "{}---\nkind: Agent\nname: echo-bot\nmemberships: [payments]\n\
         runner: {{ command: /bin/echo, args: [\"hello from the runner\"] }}\n",
        config()
    ))
    .await;
    let console = Plain::sign_in(&w, &w.admin).await;
    let (_, page) = console.get("/agents").await;
    assert!(page.contains(r#"action="/agents/sre-bot/run""#), "{page}");
    let (status, to) = console.post("/agents/sre-bot/run", &[]).await;
    assert_eq!((status, to.as_str()), (303, "/agents"));
    let (_, page) = console.get("/agents").await;
    let runs = w.store.store.agent_runs(Some("sre-bot"), 10).await.unwrap();
    assert_eq!(runs.len(), 1, "one run started");
    assert!(
        page.contains(&format!("Run {} of agent sre-bot started", runs[0].id)),
        "{page}"
    );
    let (status, page) = console.post("/agents/ghost/run", &[]).await;
    assert_eq!(status, 404, "{page}");
    assert!(page.contains("no agent named <code>ghost</code>"), "{page}");
    assert!(
        page.contains("id=\"agents\""),
        "the agents page, not a page of its own: {page}"
    );
    // Without `agents:run` there is no button, and the server refuses the form.
    let dave = w.token("dave", None, None).await;
    let other = Plain::sign_in(&w, &dave).await;
    let (status, page) = other.post("/agents/sre-bot/run", &[]).await;
    assert_eq!(status, 403, "{page}");
    assert_eq!(
        w.store
            .store
            .agent_runs(Some("sre-bot"), 10)
            .await
            .unwrap()
            .len(),
        1
    );
    // What a runner prints is kept with its run and shown with it.
    let (status, _) = console.post("/agents/echo-bot/run", &[]).await;
    assert_eq!(status, 303);
    let mut run = None;
    for _ in 0..100 {
        let runs = w.store.store.agent_runs(Some("echo-bot"), 1).await.unwrap();
        if runs.first().is_some_and(|r| r.finished_at.is_some()) {
            run = runs.into_iter().next();
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    }
    let run = run.expect("the run ended");
    assert_eq!(
        run.output.as_deref(),
        Some("hello from the runner\n"),
        "{run:?}"
    );
    let (_, page) = console.get("/agents").await;
    assert!(page.contains("hello from the runner"), "{page}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_task_id_leads_to_its_page_with_environment_and_sessions() {
    let w = TestWarden::start(&config()).await;
    let alice = w.token("alice", None, None).await;
    let client = http_client(&w.mcp(), &alice, Era::Sessions).await;
    let created = call(
        &client,
        "tasks__create_task",
        serde_json::json!({ "title": "Reconcile the ledger", "workspace_id": "web-board" }),
    )
    .await;
    let id = created.structured_content.as_ref().unwrap()["data"]["task"]["id"]
        .as_str()
        .unwrap_or_else(|| panic!("{created:?}"))
        .to_owned();
    let console = Plain::sign_in(&w, &w.admin).await;
    let (_, list) = console.get("/tasks").await;
    assert!(list.contains(&format!("href=\"/tasks/{id}\"")), "{list}");
    let (status, page) = console.get(&format!("/tasks/{id}")).await;
    assert_eq!(status, 200, "{page}");
    for needle in [
        "Reconcile the ledger",
        "web-board",
        "id=\"environment\"",
        "No agent run is bound",
    ] {
        assert!(page.contains(needle), "`{needle}`: {page}");
    }
    let (status, page) = console.get("/tasks/task_nope").await;
    assert_eq!(status, 404, "{page}");
    assert!(page.contains("no task <code>task_nope</code>"), "{page}");
}
