//! OpenLineage (https://openlineage.io) for phlo-transform (SPEC §55, §71–73):
//!
//! - [`design_events`]: the design-time document — a JobEvent per model and a DatasetEvent
//!   per source, read off the compilation's `LineageGraph` (openlineage.json,
//!   `lineage --format openlineage`);
//! - [`RunEmitter`]: START and COMPLETE/FAIL RunEvents for every executed model of a run,
//!   children of the phlo run's own job;
//! - [`rename_events`]: models whose `@id` stayed while their name moved;
//! - [`Emitter`]: HTTP and JSON Lines delivery on background tasks, configured by
//!   [`OpenLineageConfig`] (`[openlineage]` in phlo.toml, `OPENLINEAGE__*` variables).

mod artifacts;
mod config;
mod design;
mod events;
pub mod naming;
mod run;
mod transport;

pub use artifacts::{write_compile_artifacts, write_lineage_artifacts};
pub use config::{
    redact_url, OpenLineageConfig, DEFAULT_ENDPOINT, DEFAULT_NAMESPACE, DEFAULT_TIMEOUT_SECONDS,
};
pub use design::{
    description as model_description, design_events, design_events_for, rename_events,
    RecordedModel,
};
pub use events::{PRODUCER, SPEC_URL};
pub use run::{model_run_uuid, parent_run_uuid, RunEmitter, RunLineage};
pub use transport::Emitter;
