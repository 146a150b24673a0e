//! Generator of synthetic, layered phlo-transform workspaces for benchmarks.
//!
//! Shape of a workspace with `n` models:
//! - 10 namespaces `ns00`..`ns09`; `ns00`..`ns07` use the `transforms/<ns>/...` layout and
//!   `ns08`, `ns09` the `workflows/<ns>/transforms/...` layout, each root with a
//!   `transform.toml` (owner).
//! - up to 10 layers; model `i` lives in layer `i * layers / n`, namespace `i % 10`, at
//!   `<root>/l<layer>/m<i>.sql`, so its name is `<ns>.l<layer>.m<i>`.
//! - layer 0 models are `@table`s reading their namespace's CSV source `<ns>.seed_events`
//!   (`sources/<ns>/seed_events.csv`, 200 rows).
//! - a model in layer k > 0 reads 1–3 models of layer k−1 (full dotted names, chosen by a
//!   tiny LCG, so the workspace is the same on every run) with one of five query shapes:
//!   filter + CASE, aggregate, CTE + left join, join + IN-subquery, union of three + window.
//!   About one in five is a `@table` with `@key id`; the rest are views.
//!
//! Every model outputs `(id bigint, grp varchar, amount double, n bigint)` with `id` unique,
//! so the workspace also *runs* on the local engine and its key tests pass.
//!
//! That is the small shape (about 370 bytes of SQL per model). `PHLO_BENCH_SHAPE=realistic`
//! selects the realistic one instead (`realistic.rs`: about 1.5 KB per model with joins,
//! CTEs, aggregates and windows); every bench built on [`generate`] honours it.

#[path = "realistic.rs"]
pub mod realistic;

use std::fmt::Write as _;
use std::io;
use std::path::Path;

pub const NAMESPACES: usize = 10;
pub const MAX_LAYERS: usize = 10;
const SEED_ROWS: usize = 200;

/// Deterministic 64-bit LCG (Knuth's MMIX constants); the high bits are the output.
pub struct Lcg(u64);

impl Lcg {
    pub fn new(seed: u64) -> Self {
        Lcg(seed ^ 0x9E37_79B9_7F4A_7C15)
    }

    pub fn next(&mut self) -> u64 {
        self.0 = self
            .0
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        self.0 >> 33
    }

    /// Uniform-ish in `0..bound` (`bound > 0`).
    pub fn below(&mut self, bound: usize) -> usize {
        (self.next() % bound as u64) as usize
    }
}

/// `(bench mode, sizes)`: under `cargo bench` (`--bench` argument) the sizes in
/// `PHLO_BENCH_SIZES` (comma-separated; default 1,000 and 10,000); under `cargo test --benches`
/// a 200-model smoke test.
pub fn bench_sizes() -> (bool, Vec<usize>) {
    if !std::env::args().skip(1).any(|a| a == "--bench") {
        return (false, vec![200]);
    }
    let sizes = std::env::var("PHLO_BENCH_SIZES")
        .ok()
        .map(|s| s.split(',').filter_map(|p| p.trim().parse().ok()).collect())
        .unwrap_or_else(|| vec![1_000, 10_000]);
    (true, sizes)
}

/// What was generated.
pub struct Summary {
    pub models: usize,
    pub layers: usize,
    pub tables: usize,
    pub edges: usize,
    pub bytes: usize,
}

fn namespace(i: usize) -> String {
    format!("ns{:02}", i % NAMESPACES)
}

fn root_dir(ns_index: usize) -> String {
    let ns = namespace(ns_index);
    if ns_index % NAMESPACES >= 8 {
        format!("workflows/{ns}/transforms")
    } else {
        format!("transforms/{ns}")
    }
}

/// Layer of model `i` out of `n`, with `layers` layers.
fn layer_of(i: usize, n: usize, layers: usize) -> usize {
    i * layers / n
}

/// Which generator `PHLO_BENCH_SHAPE` selects (`small`, the default, or `realistic`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Shape {
    Small,
    Realistic,
}

impl Shape {
    /// The shape named by `PHLO_BENCH_SHAPE`; an unknown name is an error message.
    pub fn from_env() -> Result<Shape, String> {
        match std::env::var("PHLO_BENCH_SHAPE").as_deref() {
            Err(_) | Ok("") | Ok("small") => Ok(Shape::Small),
            Ok("realistic") => Ok(Shape::Realistic),
            Ok(other) => Err(format!(
                "PHLO_BENCH_SHAPE must be `small` or `realistic`, got `{other}`"
            )),
        }
    }

