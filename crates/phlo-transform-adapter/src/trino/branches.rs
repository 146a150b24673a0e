//! Environments on Trino + Nessie (SPEC §44–45, §70): a reference is a Nessie branch, and a
//! candidate's models are written through a Trino catalog bound to its branch, so the
//! published branch is never written before `promote`.
//!
//! - `main` is the branch the workspace's catalog is on (`[adapter.nessie] ref`, default
//!   `main`); a candidate `dev` is the Nessie branch `dev`.
//! - A candidate's catalog is `phlo_<sanitised ref>_<8 hex of SHA-256 of the ref>` (SPEC §45),
//!   an Iceberg catalog on the candidate's branch created with `CREATE CATALOG` (Trino's
//!   dynamic catalogs, `catalog.management=dynamic`). It is created by `ref create` — a
//!   catalog of that name already there is dropped first, never adopted on its name — and
//!   created again when missing (dynamic catalogs end with the Trino process).
//! - Publishing and rollback reassign the target branch with its expected head
//!   (`PUT /trees/<branch>@<hash>`): Nessie refuses a moved head (409), the compare-and-swap
//!   of promotions. Nessie 0.99's merge is not used for the publish because it checks its
//!   expected hash only against conflicting keys (a merge over a moved target applies).

use async_trait::async_trait;
use phlo_transform_core::diagnostic::codes;
use phlo_transform_lakehouse::iceberg_state::local_path;
use phlo_transform_lakehouse::nessie::{Content, Nessie, NessieError, NessieErrorKind, Reference};
use phlo_transform_project::AdapterTarget;
use std::collections::{BTreeSet, HashMap};
use std::path::Path;
use std::time::Duration;

use super::client::{Trino, TrinoConfig};
use super::TrinoSettings;
use crate::branching::{BranchCatalog, BranchTable, MoveError, TableAt};
use crate::local::IcebergOpenError;
use crate::AdapterError;

/// The published reference's name.
const MAIN: &str = "main";

/// The branches of one Trino + Nessie target.
pub struct Branches {
    nessie: Nessie,
    nessie_url: String,
    trino: Trino,
    settings: TrinoSettings,
    /// The Nessie branch `main` is (`[adapter.nessie] ref`).
    main_branch: String,
    /// `[adapter.nessie] warehouse`: the default warehouse directory of candidate catalogs.
    warehouse: Option<String>,
    target: AdapterTarget,
}

fn failed(what: &str, e: &NessieError) -> AdapterError {
    let code = if e.kind == NessieErrorKind::Unreachable {
        codes::ADAPTER_UNAVAILABLE
    } else {
        codes::BRANCH_UNAVAILABLE
    };
    AdapterError::new(code, format!("Nessie: {what}: {e}"))
}

/// A SQL string literal.
fn literal(s: &str) -> String {
    format!("'{}'", s.replace('\'', "''"))
}

impl Branches {
    /// The branches of `target` (a `type = "trino"` target with `[adapter.nessie]`).
    pub fn new(target: &AdapterTarget, root: &Path) -> Result<Self, AdapterError> {
        let settings = super::settings(target, root)?;
        let Some((url, main_branch)) = settings.nessie.clone() else {
            return Err(AdapterError::new(
                codes::ENVIRONMENTS_UNSUPPORTED,
                format!(
                    "adapter `{}` has no [adapter.nessie]: environments on Trino are Nessie branches",
                    target.name
                ),
            ));
        };
        let nessie = Nessie::new(url.clone(), Duration::from_secs(10)).map_err(|e| {
            AdapterError::new(codes::ADAPTER_UNAVAILABLE, format!("Nessie at {url}: {e}"))
        })?;
        let mut config = TrinoConfig::new(settings.url.clone(), settings.user.clone());
        config.password = settings.password.clone();
        let trino = Trino::new(config).map_err(|e| {
            AdapterError::new(
                codes::ADAPTER_UNAVAILABLE,
                format!("Trino at {}: {e}", settings.url),
            )
        })?;
        Ok(Branches {
            nessie,
            nessie_url: url.to_string(),
            trino,
            warehouse: target
                .settings
                .nessie
                .as_ref()
                .and_then(|n| n.warehouse.clone()),
            settings,
            main_branch,
            target: target.clone(),
        })
    }

