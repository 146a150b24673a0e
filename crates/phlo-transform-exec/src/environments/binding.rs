//! A command bound to one environment: the engine that reads its pointers and writes into its
//! own root, the records it inherits with their identity proofs, and the commit of a run's
//! writes into its pointers.

use phlo_transform_adapter::pins::{commit_identity, Pin};
use phlo_transform_adapter::{Adapter, AdapterError, EnvironmentSupport, LocalEngine, Purpose};
use phlo_transform_compiler::Compilation;
use phlo_transform_core::diagnostic::codes;
use phlo_transform_core::Diagnostic;
use phlo_transform_plan::Adoptable;
use phlo_transform_project::AdapterKind;
use phlo_transform_state::{
    MaterializedVersion, RefRecord, RefSwap, RefWrite, RunBinding, StateStore,
};
use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use super::{environment_of, now, own_dir, stale, state_error, unknown_ref, Environments, MAIN};
use crate::RunReport;

/// One environment as a command uses it.
pub struct Binding {
    pub reference: String,
    /// The state environment its runs and materialisations are recorded under.
    pub environment: String,
    pub(crate) warehouse: PathBuf,
    /// Where it writes.
    pub own_root: PathBuf,
    /// The local target's `default_schema` (where it places models).
    pub(crate) default_schema: Option<String>,
    /// `None`: `main` before any environment was created from it (its own tables, latest).
    pub record: Option<RefRecord>,
    /// On Trino + Nessie: the candidate's branch, its catalog and live table identities.
    pub branch: Option<BranchBinding>,
}

/// What a command bound to a candidate branch on Trino + Nessie opens and proves
/// (`environments::branches`).
pub struct BranchBinding {
    pub(crate) branches: Arc<dyn phlo_transform_adapter::branching::BranchCatalog>,
    /// The target with the candidate's catalog and branch.
    pub target: phlo_transform_project::AdapterTarget,
    /// The identity of each inherited model's table on the branch now, by model name.
    pub(crate) identities: HashMap<String, Option<String>>,
}

/// Records an environment reads from another environment's tables, and their proofs.
#[derive(Default)]
pub struct Inherited {
    pub records: HashMap<String, MaterializedVersion>,
    pub adoptable: HashMap<String, Adoptable>,
}

impl Binding {
    /// Where each model is read from, by its relation (the engine's name for it).
    pub fn pins(&self) -> HashMap<String, Pin> {
        let Some(record) = &self.record else {
            return HashMap::new();
        };
        record
            .pointers
            .values()
            .map(|p| {
                let pin = Pin {
                    path: self.warehouse.join(&p.location),
                    view: p.kind == "view",
                    delta_version: p.delta_version,
                };
                (p.record.relation.clone(), pin)
            })
            .collect()
    }

    /// The local engine over this environment: its own root, its pins.
    pub async fn open_engine(
        &self,
        c: &Compilation,
        purpose: Purpose,
    ) -> (Arc<dyn Adapter>, Vec<AdapterError>) {
        match purpose {
            Purpose::Plan => (
                Arc::new(LocalEngine::unregistered_pinned(
                    &self.own_root,
                    self.default_schema.as_deref(),
                    self.pins(),
                )),
                Vec::new(),
            ),
            Purpose::Run { .. } => {
                let (engine, problems) = LocalEngine::open_pinned(
                    &self.own_root,
                    self.default_schema.as_deref(),
                    self.pins(),
                    c,
                )
                .await;
                (Arc::new(engine), problems)
            }
        }
    }

    /// The local engine over this environment with its sources and relations registered, as
    /// the concrete type (`diff` reads Delta versions through it).
    pub async fn open_local(&self, c: &Compilation) -> (LocalEngine, Vec<AdapterError>) {
        LocalEngine::open_pinned(
            &self.own_root,
            self.default_schema.as_deref(),
            self.pins(),
            c,
        )
        .await
    }

