//! The selector table over a small compiled workspace:
//!
//! ```text
//! raw.orders → sales.staging.orders ─┐
//! raw.customers → sales.staging.customers (ephemeral) ─┴→ sales.marts.revenue → finance.revenue → ops.daily
//! ```

use super::*;
use crate::{plan, PlanInputs, ReasonKind};
use phlo_transform_compiler::CatalogSnapshot;
use phlo_transform_project::Workspace;
use std::collections::{HashMap, HashSet};

fn workspace() -> (tempfile::TempDir, &'static Compilation) {
    let dir = tempfile::tempdir().unwrap();
    let files = [
        ("phlo.toml", ""),
        ("sources/raw/orders.csv", "id,customer_id,amount\n1,1,2.5\n"),
        ("sources/raw/customers.csv", "id,name\n1,ada\n"),
        (
            "transforms/sales/staging/orders.sql",
            "-- @tags core\nselect id, customer_id, amount from raw.orders\n",
        ),
        (
            "transforms/sales/staging/customers.sql",
            "-- @ephemeral\nselect id, name from raw.customers\n",
        ),
        (
            "transforms/sales/marts/revenue.sql",
            "-- @table\n-- @tags core, mart\nselect c.name, sum(o.amount) as amount\nfrom sales.staging.orders as o\njoin sales.staging.customers as c on c.id = o.customer_id\ngroup by c.name\n",
        ),
        (
            "transforms/finance/revenue.sql",
            "select name, amount from sales.marts.revenue\n",
        ),
        ("workflows/ops/transforms/daily.sql", "select name from finance.revenue\n"),
    ];
    for (path, text) in files {
        let p = dir.path().join(path);
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(p, text).unwrap();
    }
    let ws = Workspace::load(dir.path()).unwrap();
    let (catalog, diags) = CatalogSnapshot::load(&ws);
    let c = Box::leak(Box::new(Compilation::compile(ws, catalog, diags)));
    assert!(!c.has_errors(), "{:?}", c.diagnostics);
    (dir, c)
}

fn spec(include: &[&str]) -> SelectorSpec {
    SelectorSpec {
        include: include.iter().map(|s| s.to_string()).collect(),
        ..SelectorSpec::default()
    }
}

/// `name:membership` of every member, in model (name) order.
fn members(c: &Compilation, s: &Selection) -> Vec<String> {
    (0..c.models.len())
        .filter_map(|i| {
            let m = s.membership(i)?;
            let tag = match (m, s.is_excluded(i)) {
                (_, true) => "excluded-dependency",
                (Membership::Selected, _) => "selected",
                (Membership::Expanded, _) => "expanded",
                (Membership::Dependency, _) => "dependency",
            };
            Some(format!("{}:{tag}", c.models[i].name))
        })
        .collect()
}

fn resolve(c: &Compilation, s: &SelectorSpec) -> Result<Vec<String>, Vec<Diagnostic>> {
    let changed = || BTreeSet::from([c.model_index("sales.staging.orders").unwrap()]);
    select(c, s, &changed).map(|sel| members(c, &sel))
}

