//! The quality gates a workspace holds its data to (SPEC §84, "what are the current quality
//! gates?"): every data test with the models it reads and its newest recorded result, every
//! declared contract, and every source freshness requirement. Selected by model: the gates
//! on that model alone.

use phlo_transform_compiler::contracts::Contract;
use phlo_transform_compiler::{Compilation, TestKind};
use phlo_transform_core::Diagnostic;
use phlo_transform_project::freshness::Freshness;
use phlo_transform_state::{NodeRecord, StateStore};
use serde::Serialize;

use crate::history;

/// Newest runs read for the tests' last results.
const TEST_RUNS: i64 = 20;

#[derive(Serialize)]
pub struct GatesReport<'c> {
    /// The model asked about; `None`: the whole workspace.
    pub model: Option<&'c str>,
    pub tests: Vec<TestGate<'c>>,
    pub contracts: Vec<ContractGate<'c>>,
    pub freshness: Vec<FreshnessGate<'c>>,
}

#[derive(Serialize)]
pub struct TestGate<'c> {
    pub name: &'c str,
    #[serde(flatten)]
    pub kind: &'c TestKind,
    /// The models the test reads.
    pub models: Vec<&'c str>,
    /// The newest recorded result (among the newest runs), with its run's id.
    pub last_run: Option<String>,
    pub last: Option<NodeRecord>,
}

#[derive(Serialize)]
pub struct ContractGate<'c> {
    pub model: &'c str,
    #[serde(flatten)]
    pub contract: &'c Contract,
}

#[derive(Serialize)]
pub struct FreshnessGate<'c> {
    pub source: &'c str,
    #[serde(flatten)]
    pub requirement: &'c Freshness,
}

/// The gates of `c` (of `model` alone when given: its tests, its contract, the freshness of
/// the sources it reads directly), the tests' results read from `store`.
pub async fn gates<'c>(
    c: &'c Compilation,
    store: &dyn StateStore,
    model: Option<&str>,
) -> Result<GatesReport<'c>, Diagnostic> {
    let selected = model.map(|name| c.resolve_model(name)).transpose()?;
    let (_, last) = history::last_test_results(store, TEST_RUNS).await?;
    let tests = c
        .tests
        .iter()
        .filter(|t| selected.is_none_or(|i| t.targets.contains(&i)))
        .map(|t| {
            let recorded = last.get(&t.name);
            TestGate {
                name: &t.name,
                kind: &t.kind,
                models: t
                    .targets
                    .iter()
                    .map(|&i| c.models[i].name.as_str())
                    .collect(),
                last_run: recorded.map(|(run, _)| run.clone()),
                last: recorded.map(|(_, node)| node.clone()),
            }
        })
        .collect();
    let contracts = c
        .contracts
        .iter()
        .filter(|(i, _)| selected.is_none_or(|s| s == **i))
        .map(|(&i, contract)| ContractGate {
            model: c.models[i].name.as_str(),
            contract,
        })
        .collect();
    let read_sources = selected.map(|i| &c.models[i].sources);
    let freshness = c
        .workspace
        .sources
        .iter()
        .filter(|s| {
            read_sources
                .as_ref()
                .is_none_or(|names| names.contains(&s.name))
        })
        .filter_map(|s| {
            s.freshness.as_ref().map(|requirement| FreshnessGate {
                source: &s.name,
                requirement,
            })
        })
        .collect();
    Ok(GatesReport {
        model: selected.map(|i| c.models[i].name.as_str()),
        tests,
        contracts,
        freshness,
    })
}
