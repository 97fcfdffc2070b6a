-- Pinned tool definitions (GOV-9, src/pins.rs): the upstreams pinned at least once, and per
-- upstream tool the accepted definition and a different one awaiting review.
CREATE TABLE pinned_upstreams (
    upstream TEXT PRIMARY KEY,
    pinned_at BIGINT NOT NULL
);

CREATE TABLE tool_pins (
    upstream TEXT NOT NULL,
    tool TEXT NOT NULL,            -- as the upstream names it
    pinned_hash TEXT,              -- NULL: appeared after the first pinning, never accepted
    pinned TEXT,                   -- its canonical JSON
    offered_hash TEXT,             -- a different definition awaiting review
    offered TEXT,
    offered_at BIGINT,
    rejected_hash TEXT,            -- an offered definition someone rejected
    decided_by TEXT,
    decided_at BIGINT,
    PRIMARY KEY (upstream, tool)
);
