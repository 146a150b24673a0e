//! Plans as stored by `plan` and read back by `apply` and the run continuations: the stored
//! format (versioned by [`PLAN_FORMAT`]), and whether a stored plan still holds (SPEC §36–40:
//! `apply` executes exactly the reviewed plan or refuses it as stale).

use crate::{Decision, Plan, PLAN_FORMAT};
use phlo_transform_core::diagnostic::codes;
use phlo_transform_core::Diagnostic;
use phlo_transform_state::StateStore;

/// Stores `plan` under its id, in the current format.
pub async fn store_plan(store: &dyn StateStore, plan: &Plan) -> Result<(), Diagnostic> {
    let body = serde_json::to_value(plan).expect("plans serialise");
    store.store_plan(&plan.plan_id, &body).await.map_err(|e| {
        Diagnostic::error(codes::STATE_WRITE_FAILED, e.message)
            .with_help("check that the state database is writable")
    })
}

/// The plan stored as `plan_id`: Y001 when the state cannot be read, else [`read_stored`].
pub async fn load_stored(store: &dyn StateStore, plan_id: &str) -> Result<Plan, Diagnostic> {
    let body = store.load_plan(plan_id).await.map_err(|e| {
        Diagnostic::error(codes::STATE_UNAVAILABLE, e.message).with_help("check the state database")
    })?;
    read_stored(plan_id, body)
}

/// Reads the body the state store holds for `plan_id` (`None`: no such plan). Each way it can
/// fail has its own code, so a changed format never reads as "no stored plan": L003 for no
/// plan, L012 for a plan of another format (one without a format is format 0, from before
/// plans were versioned), L013 for a body of this format that does not parse.
pub fn read_stored(plan_id: &str, body: Option<serde_json::Value>) -> Result<Plan, Diagnostic> {
    let again = "make the plan again with `phlo-transform plan` and apply its id";
    let Some(body) = body else {
        return Err(
            Diagnostic::error(codes::UNKNOWN_PLAN, format!("no stored plan `{plan_id}`"))
                .with_help("`phlo-transform plan` prints the id of the plan it stores"),
        );
    };
    let format = body.get("format").and_then(|f| f.as_u64()).unwrap_or(0);
    if format != u64::from(PLAN_FORMAT) {
        return Err(Diagnostic::error(
            codes::PLAN_FORMAT_MISMATCH,
            format!(
                "stored plan `{plan_id}` is in format {format}, this phlo-transform reads format {PLAN_FORMAT}"
            ),
        )
        .with_help(again));
    }
    serde_json::from_value(body).map_err(|e| {
        Diagnostic::error(
            codes::UNREADABLE_PLAN,
            format!("stored plan `{plan_id}` cannot be read: {e}"),
        )
        .with_help(again)
    })
}

