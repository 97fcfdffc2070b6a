use super::*;

fn workspace(name: &str, mode: WorkspaceMode, authorised: bool) -> WorkspaceView {
    WorkspaceView {
        name: Name::new(name).unwrap(),
        mode,
        project: Name::new("p").unwrap(),
        authorised,
        repositories: Vec::new(),
    }
}

fn task(id: &str, workspace: &str, from_office: bool) -> TaskView {
    TaskView {
        id: id.into(),
        workspace: Name::new(workspace).unwrap(),
        from_office,
        environment: None,
    }
}

#[test]
fn a_retry_returns_the_original_only_to_a_caller_that_could_have_created_it() {
    let workspaces = [
        workspace("board", WorkspaceMode::Kanban, true),
        workspace("org", WorkspaceMode::Office, true),
        workspace("secret", WorkspaceMode::Kanban, false),
    ];
    let session = Caller::Session {
        session: "run_1".into(),
        task: task("task_s", "board", false),
    };
    let kanban = task("task_k", "board", false);
    let office = task("task_o", "org", true);
    let hidden = task("task_h", "secret", false);
    let legacy = task("task_l", "board", true);
    assert_eq!(
        recheck_existing(&session, &kanban, &workspaces, "x"),
        Ok(())
    );
    assert_eq!(
        recheck_existing(&Caller::External, &office, &workspaces, "x"),
        Ok(())
    );
    for (caller, existing) in [
        (&session, &office),
        (&Caller::External, &hidden),
        (&session, &legacy),
        (&Caller::External, &legacy),
    ] {
        let refused = recheck_existing(caller, existing, &workspaces, "x").unwrap_err();
        assert_eq!(refused.code, RefusalCode::NotFound);
        assert_eq!(refused.message, "external id `x` cannot be used here");
        assert!(!refused.message.contains(&existing.id));
    }
}

#[test]
fn the_mode_is_written_as_the_schema_names_it() {
    for mode in [
        MaterialisationMode::InheritParent,
        MaterialisationMode::NewWorkspace,
    ] {
        assert_eq!(MaterialisationMode::parse(mode.as_str()), Some(mode));
        assert_eq!(
            serde_json::to_value(mode).unwrap(),
            serde_json::json!(mode.as_str())
        );
    }
    assert_eq!(MaterialisationMode::parse(" inherit_parent"), None);
}
