-- 2025-11-25 MCP sessions, for every replica to serve (STORE-3; src/sessions.rs). A row is
-- complete once it has both its owner and the transport's state.
CREATE TABLE mcp_sessions (
    id         TEXT PRIMARY KEY NOT NULL,   -- the Mcp-Session-Id
    credential TEXT,                        -- the credential that opened it; set once
    agent      TEXT,                        -- the agent route it was opened on
    state      TEXT,                        -- the transport's state (the client's initialize), JSON
    created_at BIGINT NOT NULL,
    seen_at    BIGINT NOT NULL             -- last use, at most a minute old per replica
);
CREATE INDEX mcp_sessions_by_seen ON mcp_sessions (seen_at);
