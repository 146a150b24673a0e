//! The compiler: a loaded `Workspace` and a `CatalogSnapshot` in, an immutable `Compilation`
//! out (parsed queries, resolved relations, the DAG, model versions, tests, diagnostics).
//! Compiling never touches a warehouse.

mod analysis;

/// A compiler phase with fewer models than this runs on one thread (`par`): starting the
/// threads (and, for typing, a planning session each) costs more than a few models.
const PARALLEL_MIN_MODELS: usize = 64;

use phlo_transform_core::par;
mod artifact_dir;
pub mod artifacts;
pub mod cache;
pub mod catalog;
pub mod compile;
pub mod contracts;
pub mod dialect;
pub mod graph;
mod incremental;
pub mod lineage;
mod locate;
pub mod model;
pub mod output;
mod parsed;
mod plan_lineage;
mod relax;
pub mod report;
pub mod resolve;
mod rest_sources;
pub mod schemas;
pub mod semantics;
mod source_state;
pub mod tests;
mod type_error;
mod typed_cache;
pub mod types;
pub mod typing;
pub mod validate;
pub mod version;

pub use artifact_dir::{ArtifactDir, DesignEvents};
pub use cache::{CacheStats, CompileCache, DirPackStore};
pub use catalog::{AsOf, CatalogSnapshot, SourceDrift, SourceState};
pub use compile::{Compilation, MissingRelations, ModelLookup};
pub use lineage::LineageGraph;
pub use model::{Column, CompiledModel, Dependency, ModelSchema};
pub use tests::{CompiledTest, TestKind};
pub use version::{ModelVersion, SqlChange};
