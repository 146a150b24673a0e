//! The diff engine over in-memory Arrow batches: exact counts for known changes, under every
//! strategy, with composite keys, NULLs, duplicates, tolerances, renames and schema changes.

use datafusion::arrow::array::{
    ArrayRef, Float64Array, Int32Array, Int64Array, RecordBatch, StringArray,
};
use datafusion::arrow::datatypes::{Field, Schema};
use datafusion::prelude::{DataFrame, SessionContext};
use phlo_transform_core::diagnostic::codes;
use phlo_transform_diff::{
    diff, DiffOptions, DiffPolicy, DiffReport, DiffRequest, KeyChoice, KeySource, SideInput,
    Strategy,
};
use std::sync::Arc;

fn frame(ctx: &SessionContext, columns: Vec<(&str, ArrayRef)>, batch_rows: usize) -> DataFrame {
    let schema = Arc::new(Schema::new(
        columns
            .iter()
            .map(|(n, a)| Field::new(*n, a.data_type().clone(), true))
            .collect::<Vec<_>>(),
    ));
    let batch =
        RecordBatch::try_new(schema, columns.into_iter().map(|(_, a)| a).collect()).unwrap();
    let batches = (0..batch.num_rows())
        .step_by(batch_rows.max(1))
        .map(|o| batch.slice(o, batch_rows.min(batch.num_rows() - o)))
        .collect::<Vec<_>>();
    if batches.is_empty() {
        return ctx.read_batch(batch).unwrap();
    }
    ctx.read_batches(batches).unwrap()
}

fn ints(v: &[Option<i64>]) -> ArrayRef {
    Arc::new(Int64Array::from(v.to_vec()))
}
fn strs(v: &[Option<&str>]) -> ArrayRef {
    Arc::new(StringArray::from(v.to_vec()))
}
fn floats(v: &[Option<f64>]) -> ArrayRef {
    Arc::new(Float64Array::from(v.to_vec()))
}

async fn run(
    base: DataFrame,
    candidate: DataFrame,
    key: &[&str],
    strategy: Option<Strategy>,
    options: DiffOptions,
    policy: DiffPolicy,
) -> Result<DiffReport, phlo_transform_core::Diagnostic> {
    diff(DiffRequest {
        model: "m".into(),
        base: SideInput {
            description: "base".into(),
            frame: base,
            not_null: Vec::new(),
        },
        candidate: SideInput {
            description: "candidate".into(),
            frame: candidate,
            not_null: Vec::new(),
        },
        key: KeyChoice {
            columns: key.iter().map(|s| s.to_string()).collect(),
            source: if key.is_empty() {
                KeySource::None
            } else {
                KeySource::Option
            },
            from: None,
        },
        strategy,
        options,
        policy,
        output: None,
        pushdown: None,
    })
    .await
}

fn counts(r: &DiffReport) -> (u64, u64, u64, u64) {
    let rec = r.records.as_ref().expect("records measured");
    (rec.added, rec.removed, rec.modified, rec.unchanged)
}

fn changed(r: &DiffReport, column: &str) -> u64 {
    r.changed_values[column].as_u64().unwrap()
}

