//! The diff report: one serialisable value (the `--json` document) and its text rendering
//! (SPEC §52's layout: Rows, Records, Changed values).

use phlo_transform_core::Diagnostic;
use serde::Serialize;
use serde_json::{Map, Value};
use std::fmt::Write;

use crate::aggregate::ColumnAggregates;
use crate::keyed::{Duplicates, RecordSamples, Records};
use crate::options::Strategy;
use crate::policy::PolicyResult;
use crate::schema::SchemaDiff;

/// Where the key came from.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum KeySource {
    /// `--key`.
    Option,
    /// The model's `@key`.
    Model,
    /// The plan's grain (see `infer`).
    Inferred,
    /// No key: counts and aggregates only.
    None,
}

#[derive(Clone, Debug, Serialize)]
pub struct SideReport {
    /// `base` or `candidate`.
    pub label: String,
    /// What was read, e.g. `assay.results as last materialised (Delta version 3)`.
    pub description: String,
}

#[derive(Clone, Debug, Default, Serialize)]
pub struct RowCounts {
    pub base: u64,
    pub candidate: u64,
    pub delta: i64,
}

#[derive(Clone, Debug, Serialize)]
pub struct PartitionSummary {
    pub partitions: usize,
    /// Partitions whose count or checksum differed, compared row by row.
    pub compared: usize,
}

#[derive(Clone, Debug, Serialize)]
pub struct SampleSummary {
    pub fraction: f64,
    pub base_rows: u64,
    pub candidate_rows: u64,
}

#[derive(Clone, Debug, Serialize)]
pub struct DiffReport {
    pub model: String,
    pub base: SideReport,
    pub candidate: SideReport,
    pub key: Vec<String>,
    pub key_inferred: bool,
    pub key_source: KeySource,
    /// For an inferred key: what in the query makes it unique.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub key_from: Option<String>,
    pub strategy: Strategy,
    /// Why this strategy (requested, keyless, large table, …).
    pub strategy_reason: String,
    pub rows: RowCounts,
    /// Added/removed/modified/unchanged; `null` when the strategy does not match rows
    /// (keyless, aggregate). Under `sampled`, counts within the sample.
    pub records: Option<Records>,
    /// Per compared column: values that differ between matched rows.
    pub changed_values: Map<String, Value>,
    pub schema: SchemaDiff,
    pub duplicates: Option<Duplicates>,
    pub samples: Option<RecordSamples>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub aggregates: Option<Vec<ColumnAggregates>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub partitions: Option<PartitionSummary>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub sample: Option<SampleSummary>,
    pub policy: PolicyResult,
    /// Non-fatal findings (duplicate keys, columns not compared).
    pub warnings: Vec<Diagnostic>,
    /// Where the differing rows were written (`--output`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub output: Option<String>,
}

impl DiffReport {
    /// True when nothing differs that the strategy measured.
    pub fn identical(&self) -> bool {
        self.rows.delta == 0
            && self.schema.is_empty()
            && self
                .records
                .as_ref()
                .is_none_or(|r| r.added + r.removed + r.modified == 0)
            && self
                .aggregates
                .as_ref()
                .is_none_or(|a| a.iter().all(|c| c.differs.is_empty()))
    }