#[test]
fn selector_table() {
    let (_dir, c) = workspace();
    let orders = "sales.staging.orders";
    let customers = "sales.staging.customers";
    let revenue = "sales.marts.revenue";
    let fin = "finance.revenue";
    let daily = "ops.daily";
    let all = [fin, daily, revenue, customers, orders];
    let m = |pairs: &[(&str, &str)]| -> Vec<String> {
        let mut v: Vec<String> = pairs.iter().map(|(n, t)| format!("{n}:{t}")).collect();
        v.sort();
        v
    };
    let sel = |names: &[&str]| m(&names.iter().map(|n| (*n, "selected")).collect::<Vec<_>>());
    let with = |base: &[(&str, &str)]| m(base);
    let table: Vec<(SelectorSpec, Vec<String>)> = vec![
        (spec(&[]), sel(&all)),
        (spec(&["all"]), sel(&all)),
        (spec(&["*"]), sel(&all)),
        (
            spec(&["tag:core"]),
            with(&[
                (orders, "selected"),
                (revenue, "selected"),
                (customers, "dependency"),
            ]),
        ),
        (
            spec(&["namespace:sales"]),
            sel(&[orders, customers, revenue]),
        ),
        (spec(&["source:raw.orders"]), sel(&[orders])),
        (spec(&["source:raw"]), sel(&[orders, customers])),
        (spec(&["changed"]), sel(&[orders])),
        (
            spec(&["changed+"]),
            with(&[
                (orders, "selected"),
                (revenue, "expanded"),
                (fin, "expanded"),
                (daily, "expanded"),
                (customers, "dependency"),
            ]),
        ),
        (
            spec(&[fin]),
            with(&[
                (fin, "selected"),
                (revenue, "dependency"),
                (orders, "dependency"),
                (customers, "dependency"),
            ]),
        ),
        (
            spec(&["model://finance/revenue"]),
            with(&[
                (fin, "selected"),
                (revenue, "dependency"),
                (orders, "dependency"),
                (customers, "dependency"),
            ]),
        ),
        (spec(&["sales.staging.*"]), sel(&[orders, customers])),
        (
            spec(&["daily"]),
            with(&[
                (daily, "selected"),
                (fin, "dependency"),
                (revenue, "dependency"),
                (orders, "dependency"),
                (customers, "dependency"),
            ]),
        ),
        (
            spec(&["marts.revenue"]),
            with(&[
                (revenue, "selected"),
                (orders, "dependency"),
                (customers, "dependency"),
            ]),
        ),
        (
            spec(&["+finance.revenue"]),
            with(&[
                (fin, "selected"),
                (revenue, "expanded"),
                (orders, "expanded"),
                (customers, "expanded"),
            ]),
        ),
        (
            spec(&["finance.revenue+"]),
            with(&[
                (fin, "selected"),
                (daily, "expanded"),
                (revenue, "dependency"),
                (orders, "dependency"),
                (customers, "dependency"),
            ]),
        ),
        (
            SelectorSpec {
                downstream: true,
                ..spec(&[revenue])
            },
            with(&[
                (revenue, "selected"),
                (fin, "expanded"),
                (daily, "expanded"),
                (orders, "dependency"),
                (customers, "dependency"),
            ]),
        ),
        (
            SelectorSpec {
                upstream: true,
                ..spec(&[revenue])
            },
            with(&[
                (revenue, "selected"),
                (orders, "expanded"),
                (customers, "expanded"),
            ]),
        ),
        (
            SelectorSpec {
                tags: vec!["mart".into()],
                ..spec(&[])
            },
            with(&[
                (revenue, "selected"),
                (orders, "dependency"),
                (customers, "dependency"),
            ]),
        ),
        (
            SelectorSpec {
                workflows: vec!["ops".into()],
                ..spec(&[])
            },
            with(&[
                (daily, "selected"),
                (fin, "dependency"),
                (revenue, "dependency"),
                (orders, "dependency"),
                (customers, "dependency"),
            ]),
        ),
        (
            SelectorSpec {
                exclude: vec![revenue.into()],
                ..spec(&[daily, fin])
            },
            with(&[
                (daily, "selected"),
                (fin, "selected"),
                (revenue, "excluded-dependency"),
            ]),
        ),
        (
            SelectorSpec {
                exclude: vec!["sales.*".into()],
                ..spec(&["+daily"])
            },
            with(&[
                (daily, "selected"),
                (fin, "expanded"),
                (revenue, "excluded-dependency"),
            ]),
        ),
        (
            SelectorSpec {
                exclude: vec![customers.into()],
                ..spec(&[revenue])
            },
            with(&[
                (revenue, "selected"),
                (orders, "dependency"),
                (customers, "excluded-dependency"),
            ]),
        ),
    ];
    for (s, want) in table {
        let mut got = resolve(c, &s).unwrap_or_else(|e| panic!("{s:?}: {e:?}"));
        got.sort();
        assert_eq!(got, want, "{s:?}");
    }
}

#[test]
fn selector_errors_have_codes_and_suggestions() {
    let (_dir, c) = workspace();
    let error = |s: SelectorSpec| -> Vec<(String, Vec<String>)> {
        resolve(c, &s)
            .expect_err("an error")
            .into_iter()
            .map(|d| (d.code.0.to_string(), d.suggestions))
            .collect()
    };
    let one = |code: &str, suggestions: &[&str]| {
        vec![(
            code.to_string(),
            suggestions
                .iter()
                .map(|s| s.to_string())
                .collect::<Vec<_>>(),
        )]
    };
    assert_eq!(
        error(spec(&["finance.revenu"])),
        one("L005", &["finance.revenue", "sales.marts.revenue"])
    );
    assert_eq!(
        error(spec(&["revenue"])),
        one("L006", &["finance.revenue", "sales.marts.revenue"])
    );
    assert_eq!(error(spec(&["tag:cor"])), one("L005", &["core"]));
    assert_eq!(error(spec(&["namespace:sale"])), one("L005", &["sales"]));
    assert_eq!(
        error(spec(&["source:raw.ordrs"])),
        one("L005", &["raw.orders", "raw", "raw.customers"])
    );
    assert_eq!(error(spec(&["billing.*"])), one("L005", &[]));
    assert_eq!(error(spec(&["++orders"])), one("L007", &[]));
    assert_eq!(error(spec(&["kind:x"])), one("L007", &[]));
    assert_eq!(error(spec(&["tag:"])), one("L007", &[]));
    assert_eq!(
        error(SelectorSpec {
            tags: vec!["mrt".into()],
            ..spec(&[])
        }),
        one("L005", &["mart"])
    );
    assert_eq!(
        error(SelectorSpec {
            workflows: vec!["opz".into()],
            ..spec(&[])
        }),
        one("L005", &["ops"])
    );
    assert_eq!(
        error(SelectorSpec {
            since: Some("main".into()),
            ..spec(&["finance.revenue"])
        }),
        one("L007", &[])
    );
    assert_eq!(
        error(SelectorSpec {
            exclude: vec!["all".into()],
            ..spec(&[])
        }),
        one("L004", &[])
    );
    // Several problems are reported together.
    assert_eq!(error(spec(&["tag:cor", "finance.revenu"])).len(), 2);
}