    /// A source column most of the workspace derives from (for lineage and impact).
    pub fn probe_column(self) -> &'static str {
        match self {
            Shape::Small => "ns00.seed_events.amount",
            Shape::Realistic => realistic::PROBE_COLUMN,
        }
    }
}

/// Writes a workspace with `n` models of the shape `PHLO_BENCH_SHAPE` selects into `dir`
/// (which must exist and should be empty). Panics on an unknown shape name.
pub fn generate(dir: &Path, n: usize) -> io::Result<Summary> {
    match Shape::from_env().unwrap_or_else(|e| panic!("{e}")) {
        Shape::Small => generate_small(dir, n),
        Shape::Realistic => realistic::generate(dir, n),
    }
}

/// The rows of the generated source `<ns>.seed_events` (`sources/<ns>/seed_events.csv` under
/// `dir`) as SQL `VALUES` tuples `(id, 'grp', amount, DATE 'yyyy-mm-dd')`, for benches that load
/// it into a warehouse.
pub fn seed_values(dir: &Path, ns: &str) -> Vec<String> {
    let csv = std::fs::read_to_string(dir.join(format!("sources/{ns}/seed_events.csv")))
        .expect("the generated source");
    csv.lines()
        .skip(1)
        .map(|l| {
            let f: Vec<&str> = l.split(',').collect();
            format!("({}, '{}', {}, DATE '{}')", f[0], f[1], f[2], f[3])
        })
        .collect()
}

