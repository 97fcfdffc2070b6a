-- Notifications (NOTIFY-1, src/notifications): one row per delivery to a Notifier, from the
-- event to its last attempt; and how far the audit trail has been read for events.
CREATE TABLE notifications (
    id TEXT PRIMARY KEY,           -- dlv_…, the same for every replica that finds the event
    notifier TEXT NOT NULL,
    event TEXT NOT NULL,           -- approval.parked, killswitch.pulled, …
    body TEXT NOT NULL,            -- what is POSTed, as it will be signed
    created_at INTEGER NOT NULL,
    status TEXT NOT NULL,          -- pending | delivered | failed
    attempts INTEGER NOT NULL DEFAULT 0,
    next_at INTEGER NOT NULL,      -- the next attempt (pending only)
    claimed_until INTEGER NOT NULL DEFAULT 0, -- a replica is sending it until then
    last_at INTEGER,               -- the last attempt
    last_error TEXT                -- what went wrong with it
);
CREATE INDEX notifications_due ON notifications (status, next_at);
CREATE INDEX notifications_by_notifier ON notifications (notifier, created_at);

CREATE TABLE notify_cursor (
    id INTEGER PRIMARY KEY NOT NULL CHECK (id = 1),
    seq INTEGER NOT NULL           -- the last audit record read for events
);
-- Events from the migration on are told; an existing store's past is not.
INSERT INTO notify_cursor (id, seq) SELECT 1, seq FROM audit_head;
