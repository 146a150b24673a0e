//! Freshness clocks (issue 40): every dataset is current as of the newest source state it
//! reflects. A source is as of what its data says when the run reads it (a Delta commit's
//! time, an Iceberg snapshot's, a file's modification time: the compiler's catalog snapshot),
//! else of the engine's freshness measurement (the latest `timestamp_column` value, or the
//! Iceberg snapshot time Trino reads). A model built from its inputs is as of the minimum over
//! them: the oldest input bounds what it can reflect. An unknown input makes it unknown, and a
//! model that reads nothing is as of nothing (both `None`).

use phlo_transform_compiler::Compilation;
use phlo_transform_project::Materialization;
use std::collections::HashMap;

pub use phlo_transform_state::AsOf;
use serde::{Deserialize, Serialize};

use crate::freshness::SourceFreshness;

/// A source newer than the data a model reflects (a `source_change` reason's `advanced`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Advanced {
    /// What the model's record is current as of.
    pub current_as_of: AsOf,
    /// What the source is current as of now.
    pub source_as_of: AsOf,
}

/// Whether source `name` is now newer than `current_as_of`, what a model recorded: both
/// instants when it is; `None` when it is not, or either is unknown.
pub fn advanced(
    c: &Compilation,
    freshness: &[SourceFreshness],
    name: &str,
    current_as_of: Option<AsOf>,
) -> Option<Advanced> {
    let current_as_of = current_as_of?;
    let source_as_of = source_as_of(c, freshness, name)?;
    (source_as_of > current_as_of).then_some(Advanced {
        current_as_of,
        source_as_of,
    })
}

/// The minimum over a model's inputs' as-of instants: `None` when one of them is unknown, and
/// when there is no input at all.
pub fn min_over_inputs(inputs: impl IntoIterator<Item = Option<AsOf>>) -> Option<AsOf> {
    let mut min: Option<AsOf> = None;
    for input in inputs {
        let at = input?;
        min = Some(min.map_or(at, |m| m.min(at)));
    }
    min
}

/// What source `name` is current as of now: what its data says (read with the catalog
/// snapshot `c` was compiled with), else what the engine measured of it for its freshness
/// requirement (`freshness`); `None` when neither knows.
pub fn source_as_of(c: &Compilation, freshness: &[SourceFreshness], name: &str) -> Option<AsOf> {
    c.catalog
        .sources
        .get(name)
        .and_then(|s| s.as_of)
        .or_else(|| {
            let latest = freshness
                .iter()
                .find(|f| f.source == name)?
                .latest
                .as_deref()?;
            chrono::DateTime::parse_from_rfc3339(latest)
                .ok()
                .map(|t| t.with_timezone(&chrono::Utc))
        })
}

/// The models' clocks during a run of a plan: each planned model starts at what its record
/// says (the plan's `current_as_of`); a model the run builds moves to [`Clocks::built`], which
/// its readers, built after it, then read.
pub struct Clocks<'a> {
    c: &'a Compilation,
    sources: &'a [SourceFreshness],
    known: HashMap<usize, Option<AsOf>>,
}

impl<'a> Clocks<'a> {
    /// Clocks over `c` with the plan's freshness measurements (`sources`) and each planned
    /// model's recorded clock (`recorded`: name and instant).
    pub fn new<'n>(
        c: &'a Compilation,
        sources: &'a [SourceFreshness],
        recorded: impl IntoIterator<Item = (&'n str, Option<AsOf>)>,
    ) -> Self {
        let known = recorded
            .into_iter()
            .filter_map(|(name, at)| Some((c.model_index(name)?, at)))
            .collect();
        Clocks { c, sources, known }
    }

    /// What model `i` is current as of once built now from its inputs as they stand; it is
    /// what its readers see from here on.
    pub fn built(&mut self, i: usize) -> Option<AsOf> {
        let at = self.of_inputs(i);
        self.known.insert(i, at);
        at
    }

    /// The minimum over model `i`'s sources and upstream models.
    fn of_inputs(&self, i: usize) -> Option<AsOf> {
        let m = &self.c.models[i];
        let sources = m
            .sources
            .iter()
            .map(|s| source_as_of(self.c, self.sources, s));
        let upstream = m.upstream.iter().map(|&u| self.of(u));
        min_over_inputs(sources.chain(upstream))
    }

