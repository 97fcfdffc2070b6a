-- Agent chat threads (RUN-9) and their messages (src/threads/). Message content lives here
-- only; logs and the audit trail carry ids and hashes (AUD-3). A thread belongs to its owner
-- (RUN-7): every read names the owner.
CREATE TABLE threads (
    id         TEXT PRIMARY KEY NOT NULL,   -- thr_…
    agent      TEXT NOT NULL,
    owner      TEXT NOT NULL,               -- the principal that started it (user:alice)
    run_id     TEXT NOT NULL,               -- the run its tool calls are audited under
    title      TEXT NOT NULL,
    created_at BIGINT NOT NULL,
    updated_at BIGINT NOT NULL,
    turn_until BIGINT                -- a turn runs until then (its lease; NULL: none)
);
CREATE INDEX threads_by_owner ON threads (owner, updated_at);
CREATE TABLE thread_messages (
    thread_id    TEXT NOT NULL,
    seq          BIGINT NOT NULL,             -- 1, 2, … within the thread
    role         TEXT NOT NULL,             -- user, assistant, tool or notice
    content      TEXT NOT NULL,
    tool_calls   TEXT,                      -- an assistant's calls: JSON [{id, name, arguments}]
    tool_call_id TEXT,                      -- a tool message: the call it answers
    call_id      TEXT,                      -- the governed call (call_…) of a tool message
    decision     TEXT,                      -- its decision: executed, denied, pending_approval…
    approval_id  TEXT,                      -- a parked call's approval (apr_…)
    at           BIGINT NOT NULL,
    PRIMARY KEY (thread_id, seq)
);