/// Why a stored plan no longer holds, given the plan made now: `None` when it holds (same
/// id), else an L002 listing each model whose decision or versions moved.
pub fn staleness(stored: &Plan, fresh: &Plan) -> Option<Diagnostic> {
    if fresh.plan_id == stored.plan_id {
        return None;
    }
    let short = |v: &Option<String>| {
        v.as_deref()
            .map(|v| v[..12.min(v.len())].to_string())
            .unwrap_or_else(|| "-".into())
    };
    let summary = |d: Decision, v: &Option<String>, p: &Option<String>| {
        format!("{} {} (recorded {})", d.label(), short(v), short(p))
    };
    let mut changes = Vec::new();
    for m in &fresh.models {
        match stored.models.iter().find(|s| s.name == m.name) {
            None => changes.push(format!("{}: new in the workspace", m.name)),
            Some(s)
                if (s.decision, &s.version, &s.previous_version)
                    != (m.decision, &m.version, &m.previous_version) =>
            {
                changes.push(format!(
                    "{}: {} then, {} now",
                    m.name,
                    summary(s.decision, &s.version, &s.previous_version),
                    summary(m.decision, &m.version, &m.previous_version),
                ))
            }
            Some(_) => {}
        }
    }
    for s in &stored.models {
        if !fresh.models.iter().any(|m| m.name == s.name) {
            changes.push(format!("{}: no longer in the workspace", s.name));
        }
    }
    let stale = Diagnostic::error(
        codes::STALE_PLAN,
        format!(
            "plan `{}` is stale: the workspace or its state changed since it was made",
            stored.plan_id
        ),
    )
    .with_help(format!(
        "review the new plan (`phlo-transform plan`) and apply its id (`{}`)",
        fresh.plan_id
    ));
    Some(changes.into_iter().fold(stale, Diagnostic::with_note))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn plan(id: &str) -> Plan {
        serde_json::from_value(serde_json::json!({
            "format": PLAN_FORMAT, "plan_id": id, "created_at": "", "environment": "local",
            "adapter": "local", "summary": {"build": 0, "skip": 0, "cached": 0, "blocked": 0},
            "models": [], "tests": [], "ephemeral": []
        }))
        .unwrap()
    }

    #[test]
    fn a_stored_plan_of_another_format_or_shape_is_an_explicit_error() {
        let ok = serde_json::to_value(plan("p1")).unwrap();
        assert_eq!(read_stored("p1", Some(ok.clone())).unwrap().plan_id, "p1");

        let missing = read_stored("p1", None).unwrap_err();
        assert_eq!(missing.code, codes::UNKNOWN_PLAN);
        assert!(
            missing.message.contains("no stored plan"),
            "{}",
            missing.message
        );

        let mut old = ok.clone();
        old.as_object_mut().unwrap().remove("format");
        let old = read_stored("p1", Some(old)).unwrap_err();
        assert_eq!(old.code, codes::PLAN_FORMAT_MISMATCH);
        assert!(old.message.contains("format 0"), "{}", old.message);

        let mut newer = ok.clone();
        newer["format"] = serde_json::json!(PLAN_FORMAT + 1);
        let newer = read_stored("p1", Some(newer)).unwrap_err();
        assert_eq!(newer.code, codes::PLAN_FORMAT_MISMATCH);
        let says = format!(
            "is in format {}, this phlo-transform reads format {PLAN_FORMAT}",
            PLAN_FORMAT + 1
        );
        assert!(newer.message.contains(&says), "{}", newer.message);

        let mut broken = ok;
        broken["models"] = serde_json::json!("not a list");
        let broken = read_stored("p1", Some(broken)).unwrap_err();
        assert_eq!(broken.code, codes::UNREADABLE_PLAN);
        assert!(
            broken.message.contains("cannot be read"),
            "{}",
            broken.message
        );
    }

    /// Through a real (SQLite) state store: what `plan` stores, `apply` loads; a missing
    /// plan, one another version stored and a damaged body each fail with their own code.
    #[tokio::test]
    async fn stored_plans_round_trip_and_each_failure_has_its_code() {
        let store = phlo_transform_state::SqliteStateStore::in_memory()
            .await
            .unwrap();
        store_plan(&store, &plan("p1")).await.unwrap();
        assert_eq!(load_stored(&store, "p1").await.unwrap().plan_id, "p1");

        let missing = load_stored(&store, "p2").await.unwrap_err();
        assert_eq!(missing.code, codes::UNKNOWN_PLAN);

        let mut newer = serde_json::to_value(plan("p3")).unwrap();
        newer["format"] = serde_json::json!(PLAN_FORMAT + 1);
        store.store_plan("p3", &newer).await.unwrap();
        let newer = load_stored(&store, "p3").await.unwrap_err();
        assert_eq!(newer.code, codes::PLAN_FORMAT_MISMATCH, "{}", newer.message);

        let damaged = serde_json::json!({"format": PLAN_FORMAT, "plan_id": "p4"});
        store.store_plan("p4", &damaged).await.unwrap();
        let damaged = load_stored(&store, "p4").await.unwrap_err();
        assert_eq!(damaged.code, codes::UNREADABLE_PLAN, "{}", damaged.message);
    }

    #[test]
    fn the_same_plan_holds_and_another_is_stale() {
        assert!(staleness(&plan("a"), &plan("a")).is_none());
        let stale = staleness(&plan("a"), &plan("b")).unwrap();
        assert_eq!(stale.code, codes::STALE_PLAN);
        assert!(stale.help.unwrap().contains("`b`"));
    }
}
