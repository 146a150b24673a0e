//! OpenLineage around a `run` or `apply`: the transports start before the run (and receive the
//! renames found against the recorded state), the run's events are queued as it goes, and the
//! queues are drained, within the configured timeout, once the run's report exists.

use phlo_transform_compiler::Compilation;
use phlo_transform_openlineage::{rename_events, Emitter, OpenLineageConfig, RecordedModel};
use phlo_transform_project::Materialization;
use phlo_transform_state::StateStore;

use super::{Paths, MAIN_ENVIRONMENT};

pub struct RunLineage {
    pub config: OpenLineageConfig,
    pub emitter: Emitter,
}

impl RunLineage {
    /// `None` when no transport is configured. Renames are sent first: a model whose `@id`
    /// the state knows under another name.
    pub async fn start(paths: &Paths, c: &Compilation, store: &dyn StateStore) -> Option<Self> {
        let config = OpenLineageConfig::from_env(&c.workspace, &paths.warehouse);
        let emitter = Emitter::start(&config)?;
        // Without the recorded state there is nothing to compare with: no renames, no error.
        let recorded: Vec<RecordedModel> = store
            .materializations(MAIN_ENVIRONMENT)
            .await
            .map(|all| {
                all.into_values()
                    .map(|m| RecordedModel {
                        materialization: Materialization::parse(&m.materialization)
                            .unwrap_or(Materialization::Table),
                        id: m.model_id,
                        name: m.model_name,
                    })
                    .collect()
            })
            .unwrap_or_default();
        for event in rename_events(c, &config, &recorded) {
            emitter.emit(&event);
        }
        Some(RunLineage { config, emitter })
    }
}
