-- Parked calls (APR-2): approvals waiting for a decision and staged actions waiting out a veto
-- window. Status moves forward only, each step a conditional update that exactly one writer
-- wins (APR-6):
--   approval: pending -> approved -> executing -> executed | failed
--             pending -> rejected | expired;   approved -> failed (requester unresolvable)
--   staged:   staged -> executing -> executed | failed;   staged -> vetoed
CREATE TABLE approvals (
    id              TEXT PRIMARY KEY NOT NULL,
    kind            TEXT NOT NULL,
    status          TEXT NOT NULL,
    run_id          TEXT NOT NULL,
    call_id         TEXT NOT NULL,
    tool            TEXT NOT NULL,
    project         TEXT,
    args            TEXT,               -- the exact arguments, cleared once the action is done
    args_hash       TEXT NOT NULL,
    requested_by    TEXT,               -- provenance reference (APR-3), JSON
    principal       TEXT NOT NULL,
    agent           TEXT,
    policy_revision BIGINT NOT NULL,
    rule            TEXT NOT NULL,
    created_at      BIGINT NOT NULL,
    due_at          BIGINT NOT NULL,   -- approval: expiry; staged: execution time
    decided_by      TEXT,               -- the decider's reference, JSON
    decided_at      BIGINT,
    reason          TEXT,
    claimed_at      BIGINT,
    finished_at     BIGINT,
    outcome_code    TEXT,
    outcome_message TEXT,
    result          TEXT
);
CREATE INDEX approvals_by_status ON approvals (status, due_at);