    async fn create_catalog(&self, name: &str) -> Result<(), AdapterError> {
        let Some(warehouse) = &self.warehouse else {
            return Err(AdapterError::new(
                codes::BRANCH_UNAVAILABLE,
                format!(
                    "adapter `{}`: a candidate's catalog needs [adapter.nessie] warehouse (the catalog's default warehouse directory, e.g. \"local:///iceberg\")",
                    self.target.name
                ),
            ));
        };
        let mut properties = vec![
            ("iceberg.catalog.type", "nessie".to_string()),
            (
                "iceberg.nessie-catalog.uri",
                self.nessie_url.trim_end_matches('/').to_string(),
            ),
            ("iceberg.nessie-catalog.ref", self.branch_of(name)),
            (
                "iceberg.nessie-catalog.default-warehouse-dir",
                warehouse.clone(),
            ),
        ];
        if let Some(root) = &self.settings.local_root {
            properties.push(("fs.native-local.enabled", "true".into()));
            properties.push(("local.location", root.display().to_string()));
        }
        let with: Vec<String> = properties
            .iter()
            .map(|(k, v)| format!("\"{k}\" = {}", literal(v)))
            .collect();
        self.sql(&format!(
            "CREATE CATALOG IF NOT EXISTS {} USING iceberg WITH ({})",
            self.catalog_of(name),
            with.join(", ")
        ))
        .await
    }

    async fn sql(&self, sql: &str) -> Result<(), AdapterError> {
        self.trino.execute(sql).await.map(|_| ()).map_err(|e| {
            AdapterError::new(
                codes::BRANCH_UNAVAILABLE,
                format!(
                    "Trino refused `{}`: {e}",
                    sql.split(" WITH ").next().unwrap_or(sql)
                ),
            )
        })
    }
}

#[async_trait]
impl BranchCatalog for Branches {
    fn branch_of(&self, name: &str) -> String {
        if name == MAIN {
            self.main_branch.clone()
        } else {
            name.to_string()
        }
    }

    fn catalog_of(&self, name: &str) -> String {
        if name == MAIN {
            return self.settings.catalog.clone();
        }
        let sanitised: String = name
            .chars()
            .map(|c| {
                if c.is_ascii_alphanumeric() {
                    c.to_ascii_lowercase()
                } else {
                    '_'
                }
            })
            .collect();
        let hash = &phlo_transform_core::hash::sha256_hex(name)[..8];
        format!("phlo_{sanitised}_{hash}")
    }

    fn target_for(&self, name: &str) -> AdapterTarget {
        let mut target = self.target.clone();
        target.settings.catalog = Some(self.catalog_of(name));
        if let Some(n) = &mut target.settings.nessie {
            n.reference = Some(self.branch_of(name));
        }
        target
    }

    fn key_of(&self, model_name: &str) -> String {
        crate::naming::model(
            model_name,
            self.settings.default_schema.as_deref(),
            "default",
        )
        .to_string()
    }

    async fn head(&self, name: &str) -> Result<Option<String>, AdapterError> {
        let branch = self.branch_of(name);
        match self.nessie.reference(&branch).await {
            Ok(r) => Ok(Some(r.hash)),
            Err(e) if e.kind == NessieErrorKind::NotFound => Ok(None),
            Err(e) => Err(failed(&format!("reading branch `{branch}`"), &e)),
        }
    }

    async fn create(&self, name: &str, from: &str, hash: &str) -> Result<(), AdapterError> {
        let from = Reference {
            kind: "BRANCH".into(),
            name: self.branch_of(from),
            hash: hash.to_string(),
        };
        let created = self.nessie.create_branch(name, &from).await.map_err(|e| {
            if e.kind == NessieErrorKind::AlreadyExists {
                AdapterError::new(
                    codes::REF_EXISTS,
                    format!(
                        "Nessie already has a branch `{name}` that phlo-transform did not create"
                    ),
                )
            } else {
                failed(&format!("creating branch `{name}`"), &e)
            }
        })?;
        let catalog = self.catalog_of(name);
        let provisioned = async {
            self.sql(&format!("DROP CATALOG IF EXISTS {catalog}"))
                .await?;
            self.create_catalog(name).await
        }
        .await;
        if let Err(e) = provisioned {
            let _ = self.nessie.delete_branch(&created).await;
            return Err(e);
        }
        Ok(())
    }

    async fn ensure_catalog(&self, name: &str) -> Result<(), AdapterError> {
        if name != MAIN {
            self.create_catalog(name).await?;
        }
        Ok(())
    }

    async fn delete(&self, name: &str, hash: &str) -> Result<(), MoveError> {
        let branch = Reference {
            kind: "BRANCH".into(),
            name: self.branch_of(name),
            hash: hash.to_string(),
        };
        match self.nessie.delete_branch(&branch).await {
            Ok(()) => {}
            Err(e) if e.kind == NessieErrorKind::Conflict => {
                return Err(MoveError::Moved(e.message))
            }
            Err(e) if e.kind == NessieErrorKind::NotFound => {}
            Err(e) => {
                return Err(MoveError::Failed(failed(
                    &format!("deleting branch `{}`", branch.name),
                    &e,
                )))
            }
        }
        self.sql(&format!("DROP CATALOG IF EXISTS {}", self.catalog_of(name)))
            .await
            .map_err(MoveError::Failed)
    }

