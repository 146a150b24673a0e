//! The data tests of a review and their results from state: for each test of the
//! compilation, the latest result an environment's runs recorded, and whether it was recorded
//! at the test's current version (its SQL and the versions of what it reads) — a result of
//! another version says nothing about the change under review.

use phlo_transform_compiler::Compilation;
use phlo_transform_core::diagnostic::codes;
use phlo_transform_core::Diagnostic;
use phlo_transform_state::StateStore;
use serde::Serialize;
use std::collections::HashMap;

use crate::tests_run::test_version;

/// How many of the environment's latest runs are searched for a test's result.
const RUNS_SEARCHED: usize = 20;

/// One test's latest recorded result.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct TestReview {
    pub name: String,
    pub targets: Vec<String>,
    /// The recorded status (`passed`, `failed`, `error`, `blocked`, `cancelled`, `cached`),
    /// or `not_run` when no searched run recorded the test.
    pub status: String,
    /// Whether the result was recorded at the test's current version. `false` for a test
    /// never run, or run before the change (its SQL or a model it reads changed since).
    pub current: bool,
    /// The run that recorded it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub run_id: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
}

impl TestReview {
    /// Passed (or carried as cached) at its current version.
    pub fn passed(&self) -> bool {
        self.current && matches!(self.status.as_str(), "passed" | "cached")
    }

    /// Did not pass at its current version: what `--fail-on tests` refuses.
    pub fn failed(&self) -> bool {
        self.current && !self.passed()
    }
}

/// Every test of `c` (by name) with its latest result among the last runs of `environment`.
pub async fn latest_results(
    c: &Compilation,
    store: &dyn StateStore,
    environment: &str,
) -> Result<Vec<TestReview>, Diagnostic> {
    let unavailable = |e: phlo_transform_state::StateError| {
        Diagnostic::error(codes::STATE_UNAVAILABLE, e.message)
            .with_help("the state database may be damaged; `phlo-transform clean --all` resets it")
    };
    let runs = store.runs(200).await.map_err(unavailable)?;
    let mut latest: HashMap<String, (phlo_transform_state::NodeRecord, String)> = HashMap::new();
    // Newest first: a test's first record found is its latest.
    for run in runs
        .iter()
        .filter(|r| r.environment == environment)
        .take(RUNS_SEARCHED)
    {
        for n in store.run_nodes(&run.run_id).await.map_err(unavailable)? {
            if n.kind == "test" && !latest.contains_key(&n.node) {
                latest.insert(n.node.clone(), (n, run.run_id.clone()));
            }
        }
    }
    let mut out: Vec<TestReview> = c
        .tests
        .iter()
        .map(|t| {
            let targets = t
                .targets
                .iter()
                .map(|&i| c.models[i].name.to_string())
                .collect();
            match latest.get(&t.name) {
                None => TestReview {
                    name: t.name.clone(),
                    targets,
                    status: "not_run".into(),
                    current: false,
                    run_id: None,
                    error: None,
                },
                Some((n, run)) => TestReview {
                    name: t.name.clone(),
                    targets,
                    status: n.status.clone(),
                    current: n.version.is_some() && n.version == test_version(c, t),
                    run_id: Some(run.clone()),
                    error: n.error_message.clone(),
                },
            }
        })
        .collect();
    out.sort_by(|a, b| a.name.cmp(&b.name));
    Ok(out)
}
