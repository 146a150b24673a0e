-- Runs, their per-node results, stored plans and the materialised version of every model.
CREATE TABLE runs (
    run_id      TEXT PRIMARY KEY,
    plan_id     TEXT NOT NULL,
    environment TEXT NOT NULL,
    command     TEXT NOT NULL,
    status      TEXT NOT NULL,
    generation  INTEGER NOT NULL,
    started_at  TEXT NOT NULL,
    finished_at TEXT
);

CREATE TABLE plans (
    plan_id    TEXT PRIMARY KEY,
    created_at TEXT NOT NULL,
    body       TEXT NOT NULL
);

CREATE TABLE node_results (
    run_id        TEXT NOT NULL REFERENCES runs (run_id),
    node          TEXT NOT NULL,
    kind          TEXT NOT NULL,
    status        TEXT NOT NULL,
    attempt       INTEGER NOT NULL,
    version       TEXT,
    started_at    TEXT,
    finished_at   TEXT,
    duration_ms   INTEGER,
    rows          INTEGER,
    error_code    TEXT,
    error_message TEXT,
    PRIMARY KEY (run_id, kind, node)
);

CREATE TABLE model_versions (
    environment     TEXT NOT NULL,
    model_id        TEXT NOT NULL,
    model_name      TEXT NOT NULL,
    version         TEXT NOT NULL,
    sql_hash        TEXT NOT NULL,
    config_hash     TEXT NOT NULL,
    upstream        TEXT NOT NULL,
    sources         TEXT NOT NULL,
    materialization TEXT NOT NULL,
    relation        TEXT NOT NULL,
    run_id          TEXT NOT NULL,
    generation      INTEGER NOT NULL,
    materialized_at TEXT NOT NULL,
    PRIMARY KEY (environment, model_id)
);