    /// What upstream model `u` is as of: an ephemeral model (inlined, never recorded) is its
    /// inputs'; any other what it was built with or recorded; unknown outside the plan.
    fn of(&self, u: usize) -> Option<AsOf> {
        if self.c.models[u].materialization == Materialization::Ephemeral {
            return self.of_inputs(u);
        }
        self.known.get(&u).copied().flatten()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use phlo_transform_compiler::CatalogSnapshot;
    use phlo_transform_project::Workspace;
    use std::time::{Duration, UNIX_EPOCH};

    fn at(seconds: u64) -> AsOf {
        AsOf::from(UNIX_EPOCH + Duration::from_secs(seconds))
    }

    #[test]
    fn the_minimum_is_unknown_with_an_unknown_input_and_without_inputs() {
        assert_eq!(
            min_over_inputs([Some(at(5)), Some(at(3)), Some(at(9))]),
            Some(at(3))
        );
        assert_eq!(min_over_inputs([Some(at(5))]), Some(at(5)));
        assert_eq!(min_over_inputs([Some(at(5)), None, Some(at(1))]), None);
        assert_eq!(min_over_inputs([]), None);
    }

    /// `raw.orders` (as of 100) and `raw.customers` (as of 200, read through an ephemeral
    /// model) into `marts.revenue`; `marts.constant` reads nothing; `marts.late` reads
    /// `marts.revenue` and `raw.customers`.
    fn compiled() -> (tempfile::TempDir, Compilation) {
        let dir = tempfile::tempdir().unwrap();
        let files = [
            ("phlo.toml", ""),
            ("sources/raw/orders.csv", "id,customer_id,amount\n1,1,2.5\n"),
            ("sources/raw/customers.csv", "id,name\n1,ada\n"),
            (
                "transforms/staging/orders.sql",
                "select id, customer_id, amount from raw.orders\n",
            ),
            (
                "transforms/staging/customers.sql",
                "-- @ephemeral\nselect id, name from raw.customers\n",
            ),
            (
                "transforms/marts/revenue.sql",
                "select c.name, sum(o.amount) as amount from staging.orders as o \
                 join staging.customers as c on c.id = o.customer_id group by c.name\n",
            ),
            ("transforms/marts/constant.sql", "select 1 as one\n"),
            (
                "transforms/marts/late.sql",
                "select r.name from marts.revenue as r join raw.customers as c on c.name = r.name\n",
            ),
        ];
        for (path, text) in files {
            let p = dir.path().join(path);
            std::fs::create_dir_all(p.parent().unwrap()).unwrap();
            std::fs::write(p, text).unwrap();
        }
        for (file, seconds) in [("orders", 100), ("customers", 200)] {
            let path = dir.path().join(format!("sources/raw/{file}.csv"));
            std::fs::File::options()
                .write(true)
                .open(path)
                .unwrap()
                .set_modified(UNIX_EPOCH + Duration::from_secs(seconds))
                .unwrap();
        }
        let ws = Workspace::load(dir.path()).unwrap();
        let (catalog, diags) = CatalogSnapshot::load(&ws);
        let c = Compilation::compile(ws, catalog, diags);
        assert!(!c.has_errors(), "{:?}", c.diagnostics);
        (dir, c)
    }

    #[test]
    fn a_built_model_is_as_of_its_oldest_input() {
        let (_dir, c) = compiled();
        let index = |name: &str| c.model_index(name).unwrap();
        assert_eq!(source_as_of(&c, &[], "raw.orders"), Some(at(100)));
        let mut clocks = Clocks::new(&c, &[], []);
        // Never built: the recorded clocks are unknown, so a reader built first is unknown.
        assert_eq!(clocks.built(index("marts.revenue")), None);
        assert_eq!(clocks.built(index("staging.orders")), Some(at(100)));
        // Through the ephemeral model: raw.customers (200) and staging.orders (100).
        assert_eq!(clocks.built(index("marts.revenue")), Some(at(100)));
        assert_eq!(clocks.built(index("marts.late")), Some(at(100)));
        assert_eq!(clocks.built(index("marts.constant")), None, "reads nothing");
    }

    #[test]
    fn a_model_not_built_keeps_its_recorded_clock_for_its_readers() {
        let (_dir, c) = compiled();
        let mut clocks = Clocks::new(&c, &[], [("marts.revenue", Some(at(50)))]);
        // raw.customers is 200, the recorded marts.revenue 50.
        assert_eq!(
            clocks.built(c.model_index("marts.late").unwrap()),
            Some(at(50))
        );
    }

    #[test]
    fn a_source_advanced_only_when_newer_than_a_known_clock() {
        let (_dir, c) = compiled();
        let newer = advanced(&c, &[], "raw.customers", Some(at(150))).unwrap();
        assert_eq!(
            (newer.current_as_of, newer.source_as_of),
            (at(150), at(200))
        );
        assert_eq!(advanced(&c, &[], "raw.customers", Some(at(200))), None);
        assert_eq!(advanced(&c, &[], "raw.customers", None), None);
        assert_eq!(advanced(&c, &[], "raw.nothing", Some(at(1))), None);
    }
}
