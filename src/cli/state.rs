//! `phlo-transform state runs | show <run> | model <model> | failures | evidence <ref>` (SPEC §77): the state database
//! queried: parse, call `phlo_transform_exec::history`, render.

use clap::Subcommand;
use phlo_transform_exec::history;

use super::render::{fatal, Output};
use super::{open_state_read_only, Paths, EXIT_OK};

#[derive(Subcommand)]
pub enum StateCommand {
    /// Recent runs, newest first: id, status, command, start and end, node counts.
    Runs {
        /// How many runs to list.
        #[arg(long, short = 'n', default_value_t = 20)]
        limit: i64,
    },
    /// One run's nodes with their status, timings and errors.
    Show {
        /// A run id, or a prefix of one that only one run has.
        run_id: String,
    },
    /// One model's materialised versions (one per environment) and its recent results.
    Model {
        /// The model's name (`assay.results`) or its pinned id.
        model: String,
        /// How many runs of history to show.
        #[arg(long, short = 'n', default_value_t = 20)]
        limit: i64,
    },
    /// What commands established about a reference (environment states, branch diffs,
    /// lineage diffs): the evidence `promote` reads, newest first.
    Evidence {
        /// The reference (`dev`, `main`).
        #[arg(value_name = "REF")]
        name: String,
        /// Only this kind: environment, branch_diff or lineage_diff.
        #[arg(long)]
        kind: Option<String>,
    },
    /// The models and tests that failed in the newest runs, newest first, with their errors.
    Failures {
        /// How many runs to read.
        #[arg(long, short = 'n', default_value_t = 20)]
        limit: i64,
    },
}

pub async fn dispatch(paths: &Paths, command: StateCommand, json: bool) -> u8 {
    let store = match open_state_read_only(paths).await {
        Ok(s) => s,
        Err(d) => return fatal(d, json),
    };
    let out = Output::new(json);
    let shown = match command {
        StateCommand::Runs { limit } => {
            history::runs(store.as_ref(), paths.state.display(), limit.max(1))
                .await
                .map(|r| out.report(&r))
        }
        StateCommand::Show { run_id } => history::show(store.as_ref(), &run_id)
            .await
            .map(|r| out.report(&r)),
        StateCommand::Model { model, limit } => {
            history::model(store.as_ref(), &model, limit.max(1))
                .await
                .map(|r| out.report(&r))
        }
        StateCommand::Evidence { name, kind } => {
            history::evidence(store.as_ref(), &name, kind.as_deref())
                .await
                .map(|r| out.report(&r))
        }
        StateCommand::Failures { limit } => history::failures(store.as_ref(), limit.max(1))
            .await
            .map(|r| out.report(&r)),
    };
    match shown {
        Ok(()) => EXIT_OK,
        Err(d) => fatal(d, json),
    }
}
