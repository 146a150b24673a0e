//! `ref`, `promote` and `rollback`: parse, call `phlo_transform_exec::environments`, render.

use clap::Subcommand;
use phlo_transform_core::diagnostic::codes;
use phlo_transform_core::Diagnostic;
use phlo_transform_exec::environments::promote::PromoteOptions;
use phlo_transform_exec::environments::report::{RefCreated, RefDeleted, RefDetail};
use phlo_transform_exec::environments::Environments;

use super::render::{fatal, Output};
use super::{Paths, EXIT_FAILURES, EXIT_OK};

#[derive(Subcommand)]
pub enum RefCommand {
    /// Every environment with its hash and where it was created from.
    List,
    /// One environment: its pointers (model → table at a version), last run and promotions.
    Show {
        /// The reference (default: main).
        name: Option<String>,
    },
    /// A new candidate environment holding its base's tables (nothing is copied).
    Create {
        name: String,
        /// The base reference.
        #[arg(long, value_name = "REF", default_value = "main")]
        from: String,
    },
    /// Delete a candidate environment and the tables only it points at (never main).
    Delete { name: String },
}

async fn environments(paths: &Paths) -> Result<Environments, Diagnostic> {
    paths.target().environments().await
}

pub async fn reference(paths: &Paths, command: RefCommand, json: bool) -> u8 {
    let envs = match environments(paths).await {
        Ok(e) => e,
        Err(d) => return fatal(d, json),
    };
    let out = Output::new(json);
    let shown = match command {
        RefCommand::List => envs.list_report().await.map(|r| out.report(&r)),
        RefCommand::Show { name } => {
            let name = name
                .as_deref()
                .unwrap_or(phlo_transform_exec::environments::MAIN);
            envs.detail_report(name, &paths.warehouse)
                .await
                .map(|r| out.report(&r))
        }
        RefCommand::Create { name, from } => envs.create(&name, &from).await.map(|r| {
            out.report(&RefCreated {
                detail: RefDetail::new(
                    &r,
                    &paths.warehouse,
                    Vec::new(),
                    envs.branch_and_catalog(&r.name),
                ),
                from,
            })
        }),
        RefCommand::Delete { name } => envs.delete(&name).await.map(|r| {
            out.report(&RefDeleted {
                deleted: r.name,
                hash: r.hash,
            })
        }),
    };
    match shown {
        Ok(()) => EXIT_OK,
        Err(d) => fatal(d, json),
    }
}

pub async fn promote(
    paths: &Paths,
    from: &str,
    to: &str,
    options: PromoteOptions,
    json: bool,
) -> u8 {
    let envs = match environments(paths).await {
        Ok(e) => e,
        Err(d) => return fatal(d, json),
    };
    let p = match envs.promote(from, to, options).await {
        Ok(p) => p,
        Err(d) => return fatal(d, json),
    };
    let mut out = Output::new(json);
    let Some(blocked) = p.blocked() else {
        out.report(&p);
        return EXIT_OK;
    };
    out.diagnostics([blocked]);
    out.report(&p);
    EXIT_FAILURES
}

pub async fn rollback(paths: &Paths, model: Option<&str>, to: &str, json: bool) -> u8 {
    let envs = match environments(paths).await {
        Ok(e) => e,
        Err(d) => return fatal(d, json),
    };
    let reference = paths
        .reference
        .as_deref()
        .unwrap_or(phlo_transform_exec::environments::MAIN);
    let done = match model {
        None => envs.rollback_ref(reference, to).await,
        Some(model) => match to.parse::<i64>() {
            Ok(version) if version >= 0 => envs.rollback_model(reference, model, version).await,
            _ => Err(Diagnostic::error(
                codes::ROLLBACK_VERSION_MISSING,
                format!("`{to}` is not a Delta version number"),
            )
            .with_help("pass the table version to read, such as `--to 3`")),
        },
    };
    match done {
        Ok(r) => {
            Output::new(json).report(&r);
            EXIT_OK
        }
        Err(d) => fatal(d, json),
    }
}
