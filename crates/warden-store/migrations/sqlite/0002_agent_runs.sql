-- Unattended agent runs (RUN-2 `agent` mode): their lifecycle.
CREATE TABLE agent_runs (
    id            TEXT PRIMARY KEY NOT NULL,
    agent         TEXT NOT NULL,
    trigger       TEXT NOT NULL,          -- `manual` or `schedule`
    schedule_key  TEXT,                   -- the schedule's cron and index, for scheduled runs
    fire_at       INTEGER,                -- the scheduled time a run was fired for
    status        TEXT NOT NULL,          -- queued, running, succeeded, failed, timed_out
    requested_by  TEXT NOT NULL,          -- provenance reference (APR-3), JSON
    credential_id TEXT,
    queued_at     INTEGER NOT NULL,
    started_at    INTEGER,
    finished_at   INTEGER,
    exit_code     INTEGER,
    error         TEXT
);
CREATE INDEX agent_runs_by_agent ON agent_runs (agent, queued_at);
-- One run per scheduled time, whichever replica fires it.
CREATE UNIQUE INDEX agent_runs_one_per_fire ON agent_runs (agent, schedule_key, fire_at)
    WHERE fire_at IS NOT NULL;
-- One schedule never runs twice at once.
CREATE UNIQUE INDEX agent_runs_one_active_per_schedule ON agent_runs (agent, schedule_key)
    WHERE schedule_key IS NOT NULL AND status IN ('queued', 'running');
