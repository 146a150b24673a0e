-- Environments of the embedded engine (SPEC §44–48): a reference is a set of pointers
-- model → physical Delta table at a version, stored as one JSON body so that publishing
-- (a pointer swap) is one row update under a compare-and-swap on `hash`. Events are the
-- PromotionRecords and rollback records, immutable once written.
CREATE TABLE refs (
    name       TEXT PRIMARY KEY,
    hash       TEXT NOT NULL,
    updated_at TEXT NOT NULL,
    body       TEXT NOT NULL
);

CREATE TABLE ref_events (
    event_id TEXT PRIMARY KEY,
    kind     TEXT NOT NULL,
    ref      TEXT NOT NULL,
    at       TEXT NOT NULL,
    body     TEXT NOT NULL
);
