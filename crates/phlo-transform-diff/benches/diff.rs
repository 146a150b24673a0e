//! Data diff benchmark (run by hand; figures in docs/performance.md):
//!
//! ```sh
//! CARGO_TARGET_DIR=~/.cache/phlo-wt/release-shared \
//!   cargo bench -p phlo-transform-diff --bench diff
//! ```
//!
//! Two Parquet tables of `PHLO_DIFF_BENCH_ROWS` rows (default 10,000,000; columns id BIGINT,
//! a BIGINT, b DOUBLE, c VARCHAR, d INT) are generated once under
//! `~/.cache/phlo-transform/bench-diff/<rows>/`: the candidate with 0.1% of rows modified,
//! 0.05% removed and 0.05% added (`0_1`), and with 10% modified (`10`). Each case is diffed
//! with `--full` semantics (every row, key `id`) three times; then, in the same run and on the
//! same files, `diff_compare.py` times DuckDB's FULL OUTER JOIN diff and reladiff (hashdiff
//! and joindiff on a DuckDB file). Needs `python3 -m pip install duckdb reladiff`.

use datafusion::arrow::array::{
    ArrayRef, Float64Array, Int32Array, Int64Array, RecordBatch, StringArray,
};
use datafusion::arrow::datatypes::{DataType, Field, Schema};
use datafusion::parquet::arrow::ArrowWriter;
use datafusion::parquet::file::properties::WriterProperties;
use datafusion::prelude::{ParquetReadOptions, SessionContext};
use phlo_transform_diff::{
    diff, DiffOptions, DiffPolicy, DiffRequest, KeyChoice, KeySource, SideInput, Strategy,
};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Instant;

const BATCH: usize = 65_536;

