//! `ref`, `promote` and `rollback`: parse, call `phlo_transform_exec::environments`, render.

use clap::Subcommand;
use phlo_transform_core::diagnostic::codes;
use phlo_transform_core::Diagnostic;
use phlo_transform_exec::environments::promote::Promotion;
use phlo_transform_exec::environments::Environments;
use phlo_transform_state::RefRecord;
use serde_json::json;

use super::commands::fatal;
use super::{open_state, Paths, EXIT_FAILURES, EXIT_OK};

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
    Ok(Environments::new(
        open_state(paths).await?,
        &paths.warehouse,
    ))
}

fn summary(r: &RefRecord) -> serde_json::Value {
    json!({
        "name": r.name,
        "hash": r.hash,
        "created_from": r.created_from.as_ref().map(|f| json!({"ref": f.reference, "hash": f.hash})),
        "environment": r.environment,
        "models": r.pointers.len(),
        "updated_at": r.updated_at,
    })
}

fn detail(paths: &Paths, r: &RefRecord, events: serde_json::Value) -> serde_json::Value {
    let pointers: Vec<_> = r
        .pointers
        .values()
        .map(|p| {
            json!({
                "model": p.model_name,
                "kind": p.kind,
                "location": p.location,
                "path": paths.warehouse.join(&p.location),
                "delta_version": p.delta_version,
                "identity": p.identity,
                "built_in": p.built_in,
                "version": p.record.version,
                "run_id": p.record.run_id,
            })
        })
        .collect();
    let mut out = summary(r);
    out["pointers"] = json!(pointers);
    out["run"] = json!(r.run);
    out["events"] = events;
    out
}

pub async fn reference(paths: &Paths, command: RefCommand, json_out: bool) -> u8 {
    let envs = match environments(paths).await {
        Ok(e) => e,
        Err(d) => return fatal(d, json_out),
    };
    let shown = match command {
        RefCommand::List => envs.list().await.map(|refs| {
            if json_out {
                json!({ "refs": refs.iter().map(summary).collect::<Vec<_>>() })
            } else {
                for r in &refs {
                    let from = r
                        .created_from
                        .as_ref()
                        .map(|f| format!("  from {}@{}", f.reference, f.hash))
                        .unwrap_or_default();
                    println!(
                        "{:<24} {}  {} model(s){from}",
                        r.name,
                        r.hash,
                        r.pointers.len()
                    );
                }
                serde_json::Value::Null
            }
        }),
        RefCommand::Show { name } => {
            let name = name
                .as_deref()
                .unwrap_or(phlo_transform_exec::environments::MAIN);
            let events = envs.events(name).await;
            match (envs.get(name).await, events) {
                (Ok(r), Ok(events)) => {
                    let doc = detail(paths, &r, json!(events));
                    if !json_out {
                        print_ref(&doc);
                    }
                    Ok(doc)
                }
                (Err(d), _) | (_, Err(d)) => Err(d),
            }
        }
        RefCommand::Create { name, from } => envs.create(&name, &from).await.map(|r| {
            if !json_out {
                println!(
                    "Created `{}` from `{from}` at {} ({} model(s) shared)",
                    r.name,
                    r.hash,
                    r.pointers.len()
                );
            }
            detail(paths, &r, json!([]))
        }),
        RefCommand::Delete { name } => envs.delete(&name).await.map(|r| {
            if !json_out {
                println!("Deleted `{}` (was at {})", r.name, r.hash);
            }
            json!({ "deleted": r.name, "hash": r.hash })
        }),
    };
    match shown {
        Ok(doc) => {
            if json_out {
                println!("{doc}");
            }
            EXIT_OK
        }
        Err(d) => fatal(d, json_out),
    }
}

