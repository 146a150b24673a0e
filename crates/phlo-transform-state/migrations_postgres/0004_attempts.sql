-- Every attempt of every node (SPEC §65): a failed attempt is written before its retry backoff
-- begins, so a killed run leaves each attempt it made on record. `continued_from` links a
-- `run --retry-failed` run to the run it continues (SPEC §65a).
CREATE TABLE node_attempts (
    run_id         TEXT COLLATE "C" NOT NULL REFERENCES runs (run_id),
    node           TEXT COLLATE "C" NOT NULL,
    kind           TEXT COLLATE "C" NOT NULL,
    attempt        BIGINT NOT NULL,
    status         TEXT NOT NULL,
    started_at     TEXT,
    finished_at    TEXT,
    duration_ms    BIGINT,
    error_category TEXT,
    error_code     TEXT,
    error_message  TEXT,
    retryable      BIGINT NOT NULL DEFAULT 0,
    PRIMARY KEY (run_id, kind, node, attempt)
);

ALTER TABLE runs ADD COLUMN continued_from TEXT;
