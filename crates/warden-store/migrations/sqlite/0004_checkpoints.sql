-- Signed checkpoints of the audit chain's head (AUD-2): the anchor that shows a truncated
-- chain. They are also appended to a file outside the database; this copy lets any process on
-- the store, and `warden audit verify`, find the latest one.
CREATE TABLE audit_checkpoints (
    seq       BIGINT PRIMARY KEY NOT NULL,
    hash      TEXT NOT NULL,
    at        BIGINT NOT NULL,
    key       TEXT NOT NULL,
    signature TEXT NOT NULL
);
