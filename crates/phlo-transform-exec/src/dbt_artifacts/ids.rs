//! How the workspace's models, sources and tests are named in dbt's artifacts: a project
//! (the workspace folder's name as a dbt identifier), a `unique_id` per node
//! (`model.<project>.<name>`, `source.<project>.<source>.<table>`, `test.<project>.<name>`)
//! and the relation each node is in the warehouse, as the engine the run used names it.
//! The leaf the manifest and the run results share, so that both give a node one id.

use phlo_transform_adapter::{Adapter, Relation};
use phlo_transform_compiler::Compilation;
use std::collections::HashMap;

/// `metadata.dbt_version`: not a dbt version, which would claim a dbt produced them, but
/// what did.
pub(crate) const DBT_VERSION: &str = concat!("phlo-transform-", env!("CARGO_PKG_VERSION"));

/// Where the engine of a run keeps each model and source, and what it is called.
pub struct Relations {
    /// The engine's name (`local`, `postgres`, …): the manifest's `adapter_type`.
    pub(crate) adapter: String,
    /// By model index.
    pub(crate) models: Vec<Relation>,
    pub(crate) sources: HashMap<String, Relation>,
}

impl Relations {
    /// The relations `engine` gives the models and sources of `c`.
    pub fn of(c: &Compilation, engine: &dyn Adapter) -> Relations {
        Relations {
            adapter: engine.kind().as_str().to_string(),
            models: c
                .models
                .iter()
                .map(|m| engine.model_relation(m.name.as_str()))
                .collect(),
            sources: c
                .workspace
                .sources
                .iter()
                .map(|s| (s.name.clone(), engine.source_relation(&s.name)))
                .collect(),
        }
    }
}

/// A relation as dbt's `database`, `schema` and `alias`. The local engine's relations are one
/// name (`analytics.shared__calendar`, or the model's own dotted name): its first segment is
/// the schema.
pub(crate) struct DbtRelation {
    pub database: Option<String>,
    pub schema: String,
    pub alias: String,
    /// The relation as the engine's SQL names it.
    pub relation_name: String,
}

impl DbtRelation {
    pub fn of(relation: &Relation) -> DbtRelation {
        let (database, schema, alias) = match relation.parts.as_slice() {
            [database, schema, rest @ ..] if !rest.is_empty() => {
                (Some(database.clone()), schema.clone(), rest.join("."))
            }
            [schema, table] => (None, schema.clone(), table.clone()),
            [one] => match one.split_once('.') {
                Some((schema, table)) => (None, schema.to_string(), table.to_string()),
                None => (None, String::new(), one.clone()),
            },
            _ => (None, String::new(), relation.to_string()),
        };
        DbtRelation {
            database,
            schema,
            alias,
            relation_name: relation
                .parts
                .iter()
                .map(|p| format!("\"{}\"", p.replace('"', "\"\"")))
                .collect::<Vec<_>>()
                .join("."),
        }
    }
}

/// The dbt names of one compilation's nodes.
pub(crate) struct Ids {
    pub project: String,
    /// A model's dbt `name` by index: its last name segment, or, where two models share one,
    /// its whole name joined with `__` (a dbt name is unique in its project and has no dots).
    names: Vec<String>,
}

impl Ids {
    pub fn new(c: &Compilation) -> Ids {
        let folder = c
            .workspace
            .root
            .canonicalize()
            .unwrap_or_else(|_| c.workspace.root.clone());
        let folder = folder
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default();
        let mut project = identifier(&folder);
        if project.is_empty() || project.starts_with(|ch: char| ch.is_ascii_digit()) {
            project = format!("phlo_{project}");
        }
        let last = |name: &str| name.rsplit('.').next().unwrap_or(name).to_string();
        let mut count: HashMap<String, usize> = HashMap::new();
        for m in &c.models {
            *count.entry(last(m.name.as_str())).or_default() += 1;
        }
        let names = c
            .models
            .iter()
            .map(|m| {
                let short = last(m.name.as_str());
                match count[&short] {
                    1 => short,
                    _ => m.name.as_str().replace('.', "__"),
                }
            })
            .collect();
        Ids { project, names }
    }

    pub fn model_name(&self, index: usize) -> &str {
        &self.names[index]
    }

    pub fn model(&self, index: usize) -> String {
        format!("model.{}.{}", self.project, self.names[index])
    }

    /// `(source_name, table)`: a source `lims.samples` is table `samples` of source `lims`
    /// (`a.b.c`: `a_b`, `c`; a one-segment source is its own source).
    pub fn source_parts(name: &str) -> (String, String) {
        match name.rsplit_once('.') {
            Some((source, table)) => (source.replace('.', "_"), table.to_string()),
            None => (name.to_string(), name.to_string()),
        }
    }

    pub fn source(&self, name: &str) -> String {
        let (source, table) = Self::source_parts(name);
        format!("source.{}.{source}.{table}", self.project)
    }

    /// A test's dbt name: its name with dots as `_` (`shop.orders.not_null.id` →
    /// `shop_orders_not_null_id`).
    pub fn test_name(name: &str) -> String {
        identifier(name)
    }

    pub fn test(&self, name: &str) -> String {
        format!("test.{}.{}", self.project, Self::test_name(name))
    }
}

/// `text` as a dbt identifier: lower-case letters, digits and `_`.
fn identifier(text: &str) -> String {
    text.chars()
        .map(|ch| match ch {
            'a'..='z' | '0'..='9' | '_' => ch,
            'A'..='Z' => ch.to_ascii_lowercase(),
            _ => '_',
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn relations_split_into_database_schema_and_alias() {
        let r = DbtRelation::of(&Relation::new(["iceberg", "assay", "results"]));
        assert_eq!(
            (r.database.as_deref(), r.schema.as_str(), r.alias.as_str()),
            (Some("iceberg"), "assay", "results")
        );
        let r = DbtRelation::of(&Relation::new(["analytics.shared__calendar"]));
        assert_eq!(
            (r.schema.as_str(), r.alias.as_str()),
            ("analytics", "shared__calendar")
        );
        let r = DbtRelation::of(&Relation::new(["public", "orders"]));
        assert_eq!((r.database, r.schema.as_str()), (None, "public"));
    }

    #[test]
    fn sources_are_tables_of_their_namespace() {
        assert_eq!(
            Ids::source_parts("lims.samples"),
            ("lims".into(), "samples".into())
        );
        assert_eq!(Ids::source_parts("a.b.c"), ("a_b".into(), "c".into()));
        assert_eq!(
            Ids::test_name("shop.orders.not_null.id"),
            "shop_orders_not_null_id"
        );
    }
}
