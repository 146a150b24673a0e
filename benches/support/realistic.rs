//! The realistic generator (`PHLO_BENCH_SHAPE=realistic`): workspaces shaped like the ones
//! users write, so benchmarks measure what they will see (issue 17).
//!
//! - 6 namespaces (`crm`, `billing`, `web`, `product` under `transforms/<ns>/`, `ops` and
//!   `finance` under `workflows/<ns>/transforms/`), each root with a `transform.toml`.
//! - Typed CSV sources per namespace (`orders`, `customers`, `payments`, `events`): integers,
//!   decimals, strings, dates and timestamps, inferred by the catalog.
//! - Three layers: `staging` (20 % of the models, views over the sources), `intermediate`
//!   (50 %, in three tiers, the middle one materialised as tables) and `marts` (30 %, tables).
//!   Model `i` is `<ns>.<layer>.<prefix>_<entity>_<i>`, namespace `i % 6`.
//! - A model reads 1–3 models of the tier below, from its own namespace four times in five.
//!   Queries are about 1.5 KB, with comment headers, and contain on average one join, one
//!   CTE, one aggregate and one window: deduplication windows, per-customer aggregates joined
//!   back, unions regrouped by key, running totals, ranks.
//!
//! Every model returns the same eight typed columns (`id`, `customer_id`, `segment`,
//! `status`, `amount`, `quantity`, `event_date`, `updated_at`) with `id` unique, so any model
//! can read any other, the workspace runs on the local engine and its key tests pass.

use super::{Lcg, Summary};
use std::fmt::Write as _;
use std::io;
use std::path::Path;

pub const NAMESPACES: [&str; 6] = ["crm", "billing", "web", "product", "ops", "finance"];
const ORDERS: usize = 300;
const CUSTOMERS: usize = 60;
const ENTITIES: [&str; 8] = [
    "orders",
    "customers",
    "revenue",
    "sessions",
    "accounts",
    "invoices",
    "churn",
    "usage",
];

/// A source column that feeds most of the workspace (for lineage and impact benches).
pub const PROBE_COLUMN: &str = "crm.orders.amount";

/// Tier of model `i` of `n`: 0 staging, 1–3 intermediate, 4 marts.
fn tier_of(i: usize, n: usize) -> usize {
    let pct = i * 100 / n;
    match pct {
        0..=19 => 0,
        20..=36 => 1,
        37..=53 => 2,
        54..=69 => 3,
        _ => 4,
    }
}

fn root_dir(ns: usize) -> String {
    let name = NAMESPACES[ns];
    if ns >= 4 {
        format!("workflows/{name}/transforms")
    } else {
        format!("transforms/{name}")
    }
}

fn layer(tier: usize) -> &'static str {
    match tier {
        0 => "staging",
        1..=3 => "intermediate",
        _ => "marts",
    }
}

fn prefix(tier: usize, i: usize) -> &'static str {
    match tier {
        0 => "stg",
        1..=3 => "int",
        _ if i.is_multiple_of(3) => "dim",
        _ => "fct",
    }
}

fn model_name(i: usize, n: usize) -> (usize, String, String) {
    let ns = i % NAMESPACES.len();
    let tier = tier_of(i, n);
    let file = format!(
        "{}_{}_{i:05}",
        prefix(tier, i),
        ENTITIES[(i / NAMESPACES.len()) % ENTITIES.len()]
    );
    let name = format!("{}.{}.{file}", NAMESPACES[ns], layer(tier));
    (ns, file, name)
}

/// The eight output columns, cast so every model has exactly the same schema.
fn output(alias: &str) -> String {
    format!(
        "select\n    cast({a}id as bigint) as id,\n    cast({a}customer_id as bigint) as customer_id,\n    \
         cast({a}segment as varchar) as segment,\n    cast({a}status as varchar) as status,\n    \
         cast(round({a}amount, 2) as double) as amount,\n    cast({a}quantity as bigint) as quantity,\n    \
         cast({a}event_date as date) as event_date,\n    cast({a}updated_at as timestamp) as updated_at\n",
        a = alias
    )
}

