-- What a forge reports about epic tasks (WORK-3, src/epics/): the last CI status of a merged
-- task's merge commit, the paths a merge on acceptance conflicted in, and the deliveries of
-- each GitProvider's webhook already taken, so that a repeated one is ignored.
ALTER TABLE epic_tasks ADD COLUMN ci_state TEXT;          -- success, pending, failure, error
ALTER TABLE epic_tasks ADD COLUMN ci_url TEXT;            -- the report's link
ALTER TABLE epic_tasks ADD COLUMN conflicts TEXT NOT NULL DEFAULT '[]';  -- JSON list of paths

CREATE INDEX epic_tasks_by_merge_commit ON epic_tasks (merge_commit);

CREATE TABLE git_deliveries (
    provider TEXT NOT NULL,
    delivery TEXT NOT NULL,               -- X-GitHub-Delivery, or the body's SHA-256
    at       BIGINT NOT NULL,
    PRIMARY KEY (provider, delivery)
);
