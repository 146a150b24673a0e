//! Executes a plan (SPEC §62–64): models in dependency order with bounded concurrency,
//! independent branches continuing after a failure, dependents of a failure `blocked`, then
//! the tests. The run row is written before scheduling and every node record as it changes;
//! a state-store write failure ends the run with an error.

mod report;

pub use report::{ErrorInfo, ModelResult, RunReport, TestResult};

use phlo_transform_adapter::{Adapter, MaterializeJob};
use phlo_transform_compiler::resolve::Target;
use phlo_transform_compiler::Compilation;
use phlo_transform_core::diagnostic::codes;
use phlo_transform_plan::{Decision, Plan};
use phlo_transform_state::{
    MaterializedVersion, NodeRecord, RecordedColumn, RunRecord, StateError, StateStore,
};
use std::collections::{HashMap, HashSet};
use std::sync::Arc;
use std::time::Instant;
use tokio::task::JoinSet;

pub struct RunOptions<'a> {
    /// Models executed at once (at least 1).
    pub jobs: usize,
    pub command: String,
    /// Told of the run's start, of every model transition and of its end (OpenLineage).
    pub observer: Option<&'a dyn RunObserver>,
}

/// Watches a run as it happens. Calls are made from the scheduler, so an observer must return
/// at once: anything slow (network, disk) belongs on its own task.
pub trait RunObserver: Send + Sync {
    fn run_started(&self, run_id: &str, started_at: &str);
    /// A model's record changed (`running`, `passed`, `failed`, `skipped`, `blocked`).
    fn model(&self, run_id: &str, result: &ModelResult);
    fn run_finished(&self, report: &RunReport);
}

fn now() -> String {
    chrono::Utc::now().to_rfc3339_opts(chrono::SecondsFormat::Millis, true)
}

/// Node states of SPEC §63 used here.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum State {
    Pending,
    Running,
    Passed,
    Failed,
    Skipped,
    Blocked,
}

impl State {
    fn satisfies_dependents(self) -> bool {
        matches!(self, State::Passed | State::Skipped)
    }
}

struct Ctx<'a> {
    run_id: String,
    state: &'a dyn StateStore,
    observer: Option<&'a dyn RunObserver>,
}

impl Ctx<'_> {
    async fn record(&self, kind: &str, node: &str, r: &ModelResult) -> Result<(), StateError> {
        if let (Some(observer), "model") = (self.observer, kind) {
            observer.model(&self.run_id, r);
        }
        self.state
            .record_node(
                &self.run_id,
                &NodeRecord {
                    node: node.to_string(),
                    kind: kind.to_string(),
                    status: r.status.clone(),
                    attempt: 1,
                    version: r.version.clone(),
                    started_at: r.started_at.clone(),
                    finished_at: r.finished_at.clone(),
                    duration_ms: r.duration_ms.map(|d| d as i64),
                    rows: r.rows.map(|n| n as i64),
                    error_code: r.error.as_ref().map(|e| e.code.clone()),
                    error_message: r.error.as_ref().map(|e| e.message.clone()),
                },
            )
            .await
    }
}

