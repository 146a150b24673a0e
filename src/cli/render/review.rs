//! `review`: the library's `ReviewReport` as a pull-request comment in Markdown — the headline
//! counts of SPEC §109 first, then one collapsible `<details>` section per part. The schema
//! changes and the lineage delta are shown as `plan` and `lineage --diff` print them.

use super::Report;
use phlo_transform_exec::review::{
    DataReview, Headline, ModelChange, ModelReview, PromotionReview, ReviewReport, TestReview,
};
use phlo_transform_plan::schema_change::Severity;
use serde::Serialize;
use std::fmt::Write;

impl Report for ReviewReport {
    fn human(&self) -> String {
        let mut out = String::new();
        let b = &self.lineage.base;
        let _ = writeln!(out, "## Transform changes\n");
        let candidate = self
            .candidate
            .as_deref()
            .map(|c| format!("; data, tests and gates of environment `{c}`"))
            .unwrap_or_default();
        let _ = writeln!(
            out,
            "Against `{}` (merge-base `{}`, HEAD `{}`{}); planned against the recorded state of `{}`{candidate}.\n",
            b.requested_ref,
            short(&b.commit),
            short(&b.head),
            if b.worktree_dirty { ", work tree with changes" } else { "" },
            self.planned_against,
        );
        headline(&mut out, &self.headline, self.promotion.as_ref());
        if self.compile_errors > 0 {
            let _ = writeln!(
                out,
                "\n**{} compile error(s)**: the models they reach are blocked (see Models).",
                self.compile_errors
            );
        }
        let breaking: Vec<String> = self
            .schema_changes
            .iter()
            .flat_map(|s| {
                s.changes
                    .iter()
                    .filter(|ch| ch.severity == Severity::Breaking)
                    .map(move |ch| {
                        let readers: Vec<&str> =
                            s.downstream.iter().map(|a| a.model.as_str()).collect();
                        let read = if readers.is_empty() {
                            String::new()
                        } else {
                            format!(", read by {}", code_list(&readers))
                        };
                        format!("`{}.{}` ({}{read})", s.model, ch.column, ch.rule)
                    })
            })
            .collect();
        if !breaking.is_empty() {
            let _ = writeln!(out, "\n**Breaking:** {}", breaking.join("; "));
        }
        models(&mut out, &self.models);
        if !self.schema_changes.is_empty() {
            details(
                &mut out,
                &format!("Schema changes ({})", self.schema_changes.len()),
                &fenced(super::schema_changes(&self.schema_changes).trim_start()),
            );
        }
        let lineage = if self.lineage.diff.is_empty() {
            "No lineage changes.\n".to_string()
        } else {
            fenced(
                self.lineage
                    .human()
                    .split_once('\n')
                    .map_or("", |(_, rest)| rest)
                    .trim_start(),
            )
        };
        details(&mut out, "Lineage", &lineage);
        data(&mut out, &self.data);
        tests(&mut out, &self.tests);
        if let Some(p) = &self.promotion {
            promotion(&mut out, p);
        }
        if !self.files.is_empty() {
            let mut body = String::from("| File | Status | Effect |\n|---|---|---|\n");
            for f in &self.files {
                let _ = writeln!(
                    body,
                    "| `{}` | {} | {} |",
                    f.path,
                    f.status,
                    cell(&f.effect)
                );
            }
            details(&mut out, &format!("Files ({})", self.files.len()), &body);
        }
        out
    }
}

/// A unit variant's JSON name (`semantic`, `inferred`), the label the JSON report uses.
fn label(value: &impl Serialize) -> String {
    match serde_json::to_value(value) {
        Ok(serde_json::Value::String(s)) => s,
        _ => String::new(),
    }
}

fn short(commit: &str) -> &str {
    &commit[..commit.len().min(12)]
}

fn code_list(names: &[&str]) -> String {
    names
        .iter()
        .map(|n| format!("`{n}`"))
        .collect::<Vec<_>>()
        .join(", ")
}