fn print_ref(doc: &serde_json::Value) {
    println!("Reference:   {}", doc["name"].as_str().unwrap_or_default());
    println!("Hash:        {}", doc["hash"].as_str().unwrap_or_default());
    println!(
        "Environment: {}",
        doc["environment"].as_str().unwrap_or_default()
    );
    if let Some(f) = doc["created_from"].as_object() {
        println!(
            "Created from: {}@{}",
            f["ref"].as_str().unwrap_or_default(),
            f["hash"].as_str().unwrap_or_default()
        );
    }
    if let Some(run) = doc["run"].as_object() {
        println!(
            "Last run:    {} (at hash {})",
            run["run_id"].as_str().unwrap_or_default(),
            run["hash"].as_str().unwrap_or_default()
        );
    }
    println!("Models:");
    for p in doc["pointers"].as_array().into_iter().flatten() {
        let version = p["delta_version"]
            .as_i64()
            .map(|v| format!(" @ v{v}"))
            .unwrap_or_default();
        println!(
            "  {:<32} {}{version}  (built in {})",
            p["model"].as_str().unwrap_or_default(),
            p["location"].as_str().unwrap_or_default(),
            p["built_in"].as_str().unwrap_or_default()
        );
    }
    for e in doc["events"].as_array().into_iter().flatten() {
        println!(
            "{} {} at {}",
            e["kind"].as_str().unwrap_or_default(),
            e["event_id"].as_str().unwrap_or_default(),
            e["at"].as_str().unwrap_or_default()
        );
    }
}

pub async fn promote(paths: &Paths, from: &str, to: &str, check: bool, json_out: bool) -> u8 {
    let envs = match environments(paths).await {
        Ok(e) => e,
        Err(d) => return fatal(d, json_out),
    };
    let p = match envs.promote(from, to, check).await {
        Ok(p) => p,
        Err(d) => return fatal(d, json_out),
    };
    if json_out {
        println!(
            "{}",
            serde_json::to_string(&p).expect("promotions serialise")
        );
    } else {
        print_promotion(&p);
    }
    if p.gates_passed() {
        EXIT_OK
    } else {
        if !json_out {
            let failed: Vec<&str> = p
                .gates
                .iter()
                .filter(|g| !g.passed)
                .map(|g| g.name)
                .collect();
            super::render::diagnostics(
                &phlo_transform_core::Diagnostics(vec![Diagnostic::error(
                    codes::PROMOTION_BLOCKED,
                    format!(
                        "promotion of `{from}` into `{to}` blocked by gate(s): {}",
                        failed.join(", ")
                    ),
                )
                .with_help("read each failed gate's detail above")]),
                None,
                false,
            );
        }
        EXIT_FAILURES
    }
}

fn print_promotion(p: &Promotion) {
    println!(
        "Promote {}@{} → {}@{}",
        p.from, p.from_hash, p.to, p.to_hash
    );
    for g in &p.gates {
        let mark = if g.passed { "PASS" } else { "FAIL" };
        println!("  {mark}  {:<10} {}", g.name, g.detail);
    }
    match (&p.promotion_id, p.check) {
        (Some(id), _) => println!(
            "Published: `{}` now holds `{}`'s tables (promotion {id})",
            p.to, p.from
        ),
        (None, true) => println!("Checked only (--check): nothing published"),
        (None, false) => println!("Nothing published"),
    }
}

pub async fn rollback(paths: &Paths, model: Option<&str>, to: &str, json_out: bool) -> u8 {
    let envs = match environments(paths).await {
        Ok(e) => e,
        Err(d) => return fatal(d, json_out),
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
            if json_out {
                println!(
                    "{}",
                    serde_json::to_string(&r).expect("rollbacks serialise")
                );
            } else {
                let what = r
                    .model
                    .as_deref()
                    .map(|m| format!("`{m}` in "))
                    .unwrap_or_default();
                println!(
                    "Rolled back {what}`{}` to {}: {} → {} (rollback {})",
                    r.reference, r.to, r.hash_before, r.hash_after, r.rollback_id
                );
            }
            EXIT_OK
        }
        Err(d) => fatal(d, json_out),
    }
}