    /// The terminal rendering.
    pub fn render_text(&self) -> String {
        let mut out = String::new();
        let key = match self.key_source {
            KeySource::None => "no key".to_string(),
            KeySource::Option => format!("key {}", self.key.join(", ")),
            KeySource::Model => format!("key {} (@key)", self.key.join(", ")),
            KeySource::Inferred => format!(
                "key {} (inferred from {})",
                self.key.join(", "),
                self.key_from.as_deref().unwrap_or("the plan")
            ),
        };
        let _ = writeln!(out, "{}", self.model);
        let _ = writeln!(out, "  base       {}", self.base.description);
        let _ = writeln!(out, "  candidate  {}", self.candidate.description);
        let _ = writeln!(
            out,
            "  {key}; strategy {} ({})",
            self.strategy.as_str(),
            self.strategy_reason
        );
        let width = [self.rows.base, self.rows.candidate]
            .iter()
            .map(|n| group(*n).len())
            .max()
            .unwrap_or(1)
            .max(signed(self.rows.delta).len());
        let _ = writeln!(out, "\nRows");
        let _ = writeln!(out, "  base       {:>width$}", group(self.rows.base));
        let _ = writeln!(out, "  candidate  {:>width$}", group(self.rows.candidate));
        let _ = writeln!(out, "  delta      {:>width$}", signed(self.rows.delta));
        if let Some(r) = &self.records {
            let title = if self.sample.is_some() {
                "Records (in the sample)"
            } else {
                "Records"
            };
            let rows = [
                ("added", r.added),
                ("removed", r.removed),
                ("modified", r.modified),
                ("unchanged", r.unchanged),
            ];
            let w = rows.iter().map(|(_, n)| group(*n).len()).max().unwrap_or(1);
            let _ = writeln!(out, "\n{title}");
            for (label, n) in rows {
                let _ = writeln!(out, "  {label:<10} {:>w$}", group(n));
            }
        }
        if !self.changed_values.is_empty() {
            let _ = writeln!(out, "\nChanged values");
            let cw = self
                .changed_values
                .keys()
                .map(|k| k.len())
                .max()
                .unwrap_or(0);
            let nw = self
                .changed_values
                .values()
                .map(|v| group(v.as_u64().unwrap_or(0)).len())
                .max()
                .unwrap_or(1);
            for (column, n) in &self.changed_values {
                let _ = writeln!(
                    out,
                    "  {column:<cw$}  {:>nw$}",
                    group(n.as_u64().unwrap_or(0))
                );
            }
        }
        if let Some(d) = self.duplicates.as_ref().filter(|d| d.any()) {
            let _ = writeln!(out, "\nDuplicate keys (not compared)");
            let _ = writeln!(
                out,
                "  base       {} keys, {} rows",
                group(d.base.keys),
                group(d.base.rows)
            );
            let _ = writeln!(
                out,
                "  candidate  {} keys, {} rows",
                group(d.candidate.keys),
                group(d.candidate.rows)
            );
            for s in &d.samples {
                let _ = writeln!(
                    out,
                    "    {}  base {} × candidate {}",
                    compact(&s["key"]),
                    s["base_rows"],
                    s["candidate_rows"]
                );
            }
        }
        if !self.schema.is_empty() {
            let _ = writeln!(out, "\nSchema");
            for c in &self.schema.added {
                let _ = writeln!(out, "  + {} {}", c.name, c.data_type);
            }
            for c in &self.schema.removed {
                let _ = writeln!(out, "  - {} {}", c.name, c.data_type);
            }
            for c in &self.schema.retyped {
                let _ = writeln!(out, "  ~ {} {} → {}", c.name, c.base, c.candidate);
            }
            for c in &self.schema.nullability {
                let null = |n: bool| if n { "nullable" } else { "not null" };
                let _ = writeln!(
                    out,
                    "  ~ {} {} → {}",
                    c.name,
                    null(c.base),
                    null(c.candidate)
                );
            }
            for r in &self.schema.renamed {
                let _ = writeln!(out, "  = {} compared as {}", r.candidate, r.base);
            }
        }
        if let Some(aggs) = &self.aggregates {
            let _ = writeln!(out, "\nAggregates");
            for a in aggs {
                if a.differs.is_empty() {
                    let _ = writeln!(out, "  {}  same", a.column);
                    continue;
                }
                let _ = writeln!(out, "  {}  differs in {}", a.column, a.differs.join(", "));
                let b = serde_json::to_value(&a.base).unwrap_or_default();
                let c = serde_json::to_value(&a.candidate).unwrap_or_default();
                for stat in &a.differs {
                    let _ = writeln!(
                        out,
                        "    {stat}: {} → {}",
                        compact(&b[*stat]),
                        compact(&c[*stat])
                    );
                }
            }
        }
        if let Some(p) = &self.partitions {
            let _ = writeln!(
                out,
                "\nPartitions: {} of {} differed and were compared row by row",
                p.compared, p.partitions
            );
        }
        if let Some(s) = &self.sample {
            let _ = writeln!(
                out,
                "\nSample: {:.2}% of keys ({} base and {} candidate rows)",
                s.fraction * 100.0,
                group(s.base_rows),
                group(s.candidate_rows)
            );
        }
        if let Some(samples) = &self.samples {
            for (title, rows) in [
                ("added", &samples.added),
                ("removed", &samples.removed),
                ("modified", &samples.modified),
            ] {
                if rows.is_empty() {
                    continue;
                }
                let _ = writeln!(out, "\nSample {title}");
                for row in rows.iter().take(5) {
                    let detail = if title == "modified" {
                        row["changes"]
                            .as_object()
                            .map(|m| {
                                m.iter()
                                    .map(|(c, v)| {
                                        format!(
                                            "{c}: {} → {}",
                                            compact(&v["base"]),
                                            compact(&v["candidate"])
                                        )
                                    })
                                    .collect::<Vec<_>>()
                                    .join(", ")
                            })
                            .unwrap_or_default()
                    } else {
                        compact(&row["values"])
                    };
                    let _ = writeln!(out, "  {}  {detail}", compact(&row["key"]));
                }
            }
        }
        if let Some(path) = &self.output {
            let _ = writeln!(out, "\nDiffering rows written to {path}");
        }
        let _ = writeln!(out);
        if self.policy.violations.is_empty() {
            let verdict = if self.identical() {
                "identical"
            } else {
                "differences found"
            };
            let _ = writeln!(out, "Policy: passed ({verdict})");
        } else {
            let _ = writeln!(out, "Policy: {} violation(s)", self.policy.violations.len());
        }
        out
    }
}

fn compact(v: &Value) -> String {
    match v {
        Value::Object(m) => m
            .iter()
            .map(|(k, v)| format!("{k}={}", compact(v)))
            .collect::<Vec<_>>()
            .join(" "),
        Value::String(s) => s.clone(),
        Value::Null => "NULL".into(),
        other => other.to_string(),
    }
}

/// `128231` → `128,231`.
pub fn group(n: u64) -> String {
    let digits = n.to_string();
    let mut out = String::new();
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    out
}

fn signed(n: i64) -> String {
    let g = group(n.unsigned_abs());
    match n.signum() {
        1 => format!("+{g}"),
        -1 => format!("-{g}"),
        _ => g,
    }
}
