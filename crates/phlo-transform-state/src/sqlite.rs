//! SQLite backend (sqlx, embedded migrations, WAL journal).

use async_trait::async_trait;
use sqlx::sqlite::{SqliteConnectOptions, SqliteJournalMode, SqlitePool, SqlitePoolOptions};
use sqlx::Row;
use std::collections::HashMap;
use std::path::Path;
use std::str::FromStr;
use std::time::Duration;

use crate::{MaterializedVersion, NodeRecord, Result, RunRecord, StateError, StateStore};

pub struct SqliteStateStore {
    pool: SqlitePool,
}

impl SqliteStateStore {
    /// Opens (creating if needed) the database file and applies pending migrations.
    pub async fn open(path: &Path) -> Result<Self> {
        if let Some(parent) = path.parent() {
            std::fs::create_dir_all(parent).map_err(|e| StateError {
                message: format!("cannot create {}: {e}", parent.display()),
            })?;
        }
        let options = SqliteConnectOptions::from_str(&format!("sqlite://{}", path.display()))
            .map_err(|e| StateError::from_sqlx("invalid state path", e))?
            .create_if_missing(true)
            .journal_mode(SqliteJournalMode::Wal)
            .busy_timeout(Duration::from_secs(10));
        let pool = SqlitePoolOptions::new()
            .max_connections(4)
            .connect_with(options)
            .await
            .map_err(|e| {
                StateError::from_sqlx(&format!("cannot open state database {}", path.display()), e)
            })?;
        sqlx::migrate!("./migrations")
            .run(&pool)
            .await
            .map_err(|e| StateError {
                message: format!("state database migration failed: {e}"),
            })?;
        Ok(SqliteStateStore { pool })
    }
}

fn run_from_row(r: &sqlx::sqlite::SqliteRow) -> RunRecord {
    RunRecord {
        run_id: r.get("run_id"),
        plan_id: r.get("plan_id"),
        environment: r.get("environment"),
        command: r.get("command"),
        status: r.get("status"),
        generation: r.get("generation"),
        started_at: r.get("started_at"),
        finished_at: r.get("finished_at"),
    }
}

#[async_trait]
impl StateStore for SqliteStateStore {
    async fn store_plan(&self, plan_id: &str, body: &serde_json::Value) -> Result<()> {
        sqlx::query("INSERT INTO plans (plan_id, created_at, body) VALUES (?, ?, ?) ON CONFLICT (plan_id) DO NOTHING")
            .bind(plan_id)
            .bind(body.get("created_at").and_then(|v| v.as_str()).unwrap_or_default())
            .bind(body.to_string())
            .execute(&self.pool)
            .await
            .map_err(|e| StateError::from_sqlx("storing plan", e))?;
        Ok(())
    }

    async fn load_plan(&self, plan_id: &str) -> Result<Option<serde_json::Value>> {
        let row = sqlx::query("SELECT body FROM plans WHERE plan_id = ?")
            .bind(plan_id)
            .fetch_optional(&self.pool)
            .await
            .map_err(|e| StateError::from_sqlx("loading plan", e))?;
        Ok(row.and_then(|r| serde_json::from_str(&r.get::<String, _>("body")).ok()))
    }

    async fn begin_run(&self, run: &RunRecord) -> Result<()> {
        sqlx::query(
            "INSERT INTO runs (run_id, plan_id, environment, command, status, generation, started_at, finished_at)
             VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
        )
        .bind(&run.run_id)
        .bind(&run.plan_id)
        .bind(&run.environment)
        .bind(&run.command)
        .bind(&run.status)
        .bind(run.generation)
        .bind(&run.started_at)
        .bind(&run.finished_at)
        .execute(&self.pool)
        .await
        .map_err(|e| StateError::from_sqlx("recording run start", e))?;
        Ok(())
    }

