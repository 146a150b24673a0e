//! The one implementation of `StateStore`'s queries, expanded once per backend.
//!
//! Both backends have the same schema (their migrations mirror each other) and the queries are
//! portable SQL; only the parameter syntax differs, so every statement is written once with `?`
//! placeholders and passed through the backend's `$sql` function (identity for SQLite, `$1…`
//! for PostgreSQL). Writing it as a macro keeps each expansion monomorphic: sqlx's generic
//! `Database` bounds would be longer than the queries.

/// `?` placeholders → `$1, $2, …` (none of the statements has a `?` inside a literal).
pub(crate) fn numbered_placeholders(sql: &'static str) -> std::borrow::Cow<'static, str> {
    let mut out = String::with_capacity(sql.len() + 16);
    let mut n = 0;
    for ch in sql.chars() {
        if ch == '?' {
            n += 1;
            out.push('$');
            out.push_str(&n.to_string());
        } else {
            out.push(ch);
        }
    }
    std::borrow::Cow::Owned(out)
}

pub(crate) fn as_is(sql: &'static str) -> std::borrow::Cow<'static, str> {
    std::borrow::Cow::Borrowed(sql)
}

macro_rules! impl_state_store {
    ($store:ty, $row:ty, $sql:path) => {
        /// Binds the 12 columns of a `node_results` row, in the order the INSERT lists them.
        fn bind_node<'q>(
            q: sqlx::query::Query<
                'q,
                <$row as sqlx::Row>::Database,
                <<$row as sqlx::Row>::Database as sqlx::Database>::Arguments<'q>,
            >,
            run_id: &'q str,
            n: &'q $crate::NodeRecord,
        ) -> sqlx::query::Query<
            'q,
            <$row as sqlx::Row>::Database,
            <<$row as sqlx::Row>::Database as sqlx::Database>::Arguments<'q>,
        > {
            q.bind(run_id)
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
        }

        /// Binds the 19 columns of a `model_versions` row, in the order the INSERTs list them,
        /// with the row's environment given apart (a promotion writes a version into another
        /// environment than the one it was recorded in).
        fn bind_model_version<'q>(
            q: sqlx::query::Query<
                'q,
                <$row as sqlx::Row>::Database,
                <<$row as sqlx::Row>::Database as sqlx::Database>::Arguments<'q>,
            >,
            environment: &'q str,
            m: &'q $crate::MaterializedVersion,
        ) -> sqlx::query::Query<
            'q,
            <$row as sqlx::Row>::Database,
            <<$row as sqlx::Row>::Database as sqlx::Database>::Arguments<'q>,
        > {
            let json = |v: &std::collections::BTreeMap<String, String>| {
                serde_json::to_string(v).expect("string map")
            };
            q.bind(environment)
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
                .bind(
                    m.output_columns
                        .as_ref()
                        .map(|c| serde_json::to_string(c).expect("columns serialise")),
                )
                .bind(&m.adapter)
                .bind(&m.output_identity)
                .bind(
                    m.physical_state
                        .as_ref()
                        .map(|v| serde_json::to_string(v).expect("JSON serialises")),
                )
                .bind(m.current_as_of.map($crate::records::as_of_text))
        }

        fn run_from_row(r: &$row) -> $crate::RunRecord {
            use sqlx::Row;
            $crate::RunRecord {
                run_id: r.get("run_id"),
                plan_id: r.get("plan_id"),
                environment: r.get("environment"),
                command: r.get("command"),
                status: r.get("status"),
                generation: r.get("generation"),
                started_at: r.get("started_at"),
                finished_at: r.get("finished_at"),
                continued_from: r.get("continued_from"),
            }
        }

        fn attempt_from_row(r: &$row) -> $crate::AttemptRecord {
            use sqlx::Row;
            $crate::AttemptRecord {
                node: r.get("node"),
                kind: r.get("kind"),
                attempt: r.get("attempt"),
                status: r.get("status"),
                started_at: r.get("started_at"),
                finished_at: r.get("finished_at"),
                duration_ms: r.get("duration_ms"),
                error_category: r.get("error_category"),
                error_code: r.get("error_code"),
                error_message: r.get("error_message"),
                retryable: r.get::<i64, _>("retryable") != 0,
                queries: r
                    .get::<Option<String>, _>("queries")
                    .and_then(|s| serde_json::from_str(&s).ok())
                    .unwrap_or_default(),
            }
        }

        fn node_from_row(r: &$row) -> $crate::NodeRecord {
            use sqlx::Row;
            $crate::NodeRecord {
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
            }
        }

        fn materialization_from_row(r: &$row) -> $crate::MaterializedVersion {
            use sqlx::Row;
            let parse = |s: String| serde_json::from_str(&s).unwrap_or_default();
            $crate::MaterializedVersion {
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
                output_columns: r
                    .get::<Option<String>, _>("output_columns")
                    .and_then(|s| serde_json::from_str(&s).ok()),
                adapter: r.get("adapter"),
                output_identity: r.get("output_identity"),
                physical_state: r
                    .get::<Option<String>, _>("physical_state")
                    .and_then(|s| serde_json::from_str(&s).ok()),
                current_as_of: r
                    .get::<Option<String>, _>("current_as_of")
                    .and_then(|s| $crate::records::parse_as_of(&s)),
            }
        }

        #[async_trait::async_trait]
        impl $crate::StateStore for $store {
            async fn store_plan(
                &self,
                plan_id: &str,
                body: &serde_json::Value,
            ) -> $crate::Result<()> {
                let sql = $sql(
                    "INSERT INTO plans (plan_id, created_at, body) VALUES (?, ?, ?)
                     ON CONFLICT (plan_id) DO NOTHING",
                );
                sqlx::query(&sql)
                    .bind(plan_id)
                    .bind(
                        body.get("created_at")
                            .and_then(|v| v.as_str())
                            .unwrap_or_default(),
                    )
                    .bind(body.to_string())
                    .execute(&self.pool)
                    .await
                    .map_err(|e| $crate::StateError::from_sqlx("storing plan", e))?;
                Ok(())
            }

            async fn load_plan(&self, plan_id: &str) -> $crate::Result<Option<serde_json::Value>> {
                use sqlx::Row;
                let sql = $sql("SELECT body FROM plans WHERE plan_id = ?");
                let row = sqlx::query(&sql)
                    .bind(plan_id)
                    .fetch_optional(&self.pool)
                    .await
                    .map_err(|e| $crate::StateError::from_sqlx("loading plan", e))?;
                Ok(row.and_then(|r| serde_json::from_str(&r.get::<String, _>("body")).ok()))
            }

            async fn begin_run(&self, run: &$crate::RunRecord) -> $crate::Result<()> {
                let sql = $sql(
                    "INSERT INTO runs (run_id, plan_id, environment, command, status, generation,
                                       started_at, finished_at, continued_from)
                     VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
                );
                sqlx::query(&sql)
                    .bind(&run.run_id)
                    .bind(&run.plan_id)
                    .bind(&run.environment)
                    .bind(&run.command)
                    .bind(&run.status)
                    .bind(run.generation)
                    .bind(&run.started_at)
                    .bind(&run.finished_at)
                    .bind(&run.continued_from)
                    .execute(&self.pool)
                    .await
                    .map_err(|e| $crate::StateError::from_sqlx("recording run start", e))?;
                Ok(())
            }

            async fn record_nodes(
                &self,
                run_id: &str,
                nodes: &[$crate::NodeRecord],
            ) -> $crate::Result<()> {
                if nodes.is_empty() {
                    return Ok(());
                }
                let fail = |e| $crate::StateError::from_sqlx("recording node result", e);
                let sql = $sql(
                    "INSERT INTO node_results (run_id, node, kind, status, attempt, version, started_at,
                                               finished_at, duration_ms, rows, error_code, error_message)
                     VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
                     ON CONFLICT (run_id, kind, node) DO UPDATE SET
                        status = excluded.status, attempt = excluded.attempt, version = excluded.version,
                        started_at = excluded.started_at, finished_at = excluded.finished_at,
                        duration_ms = excluded.duration_ms, rows = excluded.rows,
                        error_code = excluded.error_code, error_message = excluded.error_message",
                );
                // One statement is atomic by itself: a run records each model as it becomes
                // ready, starts and ends, and a transaction around one row costs two more
                // round trips to the database (begin, commit) than the row.
                if let [n] = nodes {
                    let q = bind_node(sqlx::query(&sql), run_id, n);
                    return q.execute(&self.pool).await.map(|_| ()).map_err(fail);
                }
                // One transaction for the lot: a no-op run records every skipped model and
                // cached test, and a commit per row was half of its time (issue 17).
                let mut tx = self.pool.begin().await.map_err(fail)?;
                for n in nodes {
                    let q = bind_node(sqlx::query(&sql), run_id, n);
                    q.execute(&mut *tx).await.map_err(fail)?;
                }
                tx.commit().await.map_err(fail)
            }

            async fn finish_run(
                &self,
                run_id: &str,
                status: &str,
                finished_at: &str,
            ) -> $crate::Result<()> {
                let sql = $sql("UPDATE runs SET status = ?, finished_at = ? WHERE run_id = ?");
                sqlx::query(&sql)
                    .bind(status)
                    .bind(finished_at)
                    .bind(run_id)
                    .execute(&self.pool)
                    .await
                    .map_err(|e| $crate::StateError::from_sqlx("recording run end", e))?;
                Ok(())
            }

            async fn reopen_run(&self, run_id: &str, plan_id: &str) -> $crate::Result<()> {
                let sql = $sql(
                    "UPDATE runs SET status = 'running', finished_at = NULL, plan_id = ?
                     WHERE run_id = ?",
                );
                sqlx::query(&sql)
                    .bind(plan_id)
                    .bind(run_id)
                    .execute(&self.pool)
                    .await
                    .map_err(|e| $crate::StateError::from_sqlx("reopening run", e))?;
                Ok(())
            }

            async fn record_attempt(
                &self,
                run_id: &str,
                a: &$crate::AttemptRecord,
            ) -> $crate::Result<()> {
                let sql = $sql(
                    "INSERT INTO node_attempts (run_id, node, kind, attempt, status, started_at,
                                                finished_at, duration_ms, error_category, error_code,
                                                error_message, retryable, queries)
                     VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
                     ON CONFLICT (run_id, kind, node, attempt) DO UPDATE SET
                        status = excluded.status, started_at = excluded.started_at,
                        finished_at = excluded.finished_at, duration_ms = excluded.duration_ms,
                        error_category = excluded.error_category, error_code = excluded.error_code,
                        error_message = excluded.error_message, retryable = excluded.retryable,
                        queries = excluded.queries",
                );
                sqlx::query(&sql)
                    .bind(run_id)
                    .bind(&a.node)
                    .bind(&a.kind)
                    .bind(a.attempt)
                    .bind(&a.status)
                    .bind(&a.started_at)
                    .bind(&a.finished_at)
                    .bind(a.duration_ms)
                    .bind(&a.error_category)
                    .bind(&a.error_code)
                    .bind(&a.error_message)
                    .bind(i64::from(a.retryable))
                    .bind(
                        (!a.queries.is_empty())
                            .then(|| serde_json::to_string(&a.queries).expect("queries serialise")),
                    )
                    .execute(&self.pool)
                    .await
                    .map_err(|e| $crate::StateError::from_sqlx("recording attempt", e))?;
                Ok(())
            }

            async fn run_attempts(
                &self,
                run_id: &str,
            ) -> $crate::Result<Vec<$crate::AttemptRecord>> {
                let sql = $sql(
                    "SELECT * FROM node_attempts WHERE run_id = ? ORDER BY kind, node, attempt",
                );
                let rows = sqlx::query(&sql)
                    .bind(run_id)
                    .fetch_all(&self.pool)
                    .await
                    .map_err(|e| $crate::StateError::from_sqlx("reading attempts", e))?;
                Ok(rows.iter().map(attempt_from_row).collect())
            }

            async fn record_materialization(
                &self,
                m: &$crate::MaterializedVersion,
            ) -> $crate::Result<()> {
                // One statement, so the generation check and the write are atomic: under
                // concurrent writers the row is locked by the conflict and the WHERE sees the
                // newest committed generation (SPEC §39, ordered writes).
                let sql = $sql(
                    "INSERT INTO model_versions (environment, model_id, model_name, version, sql_hash,
                                                 config_hash, upstream, sources, materialization, relation,
                                                 run_id, generation, materialized_at, text_hash, plan_hash,
                                                 output_columns, adapter, output_identity, physical_state,
                                                 current_as_of)
                     VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
                     ON CONFLICT (environment, model_id) DO UPDATE SET
                        model_name = excluded.model_name, version = excluded.version,
                        sql_hash = excluded.sql_hash, config_hash = excluded.config_hash,
                        upstream = excluded.upstream, sources = excluded.sources,
                        materialization = excluded.materialization, relation = excluded.relation,
                        run_id = excluded.run_id, generation = excluded.generation,
                        materialized_at = excluded.materialized_at,
                        text_hash = excluded.text_hash, plan_hash = excluded.plan_hash,
                        output_columns = excluded.output_columns, adapter = excluded.adapter,
                        output_identity = excluded.output_identity,
                        physical_state = excluded.physical_state,
                        current_as_of = excluded.current_as_of
                     WHERE excluded.generation >= model_versions.generation",
                );
                bind_model_version(sqlx::query(&sql), &m.environment, m)
                    .execute(&self.pool)
                    .await
                    .map_err(|e| {
                        $crate::StateError::from_sqlx("recording materialised version", e)
                    })?;
                Ok(())
            }

            async fn materializations(
                &self,
                environment: &str,
            ) -> $crate::Result<std::collections::HashMap<String, $crate::MaterializedVersion>> {
                let sql = $sql("SELECT * FROM model_versions WHERE environment = ?");
                let rows = sqlx::query(&sql)
                    .bind(environment)
                    .fetch_all(&self.pool)
                    .await
                    .map_err(|e| {
                        $crate::StateError::from_sqlx("reading materialised versions", e)
                    })?;
                Ok(rows
                    .iter()
                    .map(|r| {
                        let m = materialization_from_row(r);
                        (m.model_id.clone(), m)
                    })
                    .collect())
            }

            async fn runs(&self, limit: i64) -> $crate::Result<Vec<$crate::RunRecord>> {
                let sql = $sql("SELECT * FROM runs ORDER BY started_at DESC, run_id DESC LIMIT ?");
                let rows = sqlx::query(&sql)
                    .bind(limit)
                    .fetch_all(&self.pool)
                    .await
                    .map_err(|e| $crate::StateError::from_sqlx("reading runs", e))?;
                Ok(rows.iter().map(run_from_row).collect())
            }

            async fn run_nodes(&self, run_id: &str) -> $crate::Result<Vec<$crate::NodeRecord>> {
                let sql = $sql("SELECT * FROM node_results WHERE run_id = ? ORDER BY kind, node");
                let rows = sqlx::query(&sql)
                    .bind(run_id)
                    .fetch_all(&self.pool)
                    .await
                    .map_err(|e| $crate::StateError::from_sqlx("reading node results", e))?;
                Ok(rows.iter().map(node_from_row).collect())
            }

            async fn run_summaries(&self, limit: i64) -> $crate::Result<Vec<$crate::RunSummary>> {
                use sqlx::Row;
                let runs = self.runs(limit).await?;
                if runs.is_empty() {
                    return Ok(Vec::new());
                }
                let sql = $sql(
                    "SELECT n.run_id, n.kind, n.status, COUNT(*) AS n FROM node_results n
                     WHERE n.run_id IN (SELECT run_id FROM runs ORDER BY started_at DESC, run_id DESC LIMIT ?)
                     GROUP BY n.run_id, n.kind, n.status",
                );
                let rows = sqlx::query(&sql)
                    .bind(limit)
                    .fetch_all(&self.pool)
                    .await
                    .map_err(|e| $crate::StateError::from_sqlx("counting node results", e))?;
                let mut out: Vec<$crate::RunSummary> = runs
                    .into_iter()
                    .map(|run| $crate::RunSummary {
                        run,
                        models: Default::default(),
                        tests: Default::default(),
                    })
                    .collect();
                for r in &rows {
                    let run_id: String = r.get("run_id");
                    let kind: String = r.get("kind");
                    let Some(s) = out.iter_mut().find(|s| s.run.run_id == run_id) else {
                        continue;
                    };
                    let counts = if kind == "test" { &mut s.tests } else { &mut s.models };
                    counts.insert(r.get("status"), r.get("n"));
                }
                Ok(out)
            }

            async fn runs_with_prefix(
                &self,
                prefix: &str,
                limit: i64,
            ) -> $crate::Result<Vec<$crate::RunRecord>> {
                let sql = $sql(
                    "SELECT * FROM runs WHERE substr(run_id, 1, ?) = ?
                     ORDER BY started_at DESC, run_id DESC LIMIT ?",
                );
                let rows = sqlx::query(&sql)
                    .bind(prefix.chars().count() as i32)
                    .bind(prefix)
                    .bind(limit)
                    .fetch_all(&self.pool)
                    .await
                    .map_err(|e| $crate::StateError::from_sqlx("looking up runs", e))?;
                Ok(rows.iter().map(run_from_row).collect())
            }

            async fn model_materializations(
                &self,
                model: &str,
            ) -> $crate::Result<Vec<$crate::MaterializedVersion>> {
                let sql = $sql(
                    "SELECT * FROM model_versions WHERE model_name = ? OR model_id = ?
                     ORDER BY environment",
                );
                let rows = sqlx::query(&sql)
                    .bind(model)
                    .bind(model)
                    .fetch_all(&self.pool)
                    .await
                    .map_err(|e| {
                        $crate::StateError::from_sqlx("reading materialised versions", e)
                    })?;
                Ok(rows.iter().map(materialization_from_row).collect())
            }

            async fn model_history(
                &self,
                model: &str,
                limit: i64,
            ) -> $crate::Result<Vec<$crate::ModelRunRecord>> {
                use sqlx::Row;
                let sql = $sql(
                    "SELECT n.*, r.environment, r.command, r.status AS run_status,
                            r.started_at AS run_started_at, r.generation
                     FROM node_results n JOIN runs r ON r.run_id = n.run_id
                     WHERE n.kind = 'model' AND n.node = ?
                     ORDER BY r.started_at DESC, r.run_id DESC LIMIT ?",
                );
                let rows = sqlx::query(&sql)
                    .bind(model)
                    .bind(limit)
                    .fetch_all(&self.pool)
                    .await
                    .map_err(|e| $crate::StateError::from_sqlx("reading model history", e))?;
                Ok(rows
                    .iter()
                    .map(|r| $crate::ModelRunRecord {
                        run_id: r.get("run_id"),
                        environment: r.get("environment"),
                        command: r.get("command"),
                        run_status: r.get("run_status"),
                        run_started_at: r.get("run_started_at"),
                        generation: r.get("generation"),
                        node: node_from_row(r),
                    })
                    .collect())
            }

            async fn model_names(&self) -> $crate::Result<Vec<String>> {
                use sqlx::Row;
                let sql = $sql(
                    "SELECT model_name AS name FROM model_versions
                     UNION SELECT node AS name FROM node_results WHERE kind = 'model'
                     ORDER BY name",
                );
                let rows = sqlx::query(&sql)
                    .fetch_all(&self.pool)
                    .await
                    .map_err(|e| $crate::StateError::from_sqlx("reading model names", e))?;
                Ok(rows.iter().map(|r| r.get("name")).collect())
            }

            async fn acquire_lease(
                &self,
                request: &$crate::LeaseRequest<'_>,
            ) -> $crate::Result<Option<$crate::LeaseHolder>> {
                use sqlx::Row;
                // Taken when free, expired, already ours, or held by a holder known dead.
                let sql = $sql(
                    "INSERT INTO writer_leases (scope, holder, acquired_at, expires_ms)
                     VALUES (?, ?, ?, ?)
                     ON CONFLICT (scope) DO UPDATE SET
                        holder = excluded.holder, acquired_at = excluded.acquired_at,
                        expires_ms = excluded.expires_ms
                     WHERE writer_leases.expires_ms < ? OR writer_leases.holder = excluded.holder
                        OR writer_leases.holder = ?",
                );
                let taken = sqlx::query(&sql)
                    .bind(request.scope)
                    .bind(request.holder)
                    .bind(request.acquired_at)
                    .bind(request.now_ms + request.ttl_ms)
                    .bind(request.now_ms)
                    .bind(request.take_over_from.unwrap_or(""))
                    .execute(&self.pool)
                    .await
                    .map_err(|e| $crate::StateError::from_sqlx("taking the writer lease", e))?
                    .rows_affected()
                    == 1;
                if taken {
                    return Ok(None);
                }
                let sql = $sql(
                    "SELECT holder, acquired_at, expires_ms FROM writer_leases WHERE scope = ?",
                );
                let row = sqlx::query(&sql)
                    .bind(request.scope)
                    .fetch_optional(&self.pool)
                    .await
                    .map_err(|e| $crate::StateError::from_sqlx("reading the writer lease", e))?;
                Ok(Some(match row {
                    Some(r) => $crate::LeaseHolder {
                        holder: r.get("holder"),
                        acquired_at: r.get("acquired_at"),
                        expires_ms: r.get("expires_ms"),
                    },
                    // Released between the two statements: report it as just expired.
                    None => $crate::LeaseHolder {
                        holder: String::new(),
                        acquired_at: String::new(),
                        expires_ms: request.now_ms,
                    },
                }))
            }

            async fn renew_lease(
                &self,
                scope: &str,
                holder: &str,
                expires_ms: i64,
            ) -> $crate::Result<bool> {
                let sql = $sql(
                    "UPDATE writer_leases SET expires_ms = ? WHERE scope = ? AND holder = ?",
                );
                let n = sqlx::query(&sql)
                    .bind(expires_ms)
                    .bind(scope)
                    .bind(holder)
                    .execute(&self.pool)
                    .await
                    .map_err(|e| $crate::StateError::from_sqlx("renewing the writer lease", e))?
                    .rows_affected();
                Ok(n == 1)
            }

            async fn release_lease(&self, scope: &str, holder: &str) -> $crate::Result<()> {
                let sql = $sql("DELETE FROM writer_leases WHERE scope = ? AND holder = ?");
                sqlx::query(&sql)
                    .bind(scope)
                    .bind(holder)
                    .execute(&self.pool)
                    .await
                    .map_err(|e| $crate::StateError::from_sqlx("releasing the writer lease", e))?;
                Ok(())
            }

            async fn refs(&self) -> $crate::Result<Vec<$crate::RefRecord>> {
                use sqlx::Row;
                let sql = $sql("SELECT body FROM refs ORDER BY name");
                let rows = sqlx::query(&sql)
                    .fetch_all(&self.pool)
                    .await
                    .map_err(|e| $crate::StateError::from_sqlx("reading references", e))?;
                rows.iter()
                    .map(|r| {
                        serde_json::from_str(&r.get::<String, _>("body")).map_err(|e| {
                            $crate::StateError {
                                message: format!("a recorded reference is corrupt: {e}"),
                            }
                        })
                    })
                    .collect()
            }

            async fn ref_events(&self) -> $crate::Result<Vec<$crate::RefEvent>> {
                use sqlx::Row;
                let sql = $sql(
                    "SELECT event_id, kind, ref, at, body FROM ref_events ORDER BY at DESC, event_id DESC",
                );
                let rows = sqlx::query(&sql)
                    .fetch_all(&self.pool)
                    .await
                    .map_err(|e| $crate::StateError::from_sqlx("reading reference events", e))?;
                rows.iter()
                    .map(|r| {
                        Ok($crate::RefEvent {
                            event_id: r.get("event_id"),
                            kind: r.get("kind"),
                            reference: r.get("ref"),
                            at: r.get("at"),
                            body: serde_json::from_str(&r.get::<String, _>("body")).map_err(
                                |e| $crate::StateError {
                                    message: format!("a recorded reference event is corrupt: {e}"),
                                },
                            )?,
                        })
                    })
                    .collect()
            }

            async fn record_evidence(&self, e: &$crate::EvidenceRecord) -> $crate::Result<()> {
                let sql = $sql(
                    "INSERT INTO evidence (evidence_id, kind, ref, hash, at, body) VALUES (?, ?, ?, ?, ?, ?)
                     ON CONFLICT (evidence_id) DO NOTHING",
                );
                sqlx::query(&sql)
                    .bind(&e.evidence_id)
                    .bind(&e.kind)
                    .bind(&e.reference)
                    .bind(&e.hash)
                    .bind(&e.at)
                    .bind(e.body.to_string())
                    .execute(&self.pool)
                    .await
                    .map_err(|e| $crate::StateError::from_sqlx("recording evidence", e))?;
                Ok(())
            }

            async fn evidence(
                &self,
                kind: &str,
                reference: &str,
            ) -> $crate::Result<Vec<$crate::EvidenceRecord>> {
                use sqlx::Row;
                let sql = $sql(
                    "SELECT evidence_id, kind, ref, hash, at, body FROM evidence
                     WHERE kind = ? AND ref = ? ORDER BY at DESC, evidence_id DESC",
                );
                let rows = sqlx::query(&sql)
                    .bind(kind)
                    .bind(reference)
                    .fetch_all(&self.pool)
                    .await
                    .map_err(|e| $crate::StateError::from_sqlx("reading evidence", e))?;
                rows.iter()
                    .map(|r| {
                        Ok($crate::EvidenceRecord {
                            evidence_id: r.get("evidence_id"),
                            kind: r.get("kind"),
                            reference: r.get("ref"),
                            hash: r.get("hash"),
                            at: r.get("at"),
                            body: serde_json::from_str(&r.get::<String, _>("body")).map_err(
                                |e| $crate::StateError {
                                    message: format!("a recorded evidence record is corrupt: {e}"),
                                },
                            )?,
                        })
                    })
                    .collect()
            }

            async fn swap_refs(&self, swap: &$crate::RefSwap) -> $crate::Result<bool> {
                let fail = |e| $crate::StateError::from_sqlx("changing references", e);
                let mut tx = self.pool.begin().await.map_err(fail)?;
                // The compare-and-swaps come first: on SQLite the first write takes the
                // database's write lock, so concurrent swaps queue instead of deadlocking.
                for w in &swap.writes {
                    let affected = match (&w.expected, &w.record) {
                        (Some(expected), Some(r)) => {
                            let sql = $sql(
                                "UPDATE refs SET hash = ?, updated_at = ?, body = ?
                                 WHERE name = ? AND hash = ?",
                            );
                            sqlx::query(&sql)
                                .bind(&r.hash)
                                .bind(&r.updated_at)
                                .bind(serde_json::to_string(r).expect("references serialise"))
                                .bind(&w.name)
                                .bind(expected)
                                .execute(&mut *tx)
                                .await
                        }
                        (Some(expected), None) => {
                            let sql = $sql("DELETE FROM refs WHERE name = ? AND hash = ?");
                            sqlx::query(&sql)
                                .bind(&w.name)
                                .bind(expected)
                                .execute(&mut *tx)
                                .await
                        }
                        (None, Some(r)) => {
                            let sql = $sql(
                                "INSERT INTO refs (name, hash, updated_at, body) VALUES (?, ?, ?, ?)
                                 ON CONFLICT (name) DO NOTHING",
                            );
                            sqlx::query(&sql)
                                .bind(&w.name)
                                .bind(&r.hash)
                                .bind(&r.updated_at)
                                .bind(serde_json::to_string(r).expect("references serialise"))
                                .execute(&mut *tx)
                                .await
                        }
                        (None, None) => continue,
                    }
                    .map_err(fail)?
                    .rows_affected();
                    if affected != 1 {
                        tx.rollback().await.map_err(fail)?;
                        return Ok(false);
                    }
                }
                // A deleted reference's evidence goes with it.
                for w in swap.writes.iter().filter(|w| w.record.is_none()) {
                    let sql = $sql("DELETE FROM evidence WHERE ref = ?");
                    sqlx::query(&sql)
                        .bind(&w.name)
                        .execute(&mut *tx)
                        .await
                        .map_err(fail)?;
                }
                for (name, hash) in &swap.unchanged {
                    let sql = $sql("UPDATE refs SET hash = hash WHERE name = ? AND hash = ?");
                    let affected = sqlx::query(&sql)
                        .bind(name)
                        .bind(hash)
                        .execute(&mut *tx)
                        .await
                        .map_err(fail)?
                        .rows_affected();
                    if affected != 1 {
                        tx.rollback().await.map_err(fail)?;
                        return Ok(false);
                    }
                }
                for v in &swap.versions {
                    let gone = v.remove.iter().chain(v.put.iter().map(|m| &m.model_id));
                    for model_id in gone {
                        let sql =
                            $sql("DELETE FROM model_versions WHERE environment = ? AND model_id = ?");
                        sqlx::query(&sql)
                            .bind(&v.environment)
                            .bind(model_id)
                            .execute(&mut *tx)
                            .await
                            .map_err(fail)?;
                    }
                    for m in &v.put {
                        let sql = $sql(
                            "INSERT INTO model_versions (environment, model_id, model_name, version, sql_hash,
                                                         config_hash, upstream, sources, materialization, relation,
                                                         run_id, generation, materialized_at, text_hash, plan_hash,
                                                         output_columns, adapter, output_identity, physical_state,
                                                 current_as_of)
                             VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                        );
                        bind_model_version(sqlx::query(&sql), &v.environment, m)
                            .execute(&mut *tx)
                            .await
                            .map_err(fail)?;
                    }
                }
                if let Some(e) = &swap.event {
                    let sql = $sql(
                        "INSERT INTO ref_events (event_id, kind, ref, at, body) VALUES (?, ?, ?, ?, ?)",
                    );
                    sqlx::query(&sql)
                        .bind(&e.event_id)
                        .bind(&e.kind)
                        .bind(&e.reference)
                        .bind(&e.at)
                        .bind(e.body.to_string())
                        .execute(&mut *tx)
                        .await
                        .map_err(fail)?;
                }
                tx.commit().await.map_err(fail)?;
                Ok(true)
            }

            async fn interrupt_stale_runs(
                &self,
                environment: &str,
                finished_at: &str,
            ) -> $crate::Result<Vec<String>> {
                use sqlx::Row;
                let sql = $sql(
                    "UPDATE runs SET status = 'interrupted', finished_at = ?
                     WHERE environment = ? AND status = 'running'
                     RETURNING run_id",
                );
                let rows = sqlx::query(&sql)
                    .bind(finished_at)
                    .bind(environment)
                    .fetch_all(&self.pool)
                    .await
                    .map_err(|e| $crate::StateError::from_sqlx("marking stale runs", e))?;
                Ok(rows.iter().map(|r| r.get("run_id")).collect())
            }
        }
    };
}

pub(crate) use impl_state_store;