    /// The record of model `model_id` in this environment: its own, else the one it
    /// inherits.
    pub async fn recorded(
        &self,
        store: &dyn StateStore,
        model_id: &str,
    ) -> Result<Option<MaterializedVersion>, Diagnostic> {
        let own = own_record(store, &self.environment, model_id).await?;
        Ok(own.or_else(|| self.inherited().records.remove(model_id)))
    }

    /// Every model's record in this environment: its own, else the one it inherits.
    pub async fn materializations(
        &self,
        store: &dyn StateStore,
    ) -> Result<HashMap<String, MaterializedVersion>, Diagnostic> {
        let mut all = self.inherited().records;
        let own = store
            .materializations(&self.environment)
            .await
            .map_err(state_error)?;
        all.extend(own);
        Ok(all)
    }

    /// The records this environment reads from tables another environment wrote, each with
    /// the live check of its output identity: the Delta commit at the pinned version still
    /// has the digest recorded with the pointer (a view: its definition is still there).
    pub fn inherited(&self) -> Inherited {
        let mut out = Inherited::default();
        let Some(record) = &self.record else {
            return out;
        };
        for (id, p) in &record.pointers {
            if p.built_in == self.environment {
                continue;
            }
            if let Some(b) = &self.branch {
                out.records.insert(id.clone(), p.record.clone());
                out.adoptable.insert(
                    id.clone(),
                    Adoptable {
                        environment: p.built_in.clone(),
                        identity: self.branch_proof(b, p),
                    },
                );
                continue;
            }
            let path = self.warehouse.join(&p.location);
            let identity = match (p.kind.as_str(), p.delta_version) {
                ("view", _) if path.is_file() => {
                    Ok(format!("view definition `{}` present", p.location))
                }
                ("view", _) => Err(format!("view definition `{}` is gone", p.location)),
                (_, Some(v)) => match (commit_identity(&path, v), &p.identity) {
                    (Some(live), Some(recorded)) if &live == recorded => Ok(format!(
                        "Delta version {v} of `{}` still has identity {live}",
                        p.location
                    )),
                    (Some(live), recorded) => Err(format!(
                        "Delta version {v} of `{}` has identity {live}, recorded {}",
                        p.location,
                        recorded.as_deref().unwrap_or("none")
                    )),
                    (None, _) => Err(format!(
                        "Delta version {v} of `{}` is no longer in its log",
                        p.location
                    )),
                },
                (_, None) => Err(format!("no Delta version recorded for `{}`", p.location)),
            };
            out.records.insert(id.clone(), p.record.clone());
            out.adoptable.insert(
                id.clone(),
                Adoptable {
                    environment: p.built_in.clone(),
                    identity,
                },
            );
        }
        out
    }

    /// After a run: the models it wrote now point at this environment's own tables (their
    /// latest versions), models no longer in the workspace (`c`) are no longer pointed at,
    /// and the run is bound to the resulting hash — what the `run` gate checks. A candidate's
    /// new state is recorded as environment evidence (exported into `artifacts`). Nothing to
    /// do for `main` unpinned (it reads its own tables as they are).
    pub async fn commit_run(
        &self,
        store: &Arc<dyn StateStore>,
        report: &RunReport,
        c: &Compilation,
        artifacts: &Path,
    ) -> Result<Option<RefRecord>, Diagnostic> {
        if self.record.is_none() {
            return Ok(None);
        }
        let envs = Environments {
            store: store.clone(),
            warehouse: self.warehouse.clone(),
            branches: self.branch.as_ref().map(|b| b.branches.clone()),
            artifacts: Some(artifacts.to_path_buf()),
        };
        let next = if self.branch.is_some() {
            envs.branch_commit_run(&self.reference, report).await?
        } else {
            self.commit_local(&envs, report, c).await?
        };
        envs.record_environment(&next).await?;
        Ok(Some(next))
    }

