//! The compiler: a loaded `Workspace` and a `CatalogSnapshot` in, an immutable `Compilation`
//! out (parsed queries, resolved relations, the DAG, model versions, tests, diagnostics).
//! Compiling never touches a warehouse.

mod analysis;
pub mod artifacts;
pub mod catalog;
pub mod compile;
pub mod contracts;
pub mod dialect;
pub mod graph;
mod incremental;
pub mod lineage;
mod locate;
mod par;
mod relax;
pub mod resolve;
mod rest_sources;
pub mod schemas;
pub mod semantics;
pub mod tests;
mod type_error;
pub mod types;
pub mod typing;
pub mod validate;
pub mod version;

pub use catalog::{CatalogSnapshot, SourceDrift, SourceState};
pub use compile::{Compilation, CompiledModel, Dependency, ModelLookup};
pub use lineage::LineageGraph;
pub use tests::{CompiledTest, TestKind};
pub use typing::{Column, ModelSchema};
pub use version::{ModelVersion, SqlChange};