    async fn reassign(&self, name: &str, expected: &str, hash: &str) -> Result<(), MoveError> {
        let branch = Reference {
            kind: "BRANCH".into(),
            name: self.branch_of(name),
            hash: expected.to_string(),
        };
        match self.nessie.reassign(&branch, hash).await {
            Ok(_) => Ok(()),
            Err(e) if e.kind == NessieErrorKind::Conflict => Err(MoveError::Moved(e.message)),
            Err(e) => Err(MoveError::Failed(failed(
                &format!("reassigning branch `{}`", branch.name),
                &e,
            ))),
        }
    }

    async fn identities(
        &self,
        name: &str,
        models: &[&str],
    ) -> Result<HashMap<String, Option<String>>, AdapterError> {
        let branch = self.branch_of(name);
        let mut out = HashMap::new();
        for model in models {
            let key = self.key_of(model);
            let parts: Vec<&str> = key.split('.').collect();
            let content = self
                .nessie
                .content(&branch, &parts)
                .await
                .map_err(|e| failed(&format!("reading `{key}` on `{branch}`"), &e))?;
            let identity = match content {
                Some(Content::IcebergTable {
                    snapshot_id,
                    schema_id,
                    ..
                }) => Some(super::identity::iceberg_identity(
                    Some(snapshot_id),
                    schema_id,
                )),
                _ => None,
            };
            out.insert(model.to_string(), identity);
        }
        Ok(out)
    }

    async fn changed_between(
        &self,
        from: (&str, &str),
        to: (&str, &str),
    ) -> Result<BTreeSet<String>, AdapterError> {
        let (a, b) = (self.branch_of(from.0), self.branch_of(to.0));
        let diff = self
            .nessie
            .diff(&format!("{a}@{}", from.1), &format!("{b}@{}", to.1))
            .await
            .map_err(|e| failed(&format!("comparing `{a}` with `{b}`"), &e))?;
        Ok(diff.into_iter().map(|d| d.key.join(".")).collect())
    }

    /// Read from the table's Iceberg metadata, found through Nessie's contents API at that
    /// commit (under the target's `local_root`).
    async fn table_at(
        &self,
        name: &str,
        hash: &str,
        model_name: &str,
        snapshot: Option<i64>,
    ) -> Result<TableAt, AdapterError> {
        let branch = self.branch_of(name);
        let key = self.key_of(model_name);
        let parts: Vec<&str> = key.split('.').collect();
        let content = self
            .nessie
            .content(&format!("{branch}@{hash}"), &parts)
            .await
            .map_err(|e| failed(&format!("reading `{key}` on `{branch}` at {hash}"), &e))?;
        let Some(Content::IcebergTable {
            metadata_location,
            snapshot_id,
            ..
        }) = content
        else {
            return Ok(TableAt::Missing);
        };
        let unreadable = |e: String| {
            AdapterError::new(
                codes::RELATION_UNAVAILABLE,
                format!("table `{key}` on `{branch}` at {hash} ({metadata_location}): {e}"),
            )
        };
        let path = local_path(&metadata_location, self.settings.local_root.as_deref())
            .map_err(|e| unreadable(e.to_string()))?;
        let opened = crate::local::open_iceberg_provider(
            &path,
            &key,
            self.settings.local_root.as_deref(),
            snapshot,
        )
        .await;
        match opened {
            Ok(provider) => Ok(TableAt::Found(BranchTable {
                key,
                provider,
                snapshot_id: snapshot.unwrap_or(snapshot_id),
            })),
            Err(IcebergOpenError::NoSnapshot { id, snapshots }) => {
                Ok(TableAt::NoSnapshot { id, snapshots })
            }
            Err(IcebergOpenError::Unreadable(e)) => Err(unreadable(e)),
        }
    }

    fn describe(&self, name: &str) -> String {
        format!("Nessie branch `{}`", self.branch_of(name))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn punctuation_equivalent_refs_get_distinct_catalogs() {
        let settings = phlo_transform_project::AdapterSection {
            kind: "trino".into(),
            url: Some("http://127.0.0.1:8080".into()),
            nessie: Some(phlo_transform_project::NessieSection {
                url: "http://127.0.0.1:19120/api/v2".into(),
                reference: None,
                warehouse: None,
            }),
            ..Default::default()
        };
        let target = AdapterTarget::new("default", settings).unwrap();
        let b = Branches::new(&target, Path::new("/")).unwrap();
        let (a, c) = (b.catalog_of("ci/pr-1"), b.catalog_of("ci_pr_1"));
        assert_ne!(a, c);
        assert!(a.starts_with("phlo_ci_pr_1_"), "{a}");
        assert_eq!(b.catalog_of("main"), "iceberg");
        assert_eq!(b.branch_of("main"), "main");
        assert_eq!(b.catalog_of("Feature/X").len(), "phlo_feature_x_".len() + 8);
    }
}