fn write_sources(dir: &Path, ns: usize, rng: &mut Lcg) -> io::Result<()> {
    let name = NAMESPACES[ns];
    let src = dir.join("sources").join(name);
    std::fs::create_dir_all(&src)?;
    let statuses = ["placed", "shipped", "completed", "returned", "cancelled"];
    let segments = ["enterprise", "smb", "consumer", "partner"];
    let date = |rng: &mut Lcg| format!("2024-{:02}-{:02}", 1 + rng.below(12), 1 + rng.below(28));
    let ts = |rng: &mut Lcg| {
        format!(
            "2024-{:02}-{:02}T{:02}:{:02}:{:02}",
            1 + rng.below(12),
            1 + rng.below(28),
            rng.below(24),
            rng.below(60),
            rng.below(60)
        )
    };
    let mut orders = String::from("id,customer_id,status,amount,quantity,order_date,updated_at\n");
    for id in 1..=ORDERS {
        let _ = writeln!(
            orders,
            "{id},{},{},{:.2},{},{},{}",
            1 + rng.below(CUSTOMERS),
            statuses[rng.below(statuses.len())],
            rng.below(500_000) as f64 / 100.0 + 0.5,
            1 + rng.below(20),
            date(rng),
            ts(rng)
        );
    }
    std::fs::write(src.join("orders.csv"), orders)?;
    let mut customers = String::from("id,name,segment,country,created_at\n");
    for id in 1..=CUSTOMERS {
        let _ = writeln!(
            customers,
            "{id},Customer {id},{},{},{}",
            segments[rng.below(segments.len())],
            ["DE", "FR", "US", "JP", "BR"][rng.below(5)],
            ts(rng)
        );
    }
    std::fs::write(src.join("customers.csv"), customers)?;
    let mut payments = String::from("id,order_id,method,amount,paid_at\n");
    for id in 1..=ORDERS * 2 {
        let _ = writeln!(
            payments,
            "{id},{},{},{:.2},{}",
            1 + rng.below(ORDERS),
            ["card", "transfer", "voucher"][rng.below(3)],
            rng.below(200_000) as f64 / 100.0 + 0.5,
            ts(rng)
        );
    }
    std::fs::write(src.join("payments.csv"), payments)?;
    let mut events = String::from("id,customer_id,kind,value,event_ts\n");
    for id in 1..=ORDERS * 2 {
        let _ = writeln!(
            events,
            "{id},{},{},{},{}",
            1 + rng.below(CUSTOMERS),
            ["view", "click", "signup", "purchase"][rng.below(4)],
            rng.below(1000),
            ts(rng)
        );
    }
    std::fs::write(src.join("events.csv"), events)
}

