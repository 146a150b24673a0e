//! How a command turns the plan it made into the plan it executes: `run --full-refresh`
//! rebuilds, `test` builds nothing, and what compile errors leave of a `run`. One function per
//! rewrite, so the CLI, a daemon and tests take the same decision.

use crate::{Decision, Membership, Plan, PlannedModel, Reason, ReasonKind};
use phlo_transform_project::Materialization;

/// `run --full-refresh`: every selected incremental model is rebuilt in full, changed or not.
pub fn with_full_refresh(mut p: Plan) -> Plan {
    for m in &mut p.models {
        let selected = matches!(m.membership, Membership::Selected | Membership::Expanded);
        if !selected || m.materialization != Materialization::Incremental {
            continue;
        }
        if m.decision == Decision::Skip {
            m.decision = Decision::Build;
            m.reasons.clear();
            p.summary.skip -= 1;
            p.summary.build += 1;
        }
        if m.decision == Decision::Build {
            m.full_rebuild = true;
            m.reasons.insert(
                0,
                Reason::new(
                    ReasonKind::Forced,
                    "full refresh requested (--full-refresh)",
                    None,
                ),
            );
        }
    }
    p
}

/// `test`: the data tests run against the relations that exist, so nothing is built. A model
/// the plan would build is skipped (its relation exists, maybe at an older version), or
/// blocked when its relation is missing: its tests then report blocked instead of failing on
/// a missing table. The reasons are kept; the summary counts follow the decisions.
pub fn for_tests(mut p: Plan) -> Plan {
    for m in &mut p.models {
        if m.decision != Decision::Build {
            continue;
        }
        let missing = m
            .reasons
            .iter()
            .any(|r| r.kind == ReasonKind::MissingRelation);
        p.summary.build -= 1;
        if missing {
            m.decision = Decision::Blocked;
            p.summary.blocked += 1;
        } else {
            m.decision = Decision::Skip;
            p.summary.skip += 1;
        }
    }
    p
}

/// What compile errors leave of a run of a plan (SPEC §63): the models they reach are blocked,
/// the rest of the selection still runs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CompileErrorBlocking {
    /// No planned model is blocked by a compile error.
    None,
    /// Some are: the run goes ahead and exits with the compile-error code.
    Part,
    /// Every planned model is (or nothing is planned): the run is refused, as for a workspace
    /// that does not compile.
    All,
}

/// How compile errors bear on `p`, a plan made over a compilation with errors.
pub fn compile_error_blocking(p: &Plan) -> CompileErrorBlocking {
    if p.models.iter().all(blocked_by_compile_errors) {
        CompileErrorBlocking::All
    } else if p.models.iter().any(blocked_by_compile_errors) {
        CompileErrorBlocking::Part
    } else {
        CompileErrorBlocking::None
    }
}

/// A planned model that cannot build because of compile errors (its own, an upstream's, or a
/// source's).
fn blocked_by_compile_errors(m: &PlannedModel) -> bool {
    m.decision == Decision::Blocked && m.reasons.iter().any(|r| r.kind == ReasonKind::UnknownState)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::PLAN_FORMAT;

    /// A plan of `models`: (name, decision, the kinds of its reasons).
    fn plan(models: &[(&str, Decision, &[ReasonKind])]) -> Plan {
        let mut p: Plan = serde_json::from_value(serde_json::json!({
            "format": PLAN_FORMAT, "plan_id": "p", "created_at": "", "environment": "local",
            "adapter": "local", "summary": {"build": 0, "skip": 0, "cached": 0, "blocked": 0},
            "models": [], "tests": [], "ephemeral": []
        }))
        .unwrap();
        for (name, decision, kinds) in models {
            p.models.push(PlannedModel {
                name: name.to_string(),
                id: name.to_string(),
                path: format!("{name}.sql"),
                decision: *decision,
                materialization: Materialization::Table,
                relation: name.to_string(),
                version: Some("v".into()),
                previous_version: None,
                reasons: kinds.iter().map(|&k| Reason::new(k, "", None)).collect(),
                sql_change: None,
                depends_on: Vec::new(),
                membership: Membership::Selected,
                full_rebuild: false,
                current_as_of: None,
            });
            match decision {
                Decision::Build => p.summary.build += 1,
                Decision::Skip => p.summary.skip += 1,
                Decision::Cached => p.summary.cached += 1,
                Decision::Blocked => p.summary.blocked += 1,
            }
        }
        p
    }

    fn decisions(p: &Plan) -> Vec<Decision> {
        p.models.iter().map(|m| m.decision).collect()
    }

    #[test]
    fn tests_build_nothing_and_a_missing_relation_blocks() {
        let p = for_tests(plan(&[
            ("changed", Decision::Build, &[ReasonKind::SqlSemanticChange]),
            ("missing", Decision::Build, &[ReasonKind::MissingRelation]),
            ("current", Decision::Skip, &[]),
            ("broken", Decision::Blocked, &[ReasonKind::UnknownState]),
        ]));
        assert_eq!(
            decisions(&p),
            [
                Decision::Skip,
                Decision::Blocked,
                Decision::Skip,
                Decision::Blocked
            ]
        );
        assert_eq!(
            (p.summary.build, p.summary.skip, p.summary.blocked),
            (0, 2, 2)
        );
        // The reasons still say why the model is not current.
        assert_eq!(p.models[0].reasons[0].kind, ReasonKind::SqlSemanticChange);
    }

    #[test]
    fn compile_errors_block_none_part_or_all_of_a_plan() {
        let broken = ("broken", Decision::Blocked, &[ReasonKind::UnknownState][..]);
        let fine = (
            "fine",
            Decision::Build,
            &[ReasonKind::SqlSemanticChange][..],
        );
        // Blocked for another reason (an excluded dependency) is not a compile error's doing.
        let held = (
            "held",
            Decision::Blocked,
            &[ReasonKind::SelectedDependency][..],
        );
        assert_eq!(
            compile_error_blocking(&plan(&[fine, held])),
            CompileErrorBlocking::None
        );
        assert_eq!(
            compile_error_blocking(&plan(&[broken, fine])),
            CompileErrorBlocking::Part
        );
        assert_eq!(
            compile_error_blocking(&plan(&[broken])),
            CompileErrorBlocking::All
        );
        // Nothing planned: nothing can run.
        assert_eq!(
            compile_error_blocking(&plan(&[])),
            CompileErrorBlocking::All
        );
    }
}
