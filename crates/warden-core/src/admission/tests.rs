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

fn admitted(surface: Surface, workspace: &str) -> Admitted {
    Admitted {
        surface,
        workspace: Name::new(workspace).unwrap(),
        project: Name::new("p").unwrap(),
        parent: None,
        workspace_mode: None,
        repositories: Vec::new(),
        from_office: workspace == "org",
        created_in_session: None,
    }
}

#[test]
fn a_retry_returns_the_original_only_to_a_caller_that_could_have_created_it() {
    let workspaces = [
        workspace("board", WorkspaceMode::Kanban, true),
        workspace("org", WorkspaceMode::Office, true),
        workspace("secret", WorkspaceMode::Kanban, false),
    ];
    let kanban = task("task_k", "board", false);
    let office = task("task_o", "org", true);
    let hidden = task("task_h", "secret", false);
    let legacy = task("task_l", "board", true);
    let unmarked = task("task_u", "org", false);
    for (surface, destination, existing) in [
        (Surface::KanbanSession, "board", &kanban),
        (Surface::External, "board", &kanban),
        (Surface::External, "org", &office),
        (Surface::OfficeSession, "org", &office),
    ] {
        assert_eq!(
            recheck_existing(&admitted(surface, destination), existing, &workspaces, "x"),
            Ok(()),
            "{surface:?} finding {}",
            existing.id
        );
    }
    for (surface, destination, existing) in [
        (Surface::KanbanSession, "org", &office),
        (Surface::External, "secret", &hidden),
        (Surface::KanbanSession, "board", &legacy),
        (Surface::External, "board", &legacy),
        (Surface::OfficeSession, "org", &unmarked),
        (Surface::OfficeSession, "board", &kanban),
        (Surface::External, "org", &kanban),
    ] {
        let refused = recheck_existing(&admitted(surface, destination), existing, &workspaces, "x")
            .unwrap_err();
        assert_eq!(refused.code, RefusalCode::NotFound);
        assert_eq!(refused.message, "external id `x` cannot be used here");
        assert_eq!(
            refused.reason,
            format!(
                "retry with external id `x` found task `{}`, not returned to this caller",
                existing.id
            )
        );
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