/// Runs `plan` through `adapter`, recording everything in `state`.
pub async fn execute(
    c: &Compilation,
    plan: &Plan,
    adapter: Arc<dyn Adapter>,
    state: Arc<dyn StateStore>,
    options: &RunOptions<'_>,
) -> Result<RunReport, StateError> {
    let run_id = uuid::Uuid::now_v7().simple().to_string();
    let generation = chrono::Utc::now().timestamp_micros();
    let started_at = now();
    state
        .store_plan(&plan.plan_id, &serde_json_value(plan))
        .await?;
    state
        .begin_run(&RunRecord {
            run_id: run_id.clone(),
            plan_id: plan.plan_id.clone(),
            environment: plan.environment.clone(),
            command: options.command.clone(),
            status: "running".into(),
            generation,
            started_at: started_at.clone(),
            finished_at: None,
        })
        .await?;
    let ctx = Ctx {
        run_id: run_id.clone(),
        state: state.as_ref(),
        observer: options.observer,
    };
    if let Some(observer) = options.observer {
        observer.run_started(&run_id, &started_at);
    }

    let mut states: HashMap<&str, State> = HashMap::new();
    let mut results: HashMap<&str, ModelResult> = HashMap::new();
    for m in &plan.models {
        let initial = match m.decision {
            Decision::Skip | Decision::Cached => State::Skipped,
            Decision::Blocked => State::Blocked,
            Decision::Build => State::Pending,
        };
        states.insert(&m.name, initial);
        let mut r = ModelResult::new(&m.name, m.version.clone());
        if initial != State::Pending {
            r.status = if initial == State::Skipped {
                "skipped"
            } else {
                "blocked"
            }
            .into();
            ctx.record("model", &m.name, &r).await?;
        }
        results.insert(&m.name, r);
    }

    let jobs = options.jobs.max(1);
    let mut running: JoinSet<(usize, ModelResult)> = JoinSet::new();
    let physical = |t: &Target| match t {
        Target::Model(i) => adapter.relation_name(c.models[*i].name.as_str()),
        Target::Source(s) => s.clone(),
    };
    loop {
        // Schedule everything ready, in plan (topological) order.
        let mut progressed = true;
        while progressed {
            progressed = false;
            for (pi, m) in plan.models.iter().enumerate() {
                if states[m.name.as_str()] != State::Pending {
                    continue;
                }
                let deps: Vec<State> = m
                    .depends_on
                    .iter()
                    .filter_map(|d| states.get(d.as_str()).copied())
                    .collect();
                if deps
                    .iter()
                    .any(|s| matches!(s, State::Failed | State::Blocked))
                {
                    states.insert(&m.name, State::Blocked);
                    let r = results.get_mut(m.name.as_str()).expect("result");
                    r.status = "blocked".into();
                    r.error = Some(ErrorInfo {
                        code: codes::UPSTREAM_FAILED.0.into(),
                        category: "dependency".into(),
                        message: "an upstream model did not materialise".into(),
                    });
                    ctx.record("model", &m.name, r).await?;
                    progressed = true;
                    continue;
                }
                if running.len() >= jobs || !deps.iter().all(|s| s.satisfies_dependents()) {
                    continue;
                }
                let index = c.model_index(&m.name).expect("planned models exist");
                let Some(query) = c.executable_query(index, &physical) else {
                    // Only a model without a parsed query gets here, and those never plan to
                    // build; fail it rather than leave it pending forever.
                    states.insert(&m.name, State::Failed);
                    let r = results.get_mut(m.name.as_str()).expect("result");
                    r.status = "failed".into();
                    r.error = Some(ErrorInfo {
                        code: codes::TASK_PANICKED.0.into(),
                        category: "internal".into(),
                        message: "the model's executable SQL could not be built".into(),
                    });
                    ctx.record("model", &m.name, r).await?;
                    progressed = true;
                    continue;
                };
                states.insert(&m.name, State::Running);
                let r = results.get_mut(m.name.as_str()).expect("result");
                r.status = "running".into();
                r.started_at = Some(now());
                ctx.record("model", &m.name, r).await?;
                let job = MaterializeJob {
                    model_id: m.id.clone(),
                    model_name: m.name.clone(),
                    relation: m.relation.clone(),
                    materialization: m.materialization,
                    version: m.version.clone().unwrap_or_default(),
                    run_id: run_id.clone(),
                    generation,
                    query,
                };
                let adapter = adapter.clone();
                let mut result = r.clone();
                running.spawn(async move {
                    let t0 = Instant::now();
                    let outcome = adapter.materialize(&job).await;
                    result.duration_ms = Some(t0.elapsed().as_millis() as u64);
                    result.finished_at = Some(now());
                    match outcome {
                        Ok(o) => {
                            result.status = "passed".into();
                            result.rows = o.rows;
                            result.reused_commit = o.already_committed;
                        }
                        Err(e) => {
                            result.status = "failed".into();
                            result.error = Some(ErrorInfo {
                                code: e.code.0.into(),
                                category: if e.retryable { "adapter" } else { "sql" }.into(),
                                message: e.message,
                            });
                        }
                    }
                    (pi, result)
                });
                progressed = true;
            }
        }
        let Some(joined) = running.join_next().await else {
            break;
        };
        let (pi, result) = match joined {
            Ok(done) => done,
            Err(e) => {
                // A panicking task is a bug; find which model it was by elimination.
                let name = plan
                    .models
                    .iter()
                    .find(|m| states[m.name.as_str()] == State::Running)
                    .map(|m| m.name.clone())
                    .unwrap_or_default();
                let pi = plan.models.iter().position(|m| m.name == name).unwrap_or(0);
                let mut r = results[name.as_str()].clone();
                r.status = "failed".into();
                r.error = Some(ErrorInfo {
                    code: codes::TASK_PANICKED.0.into(),
                    category: "internal".into(),
                    message: e.to_string(),
                });
                (pi, r)
            }
        };
        let m = &plan.models[pi];
        let passed = result.status == "passed";
        states.insert(&m.name, if passed { State::Passed } else { State::Failed });
        ctx.record("model", &m.name, &result).await?;
        if passed {
            record_materialization(c, m, &run_id, generation, state.as_ref(), &plan.environment)
                .await?;
        }
        results.insert(&m.name, result);
    }

    let tests = run_tests(c, plan, adapter.as_ref(), &states, &ctx, &physical).await?;
    let models: Vec<ModelResult> = plan
        .models
        .iter()
        .map(|m| results.remove(m.name.as_str()).expect("result"))
        .collect();
    let failed = models
        .iter()
        .any(|m| m.status == "failed" || m.status == "blocked")
        || tests.iter().any(|t| t.status != "passed");
    let status = if failed { "failed" } else { "passed" };
    let finished_at = now();
    state.finish_run(&run_id, status, &finished_at).await?;
    let report = RunReport::new(run_id, plan, status, started_at, finished_at, models, tests);
    if let Some(observer) = options.observer {
        observer.run_finished(&report);
    }
    Ok(report)
}