/// Staging: one source, cleaned in a CTE, joined to customers, deduplicated by a window.
fn staging(sql: &mut String, ns: &str, i: usize) -> usize {
    match i % 3 {
        0 => {
            let _ = write!(
                sql,
                "with source_orders as (\n    \
                     select id, customer_id, lower(trim(status)) as status, amount, quantity,\n           \
                            order_date, updated_at\n    \
                     from {ns}.orders\n    \
                     where amount is not null and quantity > 0\n\
                 ),\n\
                 deduplicated as (\n    \
                     select o.*, row_number() over (partition by o.id order by o.updated_at desc) as rn\n    \
                     from source_orders as o\n\
                 ),\n\
                 customers as (\n    \
                     select id, coalesce(segment, 'unknown') as segment from {ns}.customers\n\
                 )\n\
                 {out}\
                 from (\n    \
                     select d.id, d.customer_id, c.segment, d.status,\n           \
                            case when d.status = 'returned' then -d.amount else d.amount * {f} end as amount,\n           \
                            d.quantity, d.order_date as event_date, d.updated_at\n    \
                     from deduplicated as d\n    \
                     left join customers as c on c.id = d.customer_id\n    \
                     where d.rn = 1\n\
                 ) as cleaned\n",
                out = output("cleaned."),
                f = 1 + i % 4,
            );
            2
        }
        1 => {
            let _ = write!(
                sql,
                "with paid as (\n    \
                     select order_id, count(*) as payments, sum(amount) as paid_amount,\n           \
                            max(paid_at) as last_paid_at\n    \
                     from {ns}.payments\n    \
                     where method <> 'voucher'\n    \
                     group by order_id\n\
                 )\n\
                 {out}\
                 from (\n    \
                     select o.id, o.customer_id, c.segment,\n           \
                            case when p.paid_amount >= o.amount then 'paid' else 'open' end as status,\n           \
                            coalesce(p.paid_amount, 0) as amount, p.payments as quantity,\n           \
                            o.order_date as event_date, coalesce(p.last_paid_at, o.updated_at) as updated_at,\n           \
                            rank() over (partition by o.customer_id order by o.updated_at) as nth_order\n    \
                     from {ns}.orders as o\n    \
                     join paid as p on p.order_id = o.id\n    \
                     left join {ns}.customers as c on c.id = o.customer_id\n\
                 ) as payments_by_order\n\
                 where nth_order >= 1\n",
                out = output("payments_by_order."),
            );
            3
        }
        _ => {
            let _ = write!(
                sql,
                "with activity as (\n    \
                     select customer_id, count(*) as events, sum(value) as total_value,\n           \
                            max(event_ts) as last_seen,\n           \
                            sum(case when kind = 'purchase' then 1 else 0 end) as purchases\n    \
                     from {ns}.events\n    \
                     group by customer_id\n\
                 )\n\
                 {out}\
                 from (\n    \
                     select c.id, c.id as customer_id, c.segment,\n           \
                            case when a.purchases > {r} then 'active' else 'dormant' end as status,\n           \
                            cast(a.total_value as double) / greatest(a.events, 1) as amount,\n           \
                            a.events as quantity, cast(a.last_seen as date) as event_date,\n           \
                            a.last_seen as updated_at,\n           \
                            dense_rank() over (partition by c.segment order by a.total_value desc) as value_rank\n    \
                     from {ns}.customers as c\n    \
                     join activity as a on a.customer_id = c.id\n\
                 ) as customer_activity\n\
                 where value_rank > 0\n",
                out = output("customer_activity."),
                r = i % 3,
            );
            2
        }
    }
}

