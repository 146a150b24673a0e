//! dbt's generic tests as phlo-transform's: `not_null` becomes the model's `@not-null`
//! directive, `unique`, `accepted_values` and `relationships` a data test under `tests/`
//! whose rows are the violations, with dbt's semantics (NULLs pass `unique`,
//! `accepted_values` and `relationships`). A `where` setting filters the tested relation;
//! `severity: warn`, other settings and other tests are not converted.

use super::jinja::{parse_call, Literal, Reference};
use super::properties::TestSpec;

/// A converted test.
#[derive(Debug, PartialEq)]
pub(crate) enum Converted {
    /// The column goes into the model's `@not-null`.
    NotNull(String),
    /// A data test file: its name (the file's stem) and its SQL.
    File { name: String, sql: String },
}

/// Settings that do not change what a test checks.
const HARMLESS: &[&str] = &["tags", "meta", "enabled", "description", "name"];

fn arg<'a>(spec: &'a TestSpec, key: &str) -> Option<&'a Literal> {
    spec.args.iter().find(|(k, _)| k == key).map(|(_, v)| v)
}

fn quote(value: &Literal, quoted: bool) -> Option<String> {
    match (value, quoted) {
        (Literal::Str(s), true) => Some(format!("'{}'", s.replace('\'', "''"))),
        (Literal::Str(s), false) => Some(s.clone()),
        (Literal::Number(n), _) => Some(n.clone()),
        (Literal::Bool(b), _) => Some(b.to_string()),
        _ => None,
    }
}

