//! `explain <model>` (SPEC §80): the per-model companion to `plan`; parse, call
//! `phlo_transform_exec::explain`, render.

use phlo_transform_exec::explain as explanation;

use super::commands::{fatal, resolve_model};
use super::render::Output;
use super::{compile, open_state_read_only, Paths, EXIT_OK, MAIN_ENVIRONMENT};

pub async fn explain(paths: &Paths, name: &str, json: bool) -> u8 {
    let c = match compile(paths) {
        Ok(c) => c,
        Err(d) => return fatal(d, json),
    };
    let i = match resolve_model(c, name) {
        Ok(i) => i,
        Err(d) => return fatal(d, json),
    };
    let mut out = Output::new(json).with_workspace(&c.workspace);
    out.diagnostics(c.diagnostics.iter().cloned());
    if c.has_errors() {
        return out.fail([]);
    }
    let store = match open_state_read_only(paths).await {
        Ok(s) => s,
        Err(d) => return out.fail([d]),
    };
    let binding = match super::bind(paths, c, store.clone()).await {
        Ok(b) => b,
        Err(d) => return out.fail([d]),
    };
    let purpose = phlo_transform_adapter::Purpose::Plan;
    let engine = match super::open_bound_engine(paths, c, binding.as_ref(), purpose).await {
        Ok((engine, warnings)) => {
            out.diagnostics(warnings);
            engine
        }
        Err(d) => return out.fail([d]),
    };
    let explained = explanation::explain(
        c,
        i,
        binding.as_ref(),
        MAIN_ENVIRONMENT,
        engine.as_ref(),
        store.as_ref(),
    )
    .await;
    match explained {
        Ok(e) => {
            out.report(&e);
            EXIT_OK
        }
        Err(diags) => out.fail(diags),
    }
}
