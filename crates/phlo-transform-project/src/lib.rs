//! Loads a workspace from disk: which files are models, what they are called, which
//! configuration applies to each and where every value came from. Pure file I/O, no SQL engine.

pub mod adapter;
pub mod config;
pub mod dbt_import;
pub mod directives;
pub mod discovery;
pub mod effective;
pub mod fingerprint;
pub mod freshness;
pub mod init;
pub mod maintenance;
pub mod sources;
mod targets;
mod toml_error;

pub use adapter::{AdapterKind, AdapterSection, AdapterTarget, NessieSection};
pub use config::{DiffColumnSection, DiffSection, RootConfig, WorkspaceConfig};
pub use directives::{
    strategy_label, AnalysisMode, Directives, IncrementalStrategy, Materialization,
};
pub use discovery::{ModelFile, Overlay, TestFile, TransformRoot, Workspace};
pub use effective::{EffectiveConfig, Origin, Sourced};
pub use maintenance::MaintenanceSection;
pub use sources::{RestTable, SourceDecl, SourceFormat, SourceOrigin};