/// Converts `spec`, a test of `column` (or of the whole relation) of the relation `target`
/// (`target_short` names it in the test's name); `resolve` names what `relationships` points
/// at. `Err` says why it is not converted.
pub(crate) fn convert(
    spec: &TestSpec,
    target: &str,
    target_short: &str,
    column: Option<&str>,
    resolve: &mut dyn FnMut(&Reference) -> Result<String, String>,
) -> Result<Converted, String> {
    let test = spec.name.as_str();
    for (key, value) in &spec.args {
        let known = match (test, key.as_str()) {
            (_, "where" | "column_name" | "model") => true,
            (_, "severity") => matches!(value, Literal::Str(s) if s.eq_ignore_ascii_case("error")),
            ("accepted_values", "values" | "quote") => true,
            ("relationships", "to" | "field") => true,
            (_, k) => HARMLESS.contains(&k),
        };
        if !known {
            return Err(format!("test `{test}` with `{key}: {value}`"));
        }
    }
    if matches!(arg(spec, "enabled"), Some(Literal::Bool(false))) {
        return Err(format!("test `{test}` is disabled"));
    }
    let column = match (column, arg(spec, "column_name")) {
        (_, Some(Literal::Str(c))) => c.clone(),
        (Some(c), _) => c.to_string(),
        (None, _) => return Err(format!("test `{test}` without a column")),
    };
    let filtered = match arg(spec, "where") {
        Some(Literal::Str(w)) => format!("(select * from {target} where {w})"),
        Some(other) => return Err(format!("test `{test}` with `where: {other}`")),
        None => target.to_string(),
    };
    let name = format!("{test}_{target_short}_{column}");
    let sql = match test {
        "not_null" if arg(spec, "where").is_none() => return Ok(Converted::NotNull(column)),
        "not_null" => format!("select {column}\nfrom {filtered} as t\nwhere {column} is null\n"),
        "unique" => format!(
            "select {column}, count(*) as n_records\nfrom {filtered} as t\nwhere {column} is not null\ngroup by {column}\nhaving count(*) > 1\n"
        ),
        "accepted_values" => {
            let quoted = !matches!(arg(spec, "quote"), Some(Literal::Bool(false)));
            let values = match arg(spec, "values") {
                Some(Literal::List(items)) => items
                    .iter()
                    .map(|v| quote(v, quoted))
                    .collect::<Option<Vec<_>>>()
                    .ok_or_else(|| "accepted_values with values that are not literals".to_string())?,
                _ => return Err("accepted_values without a list of `values`".into()),
            };
            format!(
                "select {column}, count(*) as n_records\nfrom {filtered} as t\nwhere {column} not in ({})\ngroup by {column}\n",
                values.join(", ")
            )
        }
        "relationships" => {
            let to = match arg(spec, "to") {
                Some(Literal::Str(to)) => to,
                _ => return Err("relationships without `to`".into()),
            };
            let Some(Literal::Str(field)) = arg(spec, "field") else {
                return Err("relationships without `field`".into());
            };
            let reference = parse_call(to)
                .and_then(|call| match (call.name.as_str(), call.args.as_slice()) {
                    ("ref", [Literal::Str(n)]) => Some(Reference::Ref(n.clone())),
                    ("source", [Literal::Str(s), Literal::Str(t)]) => {
                        Some(Reference::Source(s.clone(), t.clone()))
                    }
                    _ => None,
                })
                .ok_or_else(|| format!("relationships to `{to}`"))?;
            let parent = resolve(&reference)?;
            format!(
                "select child.{column}\nfrom {filtered} as child\nleft join {parent} as parent on child.{column} = parent.{field}\nwhere child.{column} is not null and parent.{field} is null\n"
            )
        }
        other => return Err(format!("test `{other}` (only not_null, unique, accepted_values and relationships are converted)")),
    };
    Ok(Converted::File { name, sql })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spec(name: &str, args: Vec<(&str, Literal)>) -> TestSpec {
        TestSpec {
            name: name.into(),
            args: args.into_iter().map(|(k, v)| (k.to_string(), v)).collect(),
            file: "models/schema.yml".into(),
            line: 3,
        }
    }

    fn resolve(r: &Reference) -> Result<String, String> {
        match r {
            Reference::Ref(n) => Ok(format!("shop.{n}")),
            Reference::Source(s, t) => Ok(format!("{s}.{t}")),
        }
    }

    #[test]
    fn the_four_tests_convert_with_dbts_semantics() {
        let c = |s: &TestSpec| convert(s, "shop.orders", "orders", Some("status"), &mut resolve);
        assert_eq!(
            c(&spec("not_null", vec![])).unwrap(),
            Converted::NotNull("status".into())
        );
        let values = Literal::List(vec![
            Literal::Str("placed".into()),
            Literal::Str("o'k".into()),
        ]);
        let Converted::File { name, sql } =
            c(&spec("accepted_values", vec![("values", values)])).unwrap()
        else {
            panic!()
        };
        assert_eq!(name, "accepted_values_orders_status");
        assert!(
            sql.contains("where status not in ('placed', 'o''k')"),
            "{sql}"
        );
        let to = Literal::Str("ref('customers')".into());
        let field = Literal::Str("customer_id".into());
        let Converted::File { sql, .. } =
            c(&spec("relationships", vec![("to", to), ("field", field)])).unwrap()
        else {
            panic!()
        };
        assert!(
            sql.contains("left join shop.customers as parent on child.status = parent.customer_id"),
            "{sql}"
        );
        let Converted::File { sql, .. } = c(&spec(
            "unique",
            vec![("where", Literal::Str("x > 1".into()))],
        ))
        .unwrap() else {
            panic!()
        };
        assert!(
            sql.contains("from (select * from shop.orders where x > 1) as t"),
            "{sql}"
        );
    }

    #[test]
    fn other_tests_and_settings_are_refused_with_the_reason() {
        let c = |s: &TestSpec| convert(s, "shop.orders", "orders", Some("id"), &mut resolve);
        assert_eq!(
            c(&spec(
                "unique",
                vec![("severity", Literal::Str("warn".into()))]
            ))
            .unwrap_err(),
            "test `unique` with `severity: 'warn'`"
        );
        assert!(c(&spec("dbt_utils.expression_is_true", vec![]))
            .unwrap_err()
            .starts_with("test `dbt_utils.expression_is_true`"));
    }
}