/// Text for one table cell: pipes escaped, one line.
fn cell(text: &str) -> String {
    text.replace('|', "\\|").replace('\n', " ")
}

fn fenced(text: &str) -> String {
    format!("```text\n{}\n```\n", text.trim_end())
}

fn details(out: &mut String, summary: &str, body: &str) {
    let _ = writeln!(
        out,
        "\n<details><summary>{summary}</summary>\n\n{}\n</details>",
        body.trim_end()
    );
}

fn plural(n: impl Into<u64>, one: &str, many: &str) -> String {
    let n = n.into();
    format!("{n} {}", if n == 1 { one } else { many })
}

/// SPEC §109: one column per part, its counts beneath.
fn headline(out: &mut String, h: &Headline, promotion: Option<&PromotionReview>) {
    let models = [
        format!("{} changed", h.models_changed),
        format!("{} downstream rebuilt", h.downstream_rebuilt),
        format!("{} without semantic change", h.no_semantic_change),
    ]
    .into_iter()
    .chain((h.models_removed > 0).then(|| format!("{} removed", h.models_removed)))
    .chain((h.blocked > 0).then(|| format!("{} blocked", h.blocked)))
    .collect::<Vec<_>>();
    let schema = [
        format!("+{}", plural(h.columns_added as u64, "column", "columns")),
        format!("-{}", plural(h.columns_removed as u64, "column", "columns")),
        format!("~{}", plural(h.columns_changed as u64, "column", "columns")),
        plural(
            h.breaking_changes as u64,
            "breaking change",
            "breaking changes",
        ),
    ];
    let mut data = vec![
        format!("+{}", plural(h.rows_added, "row", "rows")),
        format!("-{}", plural(h.rows_removed, "row", "rows")),
        plural(h.records_modified, "record modified", "records modified"),
        format!("{} diffed, {} not", h.models_diffed, h.models_not_diffed),
    ];
    if h.diff_policy_violations > 0 {
        data.push(plural(
            h.diff_policy_violations as u64,
            "policy violation",
            "policy violations",
        ));
    }
    let tests = [
        format!("{} passed", h.tests_passed),
        format!("{} failed", h.tests_failed),
        format!("{} not run at this version", h.tests_not_run),
    ];
    let mut heads = vec!["Models", "Schema", "Data", "Tests"];
    let mut columns = vec![
        models.join("<br>"),
        schema.join("<br>"),
        data.join("<br>"),
        tests.join("<br>"),
    ];
    if let Some(p) = promotion {
        let failed = p.gates.iter().filter(|g| !g.passed).count();
        heads.push("Promotion");
        columns.push(format!(
            "{} into `{}`<br>{} of {} gates passed",
            if p.passed { "safe" } else { "blocked" },
            p.to,
            p.gates.len() - failed,
            p.gates.len()
        ));
    }
    let _ = writeln!(out, "| {} |", heads.join(" | "));
    let _ = writeln!(out, "|{}", "---|".repeat(heads.len()));
    let _ = writeln!(out, "| {} |", columns.join(" | "));
}

fn models(out: &mut String, models: &[ModelReview]) {
    if models.is_empty() {
        details(out, "Models (0)", "No model changes.");
        return;
    }
    let mut body = String::from("| Model | Change | Plan | Why |\n|---|---|---|---|\n");
    for m in models {
        let change = match m.change {
            ModelChange::Changed => "changed",
            ModelChange::Downstream => "downstream",
            ModelChange::NoSemanticChange => "no semantic change",
            ModelChange::Removed => "removed",
        };
        let change = match (m.change, m.sql_change) {
            (ModelChange::Changed, Some(sql)) => format!("{change} (SQL: {})", label(&sql)),
            _ => change.to_string(),
        };
        let decision = match (m.decision, m.materialization) {
            (Some(d), Some(mat)) => format!("{} {mat}", d.label()),
            (None, _) => "—".into(),
            (Some(d), None) => d.label().into(),
        };
        let why: Vec<String> = m
            .causes
            .iter()
            .chain(m.reasons.iter().map(|r| &r.detail))
            .map(|w| cell(w))
            .collect();
        let _ = writeln!(
            body,
            "| `{}` | {change} | {decision} | {} |",
            m.name,
            why.join("<br>")
        );
    }
    details(out, &format!("Models ({})", models.len()), &body);
}

