-- Warden store, version 1 (SQLite).
CREATE TABLE meta (
    key   TEXT PRIMARY KEY NOT NULL,
    value TEXT NOT NULL
);

-- One row: the revision of configuration and credentials. Every change bumps it, and running
-- servers poll it to pick changes up (STORE-1b). It is the policy version of decisions.
CREATE TABLE state (
    id       INTEGER PRIMARY KEY NOT NULL CHECK (id = 1),
    revision INTEGER NOT NULL
);
INSERT INTO state (id, revision) VALUES (1, 0);

CREATE TABLE resources (
    kind       TEXT NOT NULL,
    key        TEXT NOT NULL,
    spec       TEXT NOT NULL,
    updated_at INTEGER NOT NULL,
    revision   INTEGER NOT NULL,
    PRIMARY KEY (kind, key)
);

-- Credentials: only the SHA-256 of the secret is stored (AUTH-1).
CREATE TABLE credentials (
    id          TEXT PRIMARY KEY NOT NULL,
    hash        TEXT NOT NULL UNIQUE,
    kind        TEXT NOT NULL,
    principal   TEXT NOT NULL,
    projects    TEXT,
    scopes      TEXT,
    created_at  INTEGER NOT NULL,
    expires_at  INTEGER,
    revoked_at  INTEGER,
    description TEXT
);

-- The audit chain (AUD-2): append-only, sequenced, hash-chained.
CREATE TABLE audit (
    seq       INTEGER PRIMARY KEY NOT NULL,
    at        INTEGER NOT NULL,
    kind      TEXT NOT NULL,
    run_id    TEXT NOT NULL,
    call_id   TEXT,
    principal TEXT,
    agent     TEXT,
    tool      TEXT,
    decision  TEXT,
    code      TEXT,
    payload   TEXT NOT NULL,
    prev_hash TEXT NOT NULL,
    hash      TEXT NOT NULL
);
CREATE INDEX audit_by_run ON audit (run_id, seq);

CREATE TABLE audit_head (
    id   INTEGER PRIMARY KEY NOT NULL CHECK (id = 1),
    seq  INTEGER NOT NULL,
    hash TEXT NOT NULL
);
INSERT INTO audit_head (id, seq, hash)
VALUES (1, 0, '0000000000000000000000000000000000000000000000000000000000000000');

CREATE TRIGGER audit_no_update BEFORE UPDATE ON audit
BEGIN SELECT RAISE(ABORT, 'audit records are append-only'); END;
CREATE TRIGGER audit_no_delete BEFORE DELETE ON audit
BEGIN SELECT RAISE(ABORT, 'audit records are append-only'); END;

-- Fixed-window counters for rate limits and write budgets.
CREATE TABLE counters (
    key          TEXT NOT NULL,
    window_start INTEGER NOT NULL,
    count        INTEGER NOT NULL,
    PRIMARY KEY (key, window_start)
);
