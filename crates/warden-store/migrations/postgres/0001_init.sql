-- Warden store, version 1 (PostgreSQL).
CREATE TABLE meta (
    key   TEXT PRIMARY KEY NOT NULL,
    value TEXT NOT NULL
);

-- One row: the revision of configuration and credentials. Every change bumps it, and running
-- servers poll it to pick changes up (STORE-1b). It is the policy version of decisions.
CREATE TABLE state (
    id       INTEGER PRIMARY KEY NOT NULL CHECK (id = 1),
    revision BIGINT NOT NULL
);
INSERT INTO state (id, revision) VALUES (1, 0);

CREATE TABLE resources (
    kind       TEXT NOT NULL,
    key        TEXT NOT NULL,
    spec       TEXT NOT NULL,
    updated_at BIGINT NOT NULL,
    revision   BIGINT NOT NULL,
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
    created_at  BIGINT NOT NULL,
    expires_at  BIGINT,
    revoked_at  BIGINT,
    description TEXT
);

-- The audit chain (AUD-2): append-only, sequenced, hash-chained.
CREATE TABLE audit (
    seq       BIGINT PRIMARY KEY NOT NULL,
    at        BIGINT NOT NULL,
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
    seq  BIGINT NOT NULL,
    hash TEXT NOT NULL
);
INSERT INTO audit_head (id, seq, hash)
VALUES (1, 0, '0000000000000000000000000000000000000000000000000000000000000000');

CREATE FUNCTION warden_audit_append_only() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    RAISE EXCEPTION 'audit records are append-only';
END;
$$;
CREATE TRIGGER audit_no_change BEFORE UPDATE OR DELETE ON audit
    FOR EACH ROW EXECUTE FUNCTION warden_audit_append_only();
CREATE TRIGGER audit_no_truncate BEFORE TRUNCATE ON audit
    FOR EACH STATEMENT EXECUTE FUNCTION warden_audit_append_only();

-- Fixed-window counters for rate limits and write budgets.
CREATE TABLE counters (
    key          TEXT NOT NULL,
    window_start BIGINT NOT NULL,
    count        BIGINT NOT NULL,
    PRIMARY KEY (key, window_start)
);
