//! Plans as stored by `plan` and read back by `apply`: the stored format, and whether a stored
//! plan still holds (SPEC §36–40: `apply` executes exactly
//! the reviewed plan or refuses it as stale).

use crate::{Decision, Plan, PLAN_FORMAT};
use phlo_transform_core::diagnostic::codes;
use phlo_transform_core::Diagnostic;

/// Reads the body the state store holds for `plan_id` (`None`: no such plan). A body that does
/// not parse, or is of another format, is an explicit L003, never "no stored plan".
pub fn read_stored(plan_id: &str, body: Option<serde_json::Value>) -> Result<Plan, Diagnostic> {
    let unknown = |message: String| {
        Diagnostic::error(codes::UNKNOWN_PLAN, message)
            .with_help("make the plan again with `phlo-transform plan` and apply its id")
    };
    let Some(body) = body else {
        return Err(
            Diagnostic::error(codes::UNKNOWN_PLAN, format!("no stored plan `{plan_id}`"))
                .with_help("`phlo-transform plan` prints the id of the plan it stores"),
        );
    };
    let format = body.get("format").and_then(|f| f.as_u64()).unwrap_or(0);
    if format != u64::from(PLAN_FORMAT) {
        return Err(unknown(format!(
            "stored plan `{plan_id}` is in format {format}, this phlo-transform reads format {PLAN_FORMAT}"
        )));
    }
    serde_json::from_value(body)
        .map_err(|e| unknown(format!("stored plan `{plan_id}` cannot be read: {e}")))
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
        assert!(
            missing.message.contains("no stored plan"),
            "{}",
            missing.message
        );

        let mut old = ok.clone();
        old.as_object_mut().unwrap().remove("format");
        let old = read_stored("p1", Some(old)).unwrap_err();
        assert_eq!(old.code, codes::UNKNOWN_PLAN);
        assert!(old.message.contains("format 0"), "{}", old.message);

        let mut broken = ok;
        broken["models"] = serde_json::json!("not a list");
        let broken = read_stored("p1", Some(broken)).unwrap_err();
        assert!(
            broken.message.contains("cannot be read"),
            "{}",
            broken.message
        );
    }

    #[test]
    fn the_same_plan_holds_and_another_is_stale() {
        assert!(staleness(&plan("a"), &plan("a")).is_none());
        let stale = staleness(&plan("a"), &plan("b")).unwrap();
        assert_eq!(stale.code, codes::STALE_PLAN);
        assert!(stale.help.unwrap().contains("`b`"));
    }
}
