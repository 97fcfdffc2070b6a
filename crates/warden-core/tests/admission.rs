//! Table-driven golden tests of task admission (TASK-2..TASK-8): YAML fixtures in
//! `tests/fixtures/admission/`, every case's admission or refusal (code, message, reason) as
//! an insta snapshot.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::indexing_slicing,
    reason = "test code"
)]

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};
use warden_core::admission::{
    Admitted, Caller, Context, CreateRequest, Refusal, TaskView, WorkspaceView, admit,
    admit_on_own_path, recheck_existing,
};

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Fixture {
    /// Every workspace; `authorised` is filled per caller.
    workspaces: Vec<WorkspaceView>,
    /// Stored tasks by id (the id is filled in).
    tasks: BTreeMap<String, TaskFixture>,
    callers: BTreeMap<String, CallerFixture>,
    cases: Vec<Case>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct TaskFixture {
    workspace: String,
    #[serde(default)]
    from_office: bool,
    #[serde(default)]
    environment: Option<Vec<warden_core::admission::EnvironmentRepository>>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct CallerFixture {
    /// `session` (with `task`), `external` or `unverified`.
    surface: String,
    #[serde(default)]
    session: Option<String>,
    #[serde(default)]
    task: Option<String>,
    /// The workspaces this caller is authorised in.
    #[serde(default)]
    authorised: Vec<String>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Case {
    name: String,
    caller: String,
    #[serde(default)]
    request: CreateRequest,
    /// For an idempotent retry: the task the destination's external id names.
    #[serde(default)]
    existing: Option<String>,
    /// On the operators' path (`warden task create`, the admin API) instead of MCP.
    #[serde(default)]
    own_path: bool,
}

#[derive(Serialize)]
struct Outcome {
    name: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    admitted: Option<Admitted>,
    #[serde(skip_serializing_if = "Option::is_none")]
    refused: Option<Refusal>,
}

fn task(tasks: &BTreeMap<String, TaskFixture>, id: &str) -> TaskView {
    let t = tasks
        .get(id)
        .unwrap_or_else(|| panic!("no task `{id}` in the fixture"));
    TaskView {
        id: id.to_owned(),
        workspace: warden_core::name::Name::new(&t.workspace).unwrap(),
        from_office: t.from_office,
        environment: t.environment.clone(),
    }
}

#[test]
fn admission_fixtures() {
    insta::glob!("fixtures/admission/*.yaml", |path| {
        let text = std::fs::read_to_string(path).unwrap();
        let fixture: Fixture = yaml_serde::from_str(&text).unwrap();
        let outcomes: Vec<Outcome> = fixture
            .cases
            .iter()
            .map(|case| {
                let who = fixture
                    .callers
                    .get(&case.caller)
                    .unwrap_or_else(|| panic!("{}: no caller `{}`", case.name, case.caller));
                let caller = match who.surface.as_str() {
                    "session" => Caller::Session {
                        session: who.session.clone().unwrap(),
                        task: task(&fixture.tasks, who.task.as_deref().unwrap()),
                    },
                    "external" => Caller::External,
                    "unverified" => Caller::Unverified,
                    other => panic!("unknown surface `{other}`"),
                };
                let workspaces: Vec<WorkspaceView> = fixture
                    .workspaces
                    .iter()
                    .map(|w| WorkspaceView {
                        authorised: who.authorised.iter().any(|a| a == w.name.as_str()),
                        ..w.clone()
                    })
                    .collect();
                let parent = case
                    .request
                    .parent_id
                    .as_ref()
                    .filter(|id| fixture.tasks.contains_key(*id))
                    .map(|id| task(&fixture.tasks, id));
                let context = Context {
                    caller: caller.clone(),
                    workspaces: workspaces.clone(),
                    parent,
                };
                let mut result = if case.own_path {
                    admit_on_own_path(&case.request, &context)
                } else {
                    admit(&case.request, &context)
                };
                if let (Ok(admitted), Some(existing)) = (&result, &case.existing) {
                    let existing = task(&fixture.tasks, existing);
                    if let Err(refusal) =
                        recheck_existing(admitted, &existing, &workspaces, "ext-1")
                    {
                        result = Err(refusal);
                    }
                }
                let (admitted, refused) = match result {
                    Ok(a) => (Some(a), None),
                    Err(r) => (None, Some(r)),
                };
                Outcome {
                    name: case.name.clone(),
                    admitted,
                    refused,
                }
            })
            .collect();
        insta::assert_yaml_snapshot!(outcomes);
    });
}