#[test]
fn changed_matching_nothing_is_an_empty_selection_not_an_error() {
    let (_dir, c) = workspace();
    let s = select(c, &spec(&["changed+"]), &BTreeSet::new).unwrap();
    assert!(s.matched.is_empty() && s.expanded.is_empty());
}

fn inputs<'a>(
    materialized: &'a HashMap<String, phlo_transform_state::MaterializedVersion>,
    existing: &'a HashSet<String>,
    relation_of: &'a dyn Fn(usize) -> String,
) -> PlanInputs<'a> {
    PlanInputs {
        environment: "test",
        adapter: "none",
        materialized,
        existing_relations: existing,
        relation_of,
        built_strategies: Box::leak(Box::default()),
        freshness: &[],
        adoptable: Box::leak(Box::default()),
        output_identities: Box::leak(Box::default()),
    }
}

#[test]
fn dependencies_build_only_when_missing_and_excluded_missing_rejects() {
    let (_dir, c) = workspace();
    let (materialized, existing) = (HashMap::new(), HashSet::new());
    let relation_of = |i: usize| c.models[i].name.to_string();
    let inputs = inputs(&materialized, &existing, &relation_of);
    let s = select(c, &spec(&["finance.revenue"]), &BTreeSet::new).unwrap();
    let p = plan(c, &inputs, &s).unwrap();
    let rows: Vec<(String, Membership, ReasonKind)> = p
        .models
        .iter()
        .map(|m| (m.name.clone(), m.membership, m.reasons[0].kind))
        .collect();
    assert_eq!(
        rows,
        [
            (
                "sales.staging.orders".into(),
                Membership::Dependency,
                ReasonKind::SelectedDependency
            ),
            (
                "sales.marts.revenue".into(),
                Membership::Dependency,
                ReasonKind::SelectedDependency
            ),
            (
                "finance.revenue".into(),
                Membership::Selected,
                ReasonKind::MissingRelation
            ),
        ]
    );
    assert_eq!(p.ephemeral, ["sales.staging.customers"]);
    assert_eq!(
        p.selection.required,
        [
            "sales.staging.customers",
            "sales.staging.orders",
            "sales.marts.revenue"
        ]
    );

    let excluded = SelectorSpec {
        exclude: vec!["sales.marts.revenue".into()],
        ..spec(&["finance.revenue"])
    };
    let s = select(c, &excluded, &BTreeSet::new).unwrap();
    let err = plan(c, &inputs, &s).unwrap_err();
    assert_eq!(err.code, codes::EXCLUDED_DEPENDENCY_MISSING);
    // An excluded ephemeral dependency is inlined: never a reason to reject.
    let ephemeral = SelectorSpec {
        exclude: vec!["sales.staging.customers".into()],
        ..spec(&["sales.marts.revenue"])
    };
    let s = select(c, &ephemeral, &BTreeSet::new).unwrap();
    assert!(plan(c, &inputs, &s).is_ok());
}

#[test]
fn name_patterns_match_as_the_selector_syntax_says() {
    let m = |pattern: &str, name: &str| glob_matches(&name_glob(pattern), name);
    // `*` crosses dots and may be empty; `?` is exactly one character.
    assert!(m("sales.*", "sales.staging.orders"));
    assert!(m("*orders", "orders"));
    assert!(m("s*s.*.o?ders", "sales.staging.orders"));
    assert!(!m("s?les", "sles"));
    assert!(!m("sales.*", "salesx"));
    // Everything else is itself: no classes, alternatives or path rules.
    assert!(!m("sales.[ab]", "sales.a"));
    assert!(!m("{sales,ops}.*", "sales.orders"));
    assert!(m("**", "a.b"));
    assert!(!m("**/orders", "orders"));
}