/// The small shape described at the top of this file.
pub fn generate_small(dir: &Path, n: usize) -> io::Result<Summary> {
    assert!(n > 0, "at least one model");
    let layers = MAX_LAYERS.min(n);
    // Model indices of each layer (contiguous ranges).
    let mut ranges: Vec<(usize, usize)> = vec![(usize::MAX, 0); layers];
    for i in 0..n {
        let k = layer_of(i, n, layers);
        ranges[k].0 = ranges[k].0.min(i);
        ranges[k].1 = ranges[k].1.max(i + 1);
    }
    let name = |i: usize| format!("{}.l{:02}.m{:05}", namespace(i), layer_of(i, n, layers), i);

    std::fs::write(
        dir.join("phlo.toml"),
        "# Synthetic benchmark workspace (benches/support/generate.rs).\n\
         [transform]\n\
         default_materialization = \"view\"\n\n\
         [transform.execution]\n\
         max_concurrency = 4\n",
    )?;

    // Sources and roots.
    let mut rng = Lcg::new(42);
    for ns_index in 0..NAMESPACES {
        let ns = namespace(ns_index);
        let src = dir.join("sources").join(&ns);
        std::fs::create_dir_all(&src)?;
        let mut csv = String::from("id,grp,amount,event_date\n");
        for row in 0..SEED_ROWS {
            let grp = ["alpha", "beta", "gamma", "delta", "epsilon"][rng.below(5)];
            let amount = rng.below(100_000) as f64 / 100.0 + 0.01;
            let _ = writeln!(
                csv,
                "{},{grp},{amount:.2},2024-{:02}-{:02}",
                row + 1,
                1 + rng.below(12),
                1 + rng.below(28)
            );
        }
        std::fs::write(src.join("seed_events.csv"), csv)?;
        let root = dir.join(root_dir(ns_index));
        std::fs::create_dir_all(&root)?;
        std::fs::write(
            root.join("transform.toml"),
            format!("owner = \"team-{ns}\"\n"),
        )?;
    }

    let mut summary = Summary {
        models: n,
        layers,
        tables: 0,
        edges: 0,
        bytes: 0,
    };
    let mut created_dirs = std::collections::HashSet::new();
    for i in 0..n {
        let ns = namespace(i);
        let k = layer_of(i, n, layers);
        let folder = dir.join(root_dir(i)).join(format!("l{k:02}"));
        if created_dirs.insert(folder.clone()) {
            std::fs::create_dir_all(&folder)?;
        }
        let mut rng = Lcg::new(i as u64 * 7919 + 1);
        let mut sql = String::with_capacity(1024);
        let _ = writeln!(sql, "-- Synthetic model {i} of {n}, layer {k} ({ns}).");
        let table = k == 0 || rng.below(5) == 0;
        if table {
            summary.tables += 1;
            sql.push_str("-- @table\n-- @key id\n");
        }
        if rng.below(3) == 0 {
            let _ = writeln!(sql, "-- @tags layer{k}, synthetic");
        }
        sql.push('\n');
        if k == 0 {
            let _ = write!(
                sql,
                "with cleaned as (\n    \
                     select id, lower(trim(grp)) as grp, amount, cast(event_date as date) as event_date\n    \
                     from {ns}.seed_events\n    \
                     where amount is not null\n\
                 )\n\
                 select id, grp, round(amount * {f}, 2) as amount, cast(1 as bigint) as n\n\
                 from cleaned\n\
                 where event_date >= date '2024-01-01' and grp <> ''\n",
                f = 1 + i % 3,
            );
            summary.edges += 1;
        } else {
            let (lo, hi) = ranges[k - 1];
            let want = 1 + rng.below(3);
            let mut parents: Vec<usize> = Vec::with_capacity(3);
            while parents.len() < want.min(hi - lo) {
                let p = lo + rng.below(hi - lo);
                if !parents.contains(&p) {
                    parents.push(p);
                }
            }
            summary.edges += parents.len();
            let p: Vec<String> = parents.iter().map(|&p| name(p)).collect();
            match (p.len(), rng.below(2)) {
                (1, 0) => {
                    let _ = write!(
                        sql,
                        "select\n    id,\n    grp,\n    \
                             case when amount > 500 then amount * 0.9 else amount end as amount,\n    \
                             n\n\
                         from {p0}\n\
                         where id % 7 <> {r} and grp is not null\n",
                        p0 = p[0],
                        r = i % 7,
                    );
                }
                (1, _) => {
                    let _ = write!(
                        sql,
                        "select id, max(grp) as grp, sum(amount) as amount, count(*) as n\n\
                         from {p0} as src\n\
                         where src.amount >= 0\n\
                         group by id\n\
                         having count(*) >= 1\n",
                        p0 = p[0],
                    );
                }
                (2, 0) => {
                    let _ = write!(
                        sql,
                        "with a as (\n    \
                             select id, grp, amount, n from {p0} where amount > 1\n\
                         ),\n\
                         b as (\n    \
                             select id, sum(amount) as amount, count(*) as n\n    \
                             from {p1}\n    \
                             group by id\n\
                         )\n\
                         select a.id, a.grp, a.amount + coalesce(b.amount, 0) as amount, a.n + coalesce(b.n, 0) as n\n\
                         from a\n\
                         left join b on a.id = b.id\n\
                         where a.id % 11 <> {r}\n",
                        p0 = p[0],
                        p1 = p[1],
                        r = i % 11,
                    );
                }
                (2, _) => {
                    let _ = write!(
                        sql,
                        "select l.id, l.grp, greatest(l.amount, r.amount) as amount, l.n + r.n as n\n\
                         from {p0} as l\n\
                         join {p1} as r on r.id = l.id\n\
                         where l.id in (select id from {p0} where amount > 0)\n",
                        p0 = p[0],
                        p1 = p[1],
                    );
                }
                _ => {
                    let _ = write!(
                        sql,
                        "with unioned as (\n    \
                             select id, grp, amount, n from {p0}\n    \
                             union all\n    \
                             select id, grp, amount, n from {p1}\n    \
                             union all\n    \
                             select id, grp, amount, n from {p2}\n\
                         ),\n\
                         per_id as (\n    \
                             select id, min(grp) as grp, sum(amount) as amount, sum(n) as n\n    \
                             from unioned\n    \
                             group by id\n\
                         ),\n\
                         ranked as (\n    \
                             select id, grp, amount, n,\n           \
                                    row_number() over (partition by grp order by amount desc, id) as rk\n    \
                             from per_id\n\
                         )\n\
                         select id, grp, amount, n\n\
                         from ranked\n\
                         where rk <= 1000\n",
                        p0 = p[0],
                        p1 = p[1],
                        p2 = p[2],
                    );
                }
            }
        }
        summary.bytes += sql.len();
        std::fs::write(folder.join(format!("m{i:05}.sql")), sql)?;
    }
    Ok(summary)
}
