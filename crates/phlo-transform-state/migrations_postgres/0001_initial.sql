-- Runs, their per-node results, stored plans and the materialised version of every model.
-- Mirrors migrations/0001_initial.sql (SQLite): the same tables, columns and keys. INTEGER
-- columns are BIGINT (SQLite's INTEGER is 64-bit); text compares bytewise (COLLATE "C", as
-- SQLite's BINARY) so both backends order runs and nodes alike.
CREATE TABLE runs (
    run_id      TEXT COLLATE "C" PRIMARY KEY,
    plan_id     TEXT NOT NULL,
    environment TEXT NOT NULL,
    command     TEXT NOT NULL,
    status      TEXT NOT NULL,
    generation  BIGINT NOT NULL,
    started_at  TEXT COLLATE "C" NOT NULL,
    finished_at TEXT
);

CREATE TABLE plans (
    plan_id    TEXT PRIMARY KEY,
    created_at TEXT NOT NULL,
    body       TEXT NOT NULL
);

CREATE TABLE node_results (
    run_id        TEXT COLLATE "C" NOT NULL REFERENCES runs (run_id),
    node          TEXT COLLATE "C" NOT NULL,
    kind          TEXT COLLATE "C" NOT NULL,
    status        TEXT NOT NULL,
    attempt       BIGINT NOT NULL,
    version       TEXT,
    started_at    TEXT,
    finished_at   TEXT,
    duration_ms   BIGINT,
    rows          BIGINT,
    error_code    TEXT,
    error_message TEXT,
    PRIMARY KEY (run_id, kind, node)
);

CREATE TABLE model_versions (
    environment     TEXT COLLATE "C" NOT NULL,
    model_id        TEXT COLLATE "C" NOT NULL,
    model_name      TEXT COLLATE "C" NOT NULL,
    version         TEXT NOT NULL,
    sql_hash        TEXT NOT NULL,
    config_hash     TEXT NOT NULL,
    upstream        TEXT NOT NULL,
    sources         TEXT NOT NULL,
    materialization TEXT NOT NULL,
    relation        TEXT NOT NULL,
    run_id          TEXT NOT NULL,
    generation      BIGINT NOT NULL,
    materialized_at TEXT NOT NULL,
    PRIMARY KEY (environment, model_id)
);