/// Composite key (site, id) with a NULL inside the key, NULL values, a float change within
/// and one beyond the tolerance, a removed, an added row and a schema change.
fn composite(ctx: &SessionContext) -> (DataFrame, DataFrame) {
    let base = frame(
        ctx,
        vec![
            (
                "site",
                strs(&[Some("A"), Some("A"), Some("B"), Some("B"), Some("B"), None]),
            ),
            (
                "id",
                ints(&[Some(1), Some(2), Some(1), Some(2), Some(3), Some(1)]),
            ),
            (
                "conc",
                floats(&[Some(1.0), Some(2.0), Some(3.0), Some(4.0), Some(5.0), None]),
            ),
            (
                "status",
                strs(&[
                    Some("ok"),
                    Some("ok"),
                    None,
                    Some("bad"),
                    Some("ok"),
                    Some("ok"),
                ]),
            ),
            ("lot", strs(&[Some("x"); 6])),
        ],
        2,
    );
    let candidate = frame(
        ctx,
        vec![
            (
                "site",
                strs(&[Some("A"), Some("A"), Some("B"), Some("B"), None, Some("D")]),
            ),
            (
                "id",
                Arc::new(Int32Array::from(vec![1, 2, 1, 2, 1, 1])) as ArrayRef,
            ),
            (
                "conc",
                floats(&[
                    Some(1.0),
                    Some(2.0004),
                    Some(3.0),
                    Some(4.5),
                    Some(6.0),
                    Some(7.0),
                ]),
            ),
            (
                "status",
                strs(&[Some("ok"), Some("ok"), None, Some("bad"), None, Some("ok")]),
            ),
            ("batch", ints(&[Some(1); 6])),
        ],
        4,
    );
    (base, candidate)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn composite_key_nulls_tolerance_and_schema_change() {
    let ctx = SessionContext::new();
    let (b, c) = composite(&ctx);
    let opts = DiffOptions {
        decimals: Some(3),
        ..DiffOptions::default()
    };
    let r = run(
        b,
        c,
        &["site", "id"],
        Some(Strategy::Full),
        opts,
        DiffPolicy::default(),
    )
    .await
    .unwrap();
    assert_eq!((r.rows.base, r.rows.candidate, r.rows.delta), (6, 6, 0));
    // removed (B,3); added (D,1); modified (B,2) conc and (NULL,1) conc+status;
    // (A,2) within 10^-3; (B,1) NULL status on both sides is equal.
    assert_eq!(counts(&r), (1, 1, 2, 3));
    assert_eq!(changed(&r, "conc"), 2);
    assert_eq!(changed(&r, "status"), 1);
    assert_eq!(r.schema.added.len(), 1);
    assert_eq!(r.schema.added[0].name, "batch");
    assert_eq!(r.schema.removed[0].name, "lot");
    assert_eq!(r.schema.retyped[0].name, "id");
    assert_eq!(r.schema.retyped[0].compared_as.as_deref(), Some("Int64"));
    assert!(r.policy.passed);
    assert_eq!(r.samples.as_ref().unwrap().modified.len(), 2);

    // Exact floats: (A,2) is modified too.
    let (b, c) = composite(&ctx);
    let r = run(
        b,
        c,
        &["site", "id"],
        Some(Strategy::Full),
        DiffOptions::default(),
        DiffPolicy::default(),
    )
    .await
    .unwrap();
    assert_eq!(counts(&r), (1, 1, 3, 2));
    assert_eq!(changed(&r, "conc"), 3);

    // A per-column tolerance wider than the 0.5 change.
    let (b, c) = composite(&ctx);
    let opts = DiffOptions {
        tolerances: [("conc".to_string(), 1.5)].into(),
        ..DiffOptions::default()
    };
    let r = run(
        b,
        c,
        &["site", "id"],
        Some(Strategy::Full),
        opts,
        DiffPolicy::default(),
    )
    .await
    .unwrap();
    // (B,2) is within it; NULL against 6.0 is a change whatever the tolerance.
    assert_eq!(counts(&r), (1, 1, 1, 4));
    assert_eq!(changed(&r, "conc"), 1);
    assert_eq!(changed(&r, "status"), 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn duplicate_keys_are_counted_not_collapsed() {
    let ctx = SessionContext::new();
    let base = frame(
        &ctx,
        vec![
            ("id", ints(&[Some(1), Some(1), Some(2), Some(3), Some(5)])),
            (
                "v",
                ints(&[Some(10), Some(11), Some(20), Some(30), Some(50)]),
            ),
        ],
        2,
    );
    // Key 2 repeats in the candidate, in different batches; key 1 repeats on both sides;
    // key 7, which the base lacks, repeats in the candidate (its first row was counted added).
    let candidate = frame(
        &ctx,
        vec![
            (
                "id",
                ints(&[
                    Some(2),
                    Some(1),
                    Some(4),
                    Some(5),
                    Some(2),
                    Some(2),
                    Some(7),
                    Some(1),
                    Some(7),
                ]),
            ),
            (
                "v",
                ints(&[
                    Some(21),
                    Some(10),
                    Some(40),
                    Some(51),
                    Some(20),
                    Some(22),
                    Some(70),
                    Some(12),
                    Some(71),
                ]),
            ),
        ],
        2,
    );
    let policy = DiffPolicy {
        max_removed_rows: Some(10),
        ..DiffPolicy::default()
    };
    let r = run(
        base,
        candidate,
        &["id"],
        Some(Strategy::Full),
        DiffOptions::default(),
        policy,
    )
    .await
    .unwrap();
    // 3 removed, 4 added, 5 modified; keys 1 and 2 are duplicates.
    assert_eq!(counts(&r), (1, 1, 1, 0));
    assert_eq!(changed(&r, "v"), 1);
    let d = r.duplicates.as_ref().unwrap();
    assert_eq!((d.base.keys, d.base.rows), (1, 2));
    assert_eq!((d.candidate.keys, d.candidate.rows), (3, 7));
    assert_eq!(d.samples.len(), 3);
    assert_eq!(d.samples[0]["key"]["id"], 1);
    assert_eq!(d.samples[0]["base_rows"], 2);
    assert_eq!(d.samples[0]["candidate_rows"], 2);
    assert_eq!(d.samples[1]["key"]["id"], 2);
    assert_eq!(d.samples[1]["base_rows"], 1);
    assert_eq!(d.samples[1]["candidate_rows"], 3);
    assert_eq!(d.samples[2]["key"]["id"], 7);
    assert_eq!(d.samples[2]["base_rows"], 0);
    assert_eq!(d.samples[2]["candidate_rows"], 2);
    assert!(r
        .warnings
        .iter()
        .any(|w| w.code == codes::DIFF_DUPLICATE_KEYS));
    // Rows under duplicated keys were not measured: the threshold fails.
    assert!(!r.policy.passed);
    assert_eq!(r.policy.violations[0].code, codes::DIFF_UNMEASURED);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn keyless_compares_aggregates_and_row_thresholds_fail() {
    let ctx = SessionContext::new();
    let base = frame(
        &ctx,
        vec![
            ("a", ints(&[Some(1), Some(2), None])),
            ("s", strs(&[Some("x"), Some("y"), Some("z")])),
            ("f", floats(&[Some(0.5), Some(1.5), Some(1.5)])),
        ],
        8,
    );
    let candidate = frame(
        &ctx,
        vec![
            ("a", ints(&[Some(1), Some(5), None, None])),
            ("s", strs(&[Some("x"), Some("y"), Some("z"), Some("z")])),
            ("f", floats(&[Some(0.5), Some(1.5), Some(2.5), Some(1.5)])),
        ],
        8,
    );
    let policy = DiffPolicy {
        max_removed_rows: Some(0),
        max_changed_fraction: Some(0.5),
        ..DiffPolicy::default()
    };
    let r = run(base, candidate, &[], None, DiffOptions::default(), policy)
        .await
        .unwrap();
    assert_eq!(r.strategy, Strategy::Aggregate);
    assert!(r.records.is_none());
    assert_eq!((r.rows.base, r.rows.candidate), (3, 4));
    let aggs = r.aggregates.as_ref().unwrap();
    assert_eq!(aggs[0].column, "a");
    assert_eq!(aggs[0].base.nulls, 1);
    assert_eq!(aggs[0].candidate.nulls, 2);
    assert_eq!(aggs[0].base.sum, 3);
    assert_eq!(aggs[0].candidate.sum, 6);
    assert_eq!(aggs[0].differs, ["nulls", "max", "sum"]);
    assert_eq!(aggs[1].differs, ["count"]);
    // Floats: approximate distinct through their text (2 against 3 values).
    assert_eq!(aggs[2].base.approx_distinct, 2);
    assert_eq!(aggs[2].candidate.approx_distinct, 3);
    assert_eq!(aggs[2].differs, ["count", "max", "sum", "approx_distinct"]);
    assert!(!r.policy.passed);
    assert_eq!(r.policy.violations.len(), 2);
    assert!(r
        .policy
        .violations
        .iter()
        .all(|v| v.code == codes::DIFF_UNMEASURED));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn policies_are_checked_and_coded() {
    let ctx = SessionContext::new();
    let (b, c) = composite(&ctx);
    let policy = DiffPolicy {
        max_removed_rows: Some(0),
        max_added_rows: Some(1),
        max_changed_fraction: Some(0.5),
        max_changed_values: [("status".to_string(), 0), ("conc".to_string(), 5)].into(),
    };
    let r = run(
        b,
        c,
        &["site", "id"],
        Some(Strategy::Full),
        DiffOptions::default(),
        policy,
    )
    .await
    .unwrap();
    let got: Vec<_> = r.policy.violations.iter().map(|v| v.code).collect();
    // removed 1 > 0; added 1 ≤ 1; (1+1+3)/6 > 0.5; status 1 > 0; conc 3 ≤ 5.
    assert_eq!(
        got,
        [
            codes::DIFF_TOO_MANY_REMOVED,
            codes::DIFF_TOO_MANY_CHANGED,
            codes::DIFF_COLUMN_CHANGED
        ]
    );
    assert!(!r.policy.passed);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bad_input_is_coded() {
    let ctx = SessionContext::new();
    let (b, c) = composite(&ctx);
    let e = run(
        b,
        c,
        &["site", "nope"],
        None,
        DiffOptions::default(),
        DiffPolicy::default(),
    )
    .await
    .unwrap_err();
    assert_eq!(e.code, codes::DIFF_KEY_MISSING);
    // `lot` exists on the base side only.
    let (b, c) = composite(&ctx);
    let e = run(
        b,
        c,
        &["lot"],
        None,
        DiffOptions::default(),
        DiffPolicy::default(),
    )
    .await
    .unwrap_err();
    assert_eq!(e.code, codes::DIFF_KEY_MISSING);
    assert!(e.message.contains("candidate"), "{}", e.message);
    // A boolean key against an integer key cannot be matched.
    let base = frame(&ctx, vec![("k", ints(&[Some(1)]))], 1);
    let candidate = frame(
        &ctx,
        vec![(
            "k",
            Arc::new(datafusion::arrow::array::BooleanArray::from(vec![true])) as ArrayRef,
        )],
        1,
    );
    let e = run(
        base,
        candidate,
        &["k"],
        None,
        DiffOptions::default(),
        DiffPolicy::default(),
    )
    .await
    .unwrap_err();
    assert_eq!(e.code, codes::DIFF_INCOMPATIBLE_TYPES);
    let (b, c) = composite(&ctx);
    let e = run(
        b,
        c,
        &[],
        Some(Strategy::Sampled),
        DiffOptions::default(),
        DiffPolicy::default(),
    )
    .await
    .unwrap_err();
    assert_eq!(e.code, codes::DIFF_INVALID_OPTION);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn column_mapping_compares_renamed_columns() {
    let ctx = SessionContext::new();
    let base = frame(
        &ctx,
        vec![
            ("id", ints(&[Some(1), Some(2)])),
            ("amount", ints(&[Some(10), Some(20)])),
        ],
        8,
    );
    let candidate = frame(
        &ctx,
        vec![
            ("id", ints(&[Some(1), Some(2)])),
            ("amount_usd", ints(&[Some(10), Some(21)])),
        ],
        8,
    );
    let opts = DiffOptions {
        column_map: [("amount_usd".to_string(), "amount".to_string())].into(),
        ..DiffOptions::default()
    };
    let r = run(
        base,
        candidate,
        &["id"],
        Some(Strategy::Full),
        opts,
        DiffPolicy::default(),
    )
    .await
    .unwrap();
    assert_eq!(counts(&r), (0, 0, 1, 1));
    assert_eq!(changed(&r, "amount"), 1);
    assert!(r.schema.added.is_empty() && r.schema.removed.is_empty());
    assert_eq!(r.schema.renamed[0].candidate, "amount_usd");
}

/// 60,000 keys over batches large enough for the parallel path: every strategy that
/// matches rows agrees with the known changes.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn strategies_agree_on_a_larger_table() {
    let n = 60_000i64;
    let ctx = SessionContext::new();
    let base_ids: Vec<Option<i64>> = (0..n).map(Some).collect();
    let base_vals: Vec<Option<f64>> = (0..n).map(|i| Some(i as f64)).collect();
    // Candidate: ids ≡ 0 mod 100 removed (600), ids n..n+250 added, ids ≡ 7 mod 50
    // changed (1,200; none of them removed), ids ≡ 3 mod 1000 set to NULL (60).
    let mut cand_ids = Vec::new();
    let mut cand_vals = Vec::new();
    for i in (0..n).rev() {
        if i % 100 == 0 {
            continue;
        }
        cand_ids.push(Some(i));
        cand_vals.push(if i % 50 == 7 {
            Some(i as f64 + 1.0)
        } else if i % 1000 == 3 {
            None
        } else {
            Some(i as f64)
        });
    }
    for i in n..n + 250 {
        cand_ids.push(Some(i));
        cand_vals.push(Some(0.0));
    }
    let make = || {
        (
            frame(
                &ctx,
                vec![("id", ints(&base_ids)), ("v", floats(&base_vals))],
                8192,
            ),
            frame(
                &ctx,
                vec![("id", ints(&cand_ids)), ("v", floats(&cand_vals))],
                8192,
            ),
        )
    };
    for strategy in [Strategy::Full, Strategy::Partition] {
        let (b, c) = make();
        let r = run(
            b,
            c,
            &["id"],
            Some(strategy),
            DiffOptions::default(),
            DiffPolicy::default(),
        )
        .await
        .unwrap();
        assert_eq!(
            (r.rows.base, r.rows.candidate),
            (60_000, 59_650),
            "{strategy:?}"
        );
        assert_eq!(
            counts(&r),
            (250, 600, 1_260, 60_000 - 600 - 1_260),
            "{strategy:?}"
        );
        assert_eq!(changed(&r, "v"), 1_260);
    }
    // Without a strategy, a table above the large-table threshold is sampled (1%).
    let (b, c) = make();
    let opts = DiffOptions {
        large_table_rows: 50_000,
        ..DiffOptions::default()
    };
    let r = run(b, c, &["id"], None, opts, DiffPolicy::default())
        .await
        .unwrap();
    assert_eq!(r.strategy, Strategy::Sampled);
    assert!(
        r.strategy_reason.contains("--full"),
        "{}",
        r.strategy_reason
    );
    let (b, c) = make();
    let r = run(
        b,
        c,
        &["id"],
        None,
        DiffOptions::default(),
        DiffPolicy::default(),
    )
    .await
    .unwrap();
    assert_eq!(r.strategy, Strategy::Full);
    // Every key sampled: the same as full. A 10% sample: about 10% of each, the same keys
    // on both sides (so no spurious added/removed).
    let (b, c) = make();
    let opts = DiffOptions {
        sample_fraction: 1.0,
        ..DiffOptions::default()
    };
    let r = run(
        b,
        c,
        &["id"],
        Some(Strategy::Sampled),
        opts,
        DiffPolicy::default(),
    )
    .await
    .unwrap();
    assert_eq!(counts(&r), (250, 600, 1_260, 58_140));
    let (b, c) = make();
    let opts = DiffOptions {
        sample_fraction: 0.1,
        ..DiffOptions::default()
    };
    let r = run(
        b,
        c,
        &["id"],
        Some(Strategy::Sampled),
        opts,
        DiffPolicy::default(),
    )
    .await
    .unwrap();
    let (added, removed, modified, unchanged) = counts(&r);
    let sample = r.sample.as_ref().unwrap();
    assert_eq!(sample.base_rows, removed + modified + unchanged);
    assert_eq!(sample.candidate_rows, added + modified + unchanged);
    assert!(
        (4_500..7_500).contains(&sample.base_rows),
        "{}",
        sample.base_rows
    );
    assert!((60..190).contains(&removed), "{removed}");
}