fn mix(mut h: u64) -> u64 {
    h = h.wrapping_add(0x9e37_79b9_7f4a_7c15);
    h = (h ^ (h >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    h = (h ^ (h >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    h ^ (h >> 31)
}

fn schema() -> Arc<Schema> {
    Arc::new(Schema::new(vec![
        Field::new("id", DataType::Int64, false),
        Field::new("a", DataType::Int64, true),
        Field::new("b", DataType::Float64, true),
        Field::new("c", DataType::Utf8, true),
        Field::new("d", DataType::Int32, true),
    ]))
}

/// Row `id`'s values; `changed` perturbs `a` and `b`.
fn row(id: i64, changed: bool) -> (i64, f64, String, i32) {
    let h = mix(id as u64);
    let a = (h % 1_000_000) as i64 + changed as i64;
    let b = (h >> 20) as f64 / 1024.0 + if changed { 0.5 } else { 0.0 };
    (a, b, format!("s{}", h % 5000), (h % 20_000) as i32)
}

struct Writer {
    writer: ArrowWriter<std::fs::File>,
    ids: Vec<i64>,
    a: Vec<i64>,
    b: Vec<f64>,
    c: Vec<String>,
    d: Vec<i32>,
}

impl Writer {
    fn new(path: &Path) -> Self {
        let props = WriterProperties::builder()
            .set_max_row_group_row_count(Some(1 << 20))
            .build();
        Writer {
            writer: ArrowWriter::try_new(
                std::fs::File::create(path).unwrap(),
                schema(),
                Some(props),
            )
            .unwrap(),
            ids: Vec::new(),
            a: Vec::new(),
            b: Vec::new(),
            c: Vec::new(),
            d: Vec::new(),
        }
    }

    fn push(&mut self, id: i64, changed: bool) {
        let (a, b, c, d) = row(id, changed);
        self.ids.push(id);
        self.a.push(a);
        self.b.push(b);
        self.c.push(c);
        self.d.push(d);
        if self.ids.len() == BATCH {
            self.flush();
        }
    }

    fn flush(&mut self) {
        if self.ids.is_empty() {
            return;
        }
        let columns: Vec<ArrayRef> = vec![
            Arc::new(Int64Array::from(std::mem::take(&mut self.ids))),
            Arc::new(Int64Array::from(std::mem::take(&mut self.a))),
            Arc::new(Float64Array::from(std::mem::take(&mut self.b))),
            Arc::new(StringArray::from(std::mem::take(&mut self.c))),
            Arc::new(Int32Array::from(std::mem::take(&mut self.d))),
        ];
        self.writer
            .write(&RecordBatch::try_new(schema(), columns).unwrap())
            .unwrap();
    }

    fn close(mut self) {
        self.flush();
        self.writer.close().unwrap();
    }
}

/// Expected (added, removed, modified) of a case.
#[derive(Debug, Default, Clone, Copy, PartialEq)]
struct Expected {
    added: u64,
    removed: u64,
    modified: u64,
}

fn removed(id: i64) -> bool {
    mix(id as u64 ^ 0xabcd) % 2000 == 1
}

fn modified(id: i64, per_thousand: u64) -> bool {
    mix(id as u64 ^ 0x1234) % 1000 < per_thousand
}

fn generate(dir: &Path, rows: i64) -> Vec<(&'static str, Expected)> {
    std::fs::create_dir_all(dir).unwrap();
    let base = dir.join("base.parquet");
    if !base.exists() {
        let mut w = Writer::new(&dir.join("base.tmp"));
        for id in 0..rows {
            w.push(id, false);
        }
        w.close();
        std::fs::rename(dir.join("base.tmp"), &base).unwrap();
    }
    let mut out = Vec::new();
    for (case, per_thousand) in [("0_1", 1u64), ("10", 100)] {
        let path = dir.join(format!("cand_{case}.parquet"));
        let mut e = Expected::default();
        let write = !path.exists();
        let mut w = write.then(|| Writer::new(&dir.join("cand.tmp")));
        for id in 0..rows {
            if removed(id) {
                e.removed += 1;
                continue;
            }
            let m = modified(id, per_thousand);
            e.modified += m as u64;
            if let Some(w) = &mut w {
                w.push(id, m);
            }
        }
        let added = rows / 2000;
        for id in rows..rows + added {
            e.added += 1;
            if let Some(w) = &mut w {
                w.push(id, false);
            }
        }
        if let Some(w) = w {
            w.close();
            std::fs::rename(dir.join("cand.tmp"), &path).unwrap();
        }
        out.push((case, e));
    }
    out
}

async fn ours(dir: &Path, case: &str) -> (f64, Expected) {
    let ctx = SessionContext::new();
    let read = |name: String| {
        let ctx = ctx.clone();
        async move {
            ctx.read_parquet(name, ParquetReadOptions::default())
                .await
                .unwrap()
        }
    };
    let base = read(dir.join("base.parquet").display().to_string()).await;
    let cand = read(
        dir.join(format!("cand_{case}.parquet"))
            .display()
            .to_string(),
    )
    .await;
    let start = Instant::now();
    let r = diff(DiffRequest {
        model: "bench".into(),
        base: SideInput {
            description: "base".into(),
            frame: base,
            not_null: Vec::new(),
        },
        candidate: SideInput {
            description: case.into(),
            frame: cand,
            not_null: Vec::new(),
        },
        key: KeyChoice {
            columns: vec!["id".into()],
            source: KeySource::Option,
            from: None,
        },
        strategy: Some(Strategy::Full),
        options: DiffOptions::default(),
        policy: DiffPolicy::default(),
        output: None,
    })
    .await
    .unwrap();
    let secs = start.elapsed().as_secs_f64();
    let rec = r.records.unwrap();
    (
        secs,
        Expected {
            added: rec.added,
            removed: rec.removed,
            modified: rec.modified,
        },
    )
}

fn main() {
    let rows: i64 = std::env::var("PHLO_DIFF_BENCH_ROWS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(10_000_000);
    let dir: PathBuf = std::env::var("PHLO_DIFF_BENCH_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|_| {
            PathBuf::from(std::env::var("HOME").unwrap())
                .join(".cache/phlo-transform/bench-diff")
                .join(rows.to_string())
        });
    let start = Instant::now();
    let cases = generate(&dir, rows);
    println!(
        "data: {} ({} rows per side; ready in {:.1} s)",
        dir.display(),
        rows,
        start.elapsed().as_secs_f64()
    );
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(cores)
        .enable_all()
        .build()
        .unwrap();
    for (case, expected) in &cases {
        let mut times = Vec::new();
        for _ in 0..3 {
            let (secs, got) = runtime.block_on(ours(&dir, case));
            assert_eq!(got, *expected, "case {case}");
            times.push(secs);
        }
        times.sort_by(f64::total_cmp);
        println!(
            "{{\"case\": \"{case}\", \"tool\": \"phlo-transform diff --full\", \"seconds\": {:.3}, \"median\": {:.3}, \"added\": {}, \"removed\": {}, \"modified\": {}, \"rows_per_second_per_core\": {:.0}}}",
            times[0],
            times[1],
            expected.added,
            expected.removed,
            expected.modified,
            rows as f64 / times[0] / cores as f64
        );
    }
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("benches/diff_compare.py");
    let status = std::process::Command::new("python3")
        .arg(script)
        .arg(&dir)
        .args(cases.iter().map(|(c, _)| *c))
        .status()
        .expect("python3 runs (python3 -m pip install duckdb reladiff)");
    assert!(status.success(), "diff_compare.py failed");
}
