-- Each signed checkpoint names the store it was taken of (AUD-2): the store's id, kept in
-- `meta` as `store_id`. Checkpoints taken before have none.
ALTER TABLE audit_checkpoints ADD COLUMN store TEXT;
