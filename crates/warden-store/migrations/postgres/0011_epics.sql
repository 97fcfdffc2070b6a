-- The work domain's epics and epic tasks (WORK-1, src/epics/), and every move of either: who
-- moved what, when, from where to where. An epic task is linked to a task (task_…) of the
-- tasks tables, which keeps its sessions and environment.
CREATE TABLE epics (
    id          TEXT PRIMARY KEY NOT NULL,  -- epc_…
    project     TEXT NOT NULL,
    title       TEXT NOT NULL,
    description TEXT NOT NULL,
    criteria    TEXT NOT NULL,              -- acceptance criteria: a JSON list of strings
    tradeoffs   TEXT NOT NULL,
    risk        TEXT NOT NULL,              -- low, medium, high or critical
    state       TEXT NOT NULL,              -- draft, open, done or archived
    created_by  TEXT NOT NULL,              -- the principal (user:alice)
    created_at  BIGINT NOT NULL,
    updated_at  BIGINT NOT NULL
);
CREATE INDEX epics_by_project ON epics (project, updated_at);
CREATE TABLE epic_tasks (
    id           TEXT PRIMARY KEY NOT NULL, -- ept_…
    epic_id      TEXT NOT NULL,
    task_id      TEXT NOT NULL,             -- its task (task_…)
    title        TEXT NOT NULL,
    repository   TEXT NOT NULL,
    base_branch  TEXT NOT NULL,
    branch       TEXT NOT NULL,             -- the work branch
    state        TEXT NOT NULL,             -- proposed … merged, reopened
    created_by   TEXT NOT NULL,
    merge_commit TEXT,                      -- set by the merge that moved it to merged
    created_at   BIGINT NOT NULL,
    updated_at   BIGINT NOT NULL
);
CREATE INDEX epic_tasks_by_epic ON epic_tasks (epic_id, created_at);
CREATE TABLE work_moves (
    subject    TEXT NOT NULL,               -- the epic (epc_…) or epic task (ept_…) moved
    seq        BIGINT NOT NULL,               -- 1, 2, … per subject
    moved_by   TEXT NOT NULL,               -- the principal
    from_state TEXT,                        -- NULL: its creation
    to_state   TEXT NOT NULL,
    at         BIGINT NOT NULL,
    PRIMARY KEY (subject, seq)
);