/// Intermediate and marts: 1–3 models of the tier below.
fn transform(sql: &mut String, p: &[String], i: usize) {
    match (p.len(), i % 2) {
        (1, 0) => {
            let _ = write!(
                sql,
                "with base as (\n    \
                     select * from {p0} where amount is not null\n\
                 ),\n\
                 per_customer as (\n    \
                     select customer_id, count(*) as orders, sum(amount) as lifetime_amount,\n           \
                            avg(quantity) as avg_quantity\n    \
                     from base\n    \
                     group by customer_id\n\
                 )\n\
                 {out}\
                 from (\n    \
                     select b.id, b.customer_id, b.segment,\n           \
                            case when pc.lifetime_amount > {t} then 'high'\n                 \
                                 when sum(b.amount) over (partition by b.customer_id order by b.event_date, b.id\n                                          \
                                                          rows between unbounded preceding and current row) > {t} then 'rising'\n                 \
                                 when pc.orders > 3 then 'repeat' else b.status end as status,\n           \
                            b.amount * (1 + pc.avg_quantity / 1000.0) as amount,\n           \
                            b.quantity, b.event_date, b.updated_at\n    \
                     from base as b\n    \
                     left join per_customer as pc on pc.customer_id = b.customer_id\n\
                 ) as enriched\n",
                p0 = p[0],
                out = output("enriched."),
                t = 1000 + i % 5000,
            );
        }
        (1, _) => {
            let _ = write!(
                sql,
                "with ranked as (\n    \
                     select id, customer_id, segment, status, amount, quantity, event_date, updated_at,\n           \
                            lag(amount) over (partition by customer_id order by event_date, id) as previous_amount,\n           \
                            row_number() over (partition by id order by updated_at desc) as rn\n    \
                     from {p0}\n\
                 )\n\
                 {out}\
                 from (\n    \
                     select id, customer_id, segment,\n           \
                            case when previous_amount is null then 'first'\n                 \
                                 when amount > previous_amount then 'growing' else status end as status,\n           \
                            amount,\n           \
                            quantity, event_date, updated_at\n    \
                     from ranked\n    \
                     where rn = 1 and id % {m} <> {r}\n\
                 ) as changes\n",
                p0 = p[0],
                out = output("changes."),
                m = 13 + i % 7,
                r = i % 5,
            );
        }
        (2, 0) => {
            let _ = write!(
                sql,
                "with left_side as (\n    \
                     select id, customer_id, segment, status, amount, quantity, event_date, updated_at\n    \
                     from {p0}\n\
                 ),\n\
                 right_side as (\n    \
                     select id, max(amount) as amount, sum(quantity) as quantity, max(updated_at) as updated_at\n    \
                     from {p1}\n    \
                     group by id\n\
                 )\n\
                 {out}\
                 from (\n    \
                     select l.id, l.customer_id, l.segment, l.status,\n           \
                            greatest(l.amount, coalesce(r.amount, 0)) as amount,\n           \
                            l.quantity + coalesce(r.quantity, 0) as quantity, l.event_date,\n           \
                            coalesce(r.updated_at, l.updated_at) as updated_at,\n           \
                            percent_rank() over (partition by l.segment order by l.amount) as pct\n    \
                     from left_side as l\n    \
                     left join right_side as r on r.id = l.id\n\
                 ) as matched\n\
                 where pct >= 0\n",
                p0 = p[0],
                p1 = p[1],
                out = output("matched."),
            );
        }
        (2, _) => {
            let _ = write!(
                sql,
                "with combined as (\n    \
                     select id, customer_id, segment, status, amount, quantity, event_date, updated_at from {p0}\n    \
                     union all\n    \
                     select id, customer_id, segment, status, amount, quantity, event_date, updated_at from {p1}\n\
                 ),\n\
                 per_id as (\n    \
                     select id, min(customer_id) as customer_id, max(segment) as segment, max(status) as status,\n           \
                            sum(amount) as amount, sum(quantity) as quantity, max(event_date) as event_date,\n           \
                            max(updated_at) as updated_at\n    \
                     from combined\n    \
                     group by id\n    \
                     having count(*) >= 1\n\
                 )\n\
                 {out}\
                 from per_id as merged\n\
                 where merged.amount > -{t}\n",
                p0 = p[0],
                p1 = p[1],
                out = output("merged."),
                t = 100_000 + i,
            );
        }
        _ => {
            let _ = write!(
                sql,
                "with facts as (\n    \
                     select f.id, f.customer_id, f.segment, f.status, f.amount, f.quantity, f.event_date, f.updated_at\n    \
                     from {p0} as f\n    \
                     join {p1} as g on g.id = f.id\n\
                 ),\n\
                 customer_totals as (\n    \
                     select customer_id, sum(amount) as total, count(distinct status) as statuses\n    \
                     from {p2}\n    \
                     group by customer_id\n\
                 ),\n\
                 scored as (\n    \
                     select f.*, ct.total, ct.statuses,\n           \
                            ntile(4) over (partition by f.segment order by f.amount, f.id) as quartile\n    \
                     from facts as f\n    \
                     left join customer_totals as ct on ct.customer_id = f.customer_id\n\
                 )\n\
                 {out}\
                 from (\n    \
                     select id, customer_id, segment,\n           \
                            case when quartile = 4 then 'top' when statuses > 2 then 'mixed' else status end as status,\n           \
                            amount, quantity, event_date, updated_at\n    \
                     from scored\n\
                 ) as quartiles\n",
                p0 = p[0],
                p1 = p[1],
                p2 = p[2],
                out = output("quartiles."),
            );
        }
    }
}

