-- Reviews of epic tasks (WORK-2, src/epics/): who reviewed, the verdict, and the commit of the
-- work branch that was reviewed, so that a later push leaves the review behind.
CREATE TABLE epic_task_reviews (
    epic_task_id TEXT NOT NULL,
    seq          BIGINT NOT NULL,        -- 1, 2, … per epic task
    reviewer     TEXT NOT NULL,          -- the principal (user:bob)
    verdict      TEXT NOT NULL,          -- approve or changes
    comment      TEXT NOT NULL,
    head         TEXT,                   -- the work branch's commit reviewed; NULL: no such branch
    critical     BIGINT NOT NULL,        -- 1: the reviewer held work:accept-critical
    at           BIGINT NOT NULL,
    PRIMARY KEY (epic_task_id, seq)
);