fn serde_json_value(plan: &Plan) -> serde_json::Value {
    serde_json::to_value(plan).expect("plans serialise")
}

async fn record_materialization(
    c: &Compilation,
    m: &phlo_transform_plan::PlannedModel,
    run_id: &str,
    generation: i64,
    state: &dyn StateStore,
    environment: &str,
) -> Result<(), StateError> {
    let index = c.model_index(&m.name).expect("planned models exist");
    let Some(v) = &c.models[index].version else {
        return Ok(());
    };
    state
        .record_materialization(&MaterializedVersion {
            environment: environment.to_string(),
            model_id: m.id.clone(),
            model_name: m.name.clone(),
            version: v.version.clone(),
            sql_hash: v.sql_hash.clone(),
            text_hash: Some(v.fingerprints.text.clone()),
            plan_hash: v.fingerprints.plan.clone(),
            config_hash: v.config_hash.clone(),
            upstream: v.upstream.clone(),
            sources: v.sources.clone(),
            materialization: m.materialization.as_str().to_string(),
            relation: m.relation.clone(),
            run_id: run_id.to_string(),
            generation,
            materialized_at: now(),
            output_columns: c.models[index]
                .schema
                .as_ref()
                .and_then(|s| s.columns())
                .map(|cols| {
                    cols.iter()
                        .map(|col| RecordedColumn {
                            name: col.name.clone(),
                            data_type: col.data_type.clone(),
                            nullable: col.nullable,
                        })
                        .collect()
                }),
        })
        .await
}

async fn run_tests(
    c: &Compilation,
    plan: &Plan,
    adapter: &dyn Adapter,
    states: &HashMap<&str, State>,
    ctx: &Ctx<'_>,
    physical: &dyn Fn(&Target) -> String,
) -> Result<Vec<TestResult>, StateError> {
    let by_name: HashMap<&str, &phlo_transform_compiler::CompiledTest> =
        c.tests.iter().map(|t| (t.name.as_str(), t)).collect();
    let mut out = Vec::new();
    let usable: HashSet<&str> = states
        .iter()
        .filter(|(_, s)| s.satisfies_dependents())
        .map(|(n, _)| *n)
        .collect();
    for planned in &plan.tests {
        let test = by_name[planned.name.as_str()];
        let mut r = TestResult {
            name: planned.name.clone(),
            status: "passed".into(),
            violations: None,
            duration_ms: None,
            error: None,
        };
        let blocked = planned
            .targets
            .iter()
            .any(|t| states.contains_key(t.as_str()) && !usable.contains(t.as_str()));
        if blocked {
            r.status = "blocked".into();
            r.error = Some(ErrorInfo {
                code: codes::UPSTREAM_FAILED.0.into(),
                category: "dependency".into(),
                message: "a tested model did not materialise".into(),
            });
        } else {
            let t0 = Instant::now();
            let outcome = match c.executable_test_query(test, physical) {
                Some(q) => adapter.count_rows(&q).await,
                None => Err(phlo_transform_adapter::AdapterError {
                    code: codes::TEST_ERROR,
                    message: "test query could not be built".into(),
                    retryable: false,
                }),
            };
            r.duration_ms = Some(t0.elapsed().as_millis() as u64);
            match outcome {
                Ok(0) => r.violations = Some(0),
                Ok(n) => {
                    r.status = "failed".into();
                    r.violations = Some(n);
                    r.error = Some(ErrorInfo {
                        code: codes::TEST_FAILED.0.into(),
                        category: "test".into(),
                        message: format!("{n} violating row(s)"),
                    });
                }
                Err(e) => {
                    r.status = "error".into();
                    r.error = Some(ErrorInfo {
                        code: codes::TEST_ERROR.0.into(),
                        category: "test".into(),
                        message: e.message,
                    });
                }
            }
        }
        let as_model = ModelResult {
            status: r.status.clone(),
            rows: r.violations,
            duration_ms: r.duration_ms,
            error: r.error.clone(),
            ..ModelResult::new(&r.name, None)
        };
        ctx.record("test", &r.name, &as_model).await?;
        out.push(r);
    }
    Ok(out)
}
