-- The audit trail's archive cut (AUD-6, src/archive.rs): the records up to `seq` were
-- archived and removed; the next record follows `hash`. Signed with the audit key, as a
-- checkpoint is; the admin record `audit.archive` in the chain names it too.
CREATE TABLE audit_cut (
    id INTEGER PRIMARY KEY NOT NULL CHECK (id = 1),
    store TEXT,
    seq BIGINT NOT NULL,
    hash TEXT NOT NULL,
    at BIGINT NOT NULL,
    key TEXT NOT NULL,
    signature TEXT NOT NULL
);