fn data(out: &mut String, data: &[DataReview]) {
    if data.is_empty() {
        details(out, "Data (0)", "No table model to diff.");
        return;
    }
    let mut body = String::from(
        "| Model | Key | Rows (base → candidate) | Added | Removed | Modified | Changed columns | Policy |\n|---|---|---|---|---|---|---|---|\n",
    );
    let mut skipped = String::new();
    for d in data {
        let Some(s) = &d.summary else {
            let code = d
                .code
                .as_deref()
                .map(|c| format!("{c}: "))
                .unwrap_or_default();
            let _ = writeln!(
                skipped,
                "- `{}` not diffed: {code}{}",
                d.model,
                cell(d.reason.as_deref().unwrap_or(""))
            );
            continue;
        };
        let key = if s.key.is_empty() {
            "none".to_string()
        } else {
            format!("`{}` ({})", s.key.join(", "), label(&s.key_source))
        };
        let records = |f: fn(&phlo_transform_diff::Records) -> u64| {
            s.records
                .as_ref()
                .map(|r| f(r).to_string())
                .unwrap_or_else(|| "—".into())
        };
        let mut columns: Vec<String> = s
            .changed_columns
            .iter()
            .map(|c| format!("`{}` {}", c.column, c.values))
            .collect();
        columns.extend(
            s.schema
                .removed
                .iter()
                .map(|c| format!("`{}` removed", c.name)),
        );
        columns.extend(s.schema.added.iter().map(|c| format!("`{}` added", c.name)));
        columns.extend(
            s.schema
                .retyped
                .iter()
                .map(|c| format!("`{}` {} → {}", c.name, c.base, c.candidate)),
        );
        let policy = if s.policy_passed {
            "passed".to_string()
        } else {
            cell(&s.violations.join("; "))
        };
        let _ = writeln!(
            body,
            "| `{}` | {key} | {} → {} | {} | {} | {} | {} | {policy} |",
            d.model,
            s.rows.base,
            s.rows.candidate,
            records(|r| r.added),
            records(|r| r.removed),
            records(|r| r.modified),
            if columns.is_empty() {
                "—".into()
            } else {
                columns.join(", ")
            },
        );
    }
    if !skipped.is_empty() {
        body.push('\n');
        body.push_str(&skipped);
    }
    details(out, &format!("Data ({})", data.len()), &body);
}

fn tests(out: &mut String, tests: &[TestReview]) {
    if tests.is_empty() {
        details(out, "Tests (0)", "No tests.");
        return;
    }
    let mut body = String::from("| Test | Models | Result |\n|---|---|---|\n");
    for t in tests {
        let result = match (t.status.as_str(), t.current) {
            ("not_run", _) => "not run".to_string(),
            (status, true) => status.to_string(),
            (status, false) => format!("not run at this version (last: {status})"),
        };
        let targets: Vec<&str> = t.targets.iter().map(String::as_str).collect();
        let _ = writeln!(
            body,
            "| `{}` | {} | {result} |",
            t.name,
            code_list(&targets)
        );
    }
    details(out, &format!("Tests ({})", tests.len()), &body);
}

fn promotion(out: &mut String, p: &PromotionReview) {
    let mut body = format!(
        "`promote {} --to {} --check`:\n\n| Gate | Passed | Detail |\n|---|---|---|\n",
        p.from, p.to
    );
    for g in &p.gates {
        let _ = writeln!(
            body,
            "| {} | {} | {} |",
            g.name,
            if g.passed { "yes" } else { "**no**" },
            cell(&g.detail)
        );
    }
    details(out, "Promotion gates", &body);
}
