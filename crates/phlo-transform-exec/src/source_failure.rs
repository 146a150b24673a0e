//! A model that failed while reading a source whose data changed after the run checked it
//! (SPEC §38: a run reads sources as they were when it compiled). The engine's error names
//! the source by its internal relation and the file by an object-store path; the failure is
//! reported as the R003 `check` would give for the source now, naming the source, its file
//! and what to do.

use phlo_transform_compiler::{Compilation, SourceDrift};
use phlo_transform_events::Category;
use phlo_transform_events::ErrorInfo;
use phlo_transform_project::Materialization;
use std::collections::BTreeSet;

/// The sources model `index` reads when it runs: its own, and those of the views and
/// ephemeral models it reads (which are planned again, over the sources, when it runs).
fn sources_read(c: &Compilation, index: usize) -> BTreeSet<&str> {
    let mut sources = BTreeSet::new();
    let mut stack = vec![index];
    let mut seen = BTreeSet::new();
    while let Some(i) = stack.pop() {
        if !seen.insert(i) {
            continue;
        }
        let m = &c.models[i];
        sources.extend(m.sources.iter().map(String::as_str));
        stack.extend(m.upstream.iter().copied().filter(|&u| {
            matches!(
                c.models[u].materialization,
                Materialization::View | Materialization::Ephemeral
            )
        }));
    }
    sources
}

/// `failure` of model `name`, or R003 for the first source it reads that no longer reads as
/// the run recorded it. Timeouts and cancellations are not the data's doing and stay as they
/// are.
pub(crate) fn explain(c: &Compilation, name: &str, failure: ErrorInfo) -> ErrorInfo {
    if matches!(failure.category, Category::Timeout | Category::Cancelled) {
        return failure;
    }
    let Some(index) = c.model_index(name) else {
        return failure;
    };
    let Some(drift) = sources_read(c, index)
        .into_iter()
        .find_map(|s| c.catalog.recheck(&c.workspace, s))
    else {
        return failure;
    };
    let (d, message) = match drift {
        SourceDrift::Unreadable(d) => {
            let message = d.message.clone();
            (d, message)
        }
        SourceDrift::Changed(d) => {
            let message = format!("{}; reading it failed: {}", d.message, failure.message);
            (d, message)
        }
    };
    ErrorInfo {
        code: d.code.0.into(),
        category: Category::Adapter,
        message,
        retryable: false,
        file: d.file,
        help: d.help,
        ..failure
    }
}