    async fn commit_local(
        &self,
        envs: &Environments,
        report: &RunReport,
        c: &Compilation,
    ) -> Result<RefRecord, Diagnostic> {
        let store = &envs.store;
        let current = envs.get(&self.reference).await?;
        let records = store
            .materializations(&self.environment)
            .await
            .map_err(state_error)?;
        let by_name: HashMap<&str, &MaterializedVersion> = records
            .values()
            .map(|r| (r.model_name.as_str(), r))
            .collect();
        let mut pointers = current.pointers.clone();
        pointers.retain(|id, _| c.models.iter().any(|m| &m.id == id));
        for m in report.models.iter().filter(|m| m.status == "passed") {
            let Some(record) = by_name.get(m.name.as_str()) else {
                continue;
            };
            if let Some(p) = envs.own_pointer(&self.reference, &self.environment, (*record).clone())
            {
                pointers.insert(record.model_id.clone(), p);
            }
        }
        let mut next = current.clone();
        next.set_pointers(pointers, &now());
        next.run = Some(RunBinding {
            run_id: report.run_id.clone(),
            hash: next.hash.clone(),
        });
        let swap = RefSwap {
            writes: vec![RefWrite {
                name: self.reference.clone(),
                expected: Some(current.hash.clone()),
                record: Some(next.clone()),
            }],
            ..RefSwap::default()
        };
        if !store.swap_refs(&swap).await.map_err(state_error)? {
            return Err(stale(&format!(
                "`{}` moved while run {} was writing it: its writes are recorded but not in its pointers",
                self.reference, report.run_id
            )));
        }
        Ok(next)
    }
}

impl Environments {
    /// The environment `reference` (default `main`) binds a command to.
    pub async fn bind(
        &self,
        reference: Option<&str>,
        default_schema: Option<&str>,
    ) -> Result<Binding, Diagnostic> {
        let name = reference.unwrap_or(MAIN);
        if self.branches.is_some() && name != MAIN {
            return self.branch_bind(name).await;
        }
        let recorded = self.store.refs().await.map_err(state_error)?;
        let record = recorded.into_iter().find(|r| r.name == name);
        if record.is_none() && name != MAIN {
            return Err(unknown_ref(name).with_help(
                "create it first: `phlo-transform ref create <name> --from main` (no command creates a reference as a side effect)",
            ));
        }
        Ok(Binding {
            reference: name.to_string(),
            environment: environment_of(name),
            warehouse: self.warehouse.clone(),
            own_root: self.warehouse.join(own_dir(name)),
            default_schema: default_schema.map(str::to_string),
            record,
            branch: None,
        })
    }
}

/// The environment a command on an adapter of kind `adapter_kind` (whose environments are
/// `support`) runs in: `None` for adapters without pinned environments (their one
/// environment, as before) unless `--ref` named one, which is Y015 there: environments exist
/// on the local engine (and on Trino + Nessie, bound by `CommandTarget::bind`).
pub async fn bind_target(
    store: Arc<dyn StateStore>,
    warehouse: &Path,
    adapter_kind: AdapterKind,
    support: EnvironmentSupport,
    default_schema: Option<&str>,
    reference: Option<&str>,
) -> Result<Option<Binding>, Diagnostic> {
    if support != EnvironmentSupport::Pins {
        return match reference {
            None => Ok(None),
            Some(r) => Err(Diagnostic::error(
                codes::ENVIRONMENTS_UNSUPPORTED,
                format!("--ref {r}: adapter `{adapter_kind}` has no environments"),
            )
            .with_help("environments run on the embedded local engine (`--adapter local`) and on Trino with [adapter.nessie]")),
        };
    }
    Environments::new(store, warehouse)
        .bind(reference, default_schema)
        .await
        .map(Some)
}

/// The record `environment` itself holds of model `model_id`: one model's records read, not
/// the environment's (an inspection reads one model of thousands).
pub(crate) async fn own_record(
    store: &dyn StateStore,
    environment: &str,
    model_id: &str,
) -> Result<Option<MaterializedVersion>, Diagnostic> {
    Ok(store
        .model_materializations(model_id)
        .await
        .map_err(state_error)?
        .into_iter()
        .find(|m| m.environment == environment && m.model_id == model_id))
}
