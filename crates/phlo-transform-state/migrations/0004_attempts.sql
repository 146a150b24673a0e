-- Every attempt of every node (SPEC §65): a failed attempt is written before its retry backoff
-- begins, so a killed run leaves each attempt it made on record. `continued_from` links a
-- `run --retry-failed` run to the run it continues (SPEC §65a).
CREATE TABLE node_attempts (
    run_id         TEXT NOT NULL REFERENCES runs (run_id),
    node           TEXT NOT NULL,
    kind           TEXT NOT NULL,
    attempt        INTEGER NOT NULL,
    status         TEXT NOT NULL,
    started_at     TEXT,
    finished_at    TEXT,
    duration_ms    INTEGER,
    error_category TEXT,
    error_code     TEXT,
    error_message  TEXT,
    retryable      INTEGER NOT NULL DEFAULT 0,
    PRIMARY KEY (run_id, kind, node, attempt)
);

ALTER TABLE runs ADD COLUMN continued_from TEXT;