    async fn record_node(&self, run_id: &str, n: &NodeRecord) -> Result<()> {
        sqlx::query(
            "INSERT INTO node_results (run_id, node, kind, status, attempt, version, started_at, finished_at,
                                       duration_ms, rows, error_code, error_message)
             VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
             ON CONFLICT (run_id, kind, node) DO UPDATE SET
                status = excluded.status, attempt = excluded.attempt, version = excluded.version,
                started_at = excluded.started_at, finished_at = excluded.finished_at,
                duration_ms = excluded.duration_ms, rows = excluded.rows,
                error_code = excluded.error_code, error_message = excluded.error_message",
        )
        .bind(run_id)
        .bind(&n.node)
        .bind(&n.kind)
        .bind(&n.status)
        .bind(n.attempt)
        .bind(&n.version)
        .bind(&n.started_at)
        .bind(&n.finished_at)
        .bind(n.duration_ms)
        .bind(n.rows)
        .bind(&n.error_code)
        .bind(&n.error_message)
        .execute(&self.pool)
        .await
        .map_err(|e| StateError::from_sqlx("recording node result", e))?;
        Ok(())
    }

    async fn finish_run(&self, run_id: &str, status: &str, finished_at: &str) -> Result<()> {
        sqlx::query("UPDATE runs SET status = ?, finished_at = ? WHERE run_id = ?")
            .bind(status)
            .bind(finished_at)
            .bind(run_id)
            .execute(&self.pool)
            .await
            .map_err(|e| StateError::from_sqlx("recording run end", e))?;
        Ok(())
    }

    async fn record_materialization(&self, m: &MaterializedVersion) -> Result<()> {
        let json = |v: &std::collections::BTreeMap<String, String>| {
            serde_json::to_string(v).expect("string map")
        };
        sqlx::query(
            "INSERT INTO model_versions (environment, model_id, model_name, version, sql_hash, config_hash, upstream,
                                         sources, materialization, relation, run_id, generation, materialized_at,
                                         text_hash, plan_hash)
             VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
             ON CONFLICT (environment, model_id) DO UPDATE SET
                model_name = excluded.model_name, version = excluded.version, sql_hash = excluded.sql_hash,
                config_hash = excluded.config_hash, upstream = excluded.upstream, sources = excluded.sources,
                materialization = excluded.materialization, relation = excluded.relation,
                run_id = excluded.run_id, generation = excluded.generation,
                materialized_at = excluded.materialized_at,
                text_hash = excluded.text_hash, plan_hash = excluded.plan_hash
             WHERE excluded.generation >= model_versions.generation",
        )
        .bind(&m.environment)
        .bind(&m.model_id)
        .bind(&m.model_name)
        .bind(&m.version)
        .bind(&m.sql_hash)
        .bind(&m.config_hash)
        .bind(json(&m.upstream))
        .bind(json(&m.sources))
        .bind(&m.materialization)
        .bind(&m.relation)
        .bind(&m.run_id)
        .bind(m.generation)
        .bind(&m.materialized_at)
        .bind(&m.text_hash)
        .bind(&m.plan_hash)
        .execute(&self.pool)
        .await
        .map_err(|e| StateError::from_sqlx("recording materialised version", e))?;
        Ok(())
    }

    async fn materializations(
        &self,
        environment: &str,
    ) -> Result<HashMap<String, MaterializedVersion>> {
        let rows = sqlx::query("SELECT * FROM model_versions WHERE environment = ?")
            .bind(environment)
            .fetch_all(&self.pool)
            .await
            .map_err(|e| StateError::from_sqlx("reading materialised versions", e))?;
        let parse = |s: String| serde_json::from_str(&s).unwrap_or_default();
        Ok(rows
            .into_iter()
            .map(|r| {
                let m = MaterializedVersion {
                    environment: r.get("environment"),
                    model_id: r.get("model_id"),
                    model_name: r.get("model_name"),
                    version: r.get("version"),
                    sql_hash: r.get("sql_hash"),
                    config_hash: r.get("config_hash"),
                    upstream: parse(r.get("upstream")),
                    sources: parse(r.get("sources")),
                    materialization: r.get("materialization"),
                    relation: r.get("relation"),
                    run_id: r.get("run_id"),
                    generation: r.get("generation"),
                    materialized_at: r.get("materialized_at"),
                    text_hash: r.get("text_hash"),
                    plan_hash: r.get("plan_hash"),
                };
                (m.model_id.clone(), m)
            })
            .collect())
    }

    async fn runs(&self, limit: i64) -> Result<Vec<RunRecord>> {
        let rows = sqlx::query("SELECT * FROM runs ORDER BY started_at DESC, run_id DESC LIMIT ?")
            .bind(limit)
            .fetch_all(&self.pool)
            .await
            .map_err(|e| StateError::from_sqlx("reading runs", e))?;
        Ok(rows.iter().map(run_from_row).collect())
    }

    async fn run_nodes(&self, run_id: &str) -> Result<Vec<NodeRecord>> {
        let rows = sqlx::query("SELECT * FROM node_results WHERE run_id = ? ORDER BY kind, node")
            .bind(run_id)
            .fetch_all(&self.pool)
            .await
            .map_err(|e| StateError::from_sqlx("reading node results", e))?;
        Ok(rows
            .into_iter()
            .map(|r| NodeRecord {
                node: r.get("node"),
                kind: r.get("kind"),
                status: r.get("status"),
                attempt: r.get("attempt"),
                version: r.get("version"),
                started_at: r.get("started_at"),
                finished_at: r.get("finished_at"),
                duration_ms: r.get("duration_ms"),
                rows: r.get("rows"),
                error_code: r.get("error_code"),
                error_message: r.get("error_message"),
            })
            .collect())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::BTreeMap;

    fn mv(version: &str, generation: i64) -> MaterializedVersion {
        MaterializedVersion {
            environment: "local".into(),
            model_id: "assay.raw".into(),
            model_name: "assay.raw".into(),
            version: version.into(),
            sql_hash: "s".into(),
            config_hash: "c".into(),
            upstream: BTreeMap::new(),
            sources: BTreeMap::new(),
            materialization: "table".into(),
            relation: "assay.raw".into(),
            run_id: format!("run-{generation}"),
            generation,
            materialized_at: "2026-01-01T00:00:00Z".into(),
            text_hash: None,
            plan_hash: None,
        }
    }

    #[tokio::test]
    async fn older_generations_never_overwrite_newer_records() {
        let dir = tempfile::tempdir().unwrap();
        let store = SqliteStateStore::open(&dir.path().join("state.db"))
            .await
            .unwrap();
        store.record_materialization(&mv("v2", 20)).await.unwrap();
        store.record_materialization(&mv("v1", 10)).await.unwrap();
        let got = store.materializations("local").await.unwrap();
        assert_eq!(got["assay.raw"].version, "v2");
        store.record_materialization(&mv("v3", 30)).await.unwrap();
        assert_eq!(
            store.materializations("local").await.unwrap()["assay.raw"].version,
            "v3"
        );
    }

    #[tokio::test]
    async fn runs_and_nodes_round_trip_and_reopen() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("state.db");
        {
            let store = SqliteStateStore::open(&path).await.unwrap();
            let run = RunRecord {
                run_id: "r1".into(),
                plan_id: "p1".into(),
                environment: "local".into(),
                command: "run".into(),
                status: "running".into(),
                generation: 1,
                started_at: "2026-01-01T00:00:00Z".into(),
                finished_at: None,
            };
            store.begin_run(&run).await.unwrap();
            let mut node = NodeRecord {
                node: "assay.raw".into(),
                kind: "model".into(),
                status: "running".into(),
                attempt: 1,
                version: Some("v".into()),
                started_at: None,
                finished_at: None,
                duration_ms: None,
                rows: None,
                error_code: None,
                error_message: None,
            };
            store.record_node("r1", &node).await.unwrap();
            node.status = "passed".into();
            node.rows = Some(4);
            store.record_node("r1", &node).await.unwrap();
            store
                .finish_run("r1", "passed", "2026-01-01T00:00:01Z")
                .await
                .unwrap();
        }
        let store = SqliteStateStore::open(&path).await.unwrap();
        let runs = store.runs(10).await.unwrap();
        assert_eq!(runs[0].status, "passed");
        let nodes = store.run_nodes("r1").await.unwrap();
        assert_eq!(nodes.len(), 1);
        assert_eq!(
            (nodes[0].status.as_str(), nodes[0].rows),
            ("passed", Some(4))
        );
    }
}
