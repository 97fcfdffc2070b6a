-- The work domain: tasks, the environments materialised for them, and the agent runs
-- (sessions) bound to them. States and modes are validated by the binary, not by CHECKs: a
-- row it cannot read is reported as unreadable, never taken for some default.
CREATE TABLE tasks (
    id                 TEXT PRIMARY KEY NOT NULL,   -- `task_…`, made by the creator
    workspace          TEXT NOT NULL,               -- a Workspace resource's name
    parent_id          TEXT REFERENCES tasks (id),  -- a task with children cannot be deleted
    title              TEXT NOT NULL,
    description        TEXT,
    workflow_step      TEXT,
    state              TEXT NOT NULL,               -- todo, in_progress, review, done, archived
    workspace_mode     TEXT,                        -- inherit_parent, new_workspace
    repositories       TEXT NOT NULL,               -- as requested, JSON: [{"repository", "branch"}]
    external_id        TEXT,                        -- the creator's idempotency key
    created_by         TEXT NOT NULL,               -- provenance reference (APR-3), JSON
    created_in_session TEXT,                        -- the agent run it was created from
    from_office        BOOLEAN NOT NULL,            -- created from an office context
    agent_profile      TEXT,
    created_at         BIGINT NOT NULL,
    updated_at         BIGINT NOT NULL
);
-- One task per idempotency key in a workspace, whichever replica creates it.
CREATE UNIQUE INDEX tasks_one_per_external_id ON tasks (workspace, external_id)
    WHERE external_id IS NOT NULL;
CREATE INDEX tasks_by_workspace ON tasks (workspace, created_at);
CREATE INDEX tasks_by_parent ON tasks (parent_id, created_at) WHERE parent_id IS NOT NULL;

-- A task's materialised environment: at most one per task.
CREATE TABLE task_environments (
    id         TEXT PRIMARY KEY NOT NULL,           -- `env_…`
    task_id    TEXT NOT NULL UNIQUE REFERENCES tasks (id),
    path       TEXT NOT NULL,                       -- its directory
    state      TEXT NOT NULL,                       -- active, deleted, failed
    error      TEXT,
    created_at BIGINT NOT NULL,
    updated_at BIGINT NOT NULL
);

-- One row per repository of an environment, in the order they were given. The same
-- (repository, branch) may appear twice: the admission logic refuses an ambiguous match, so
-- the store keeps duplicates rather than hide one.
CREATE TABLE task_environment_repos (
    environment_id TEXT NOT NULL REFERENCES task_environments (id),
    position       BIGINT NOT NULL,
    repository     TEXT NOT NULL,
    branch         TEXT NOT NULL,
    path           TEXT NOT NULL,
    state          TEXT NOT NULL,                   -- active, deleted, failed
    error          TEXT,
    PRIMARY KEY (environment_id, position)
);

-- A session is an agent run bound to a task. A run outlives its task's deletion: its
-- `task_id` then names a task that is gone.
ALTER TABLE agent_runs ADD COLUMN task_id TEXT;
CREATE INDEX agent_runs_by_task ON agent_runs (task_id, queued_at) WHERE task_id IS NOT NULL;