pub fn generate(dir: &Path, n: usize) -> io::Result<Summary> {
    assert!(n >= 10, "the realistic shape needs at least 10 models");
    std::fs::write(
        dir.join("phlo.toml"),
        "# Realistic benchmark workspace (benches/support/realistic.rs).\n\
         [transform]\n\
         default_materialization = \"view\"\n\n\
         [transform.execution]\n\
         max_concurrency = 4\n",
    )?;
    let mut rng = Lcg::new(17);
    for (ns, namespace) in NAMESPACES.iter().enumerate() {
        write_sources(dir, ns, &mut rng)?;
        let root = dir.join(root_dir(ns));
        std::fs::create_dir_all(&root)?;
        std::fs::write(
            root.join("transform.toml"),
            format!("owner = \"team-{namespace}\"\n"),
        )?;
    }
    // Model indices of each tier (contiguous ranges).
    let mut ranges = [(usize::MAX, 0usize); 5];
    for i in 0..n {
        let t = tier_of(i, n);
        ranges[t].0 = ranges[t].0.min(i);
        ranges[t].1 = ranges[t].1.max(i + 1);
    }
    let mut summary = Summary {
        models: n,
        layers: 5,
        tables: 0,
        edges: 0,
        bytes: 0,
    };
    let mut created = std::collections::HashSet::new();
    for i in 0..n {
        let (ns, file, name) = model_name(i, n);
        let tier = tier_of(i, n);
        let folder = dir.join(root_dir(ns)).join(layer(tier));
        if created.insert(folder.clone()) {
            std::fs::create_dir_all(&folder)?;
        }
        let mut rng = Lcg::new(i as u64 * 104_729 + 3);
        let mut sql = String::with_capacity(2048);
        let _ = writeln!(
            sql,
            "-- {name}\n--\n-- {} model {i} of {n} in {}: one row per id, with the customer, segment,\n\
             -- status and amounts the downstream marts and dashboards read. Generated by\n\
             -- benches/support/realistic.rs; owned by team-{}.",
            layer(tier),
            NAMESPACES[ns],
            NAMESPACES[ns]
        );
        let table = tier == 2 || tier == 4;
        if table {
            summary.tables += 1;
            sql.push_str("-- @table\n-- @key id\n");
        }
        if rng.below(2) == 0 {
            let _ = writeln!(sql, "-- @tags {}, {}", layer(tier), NAMESPACES[ns]);
        }
        sql.push('\n');
        if tier == 0 {
            summary.edges += staging(&mut sql, NAMESPACES[ns], i);
        } else {
            let (lo, hi) = ranges[tier - 1];
            let want = match rng.below(10) {
                0..=3 => 1,
                4..=7 => 2,
                _ => 3,
            };
            let mut parents: Vec<usize> = Vec::with_capacity(3);
            while parents.len() < want.min(hi - lo) {
                let mut p = lo + rng.below(hi - lo);
                // Four times in five from the same namespace (same residue modulo 6).
                if rng.below(5) != 0 {
                    let shift = (ns + NAMESPACES.len() - p % NAMESPACES.len()) % NAMESPACES.len();
                    if p + shift < hi {
                        p += shift;
                    }
                }
                if !parents.contains(&p) {
                    parents.push(p);
                }
            }
            summary.edges += parents.len();
            let p: Vec<String> = parents.iter().map(|&p| model_name(p, n).2).collect();
            transform(&mut sql, &p, i);
        }
        summary.bytes += sql.len();
        std::fs::write(folder.join(format!("{file}.sql")), sql)?;
    }
    Ok(summary)
}
