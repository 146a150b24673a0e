//! Restricted templating (SPEC §13, §94–97): `{{ ref("ns.model") }}`, `{{ source("ns", "t") }}`
//! and `{{ var("name") }}` only. Files without `{{` or `{%` are never touched. The rendered
//! text is plain SQL; the graph still comes from parsing it, never from the `ref` calls.

use minijinja::{Environment, Error, ErrorKind, UndefinedBehavior, Value};
use phlo_transform_core::diagnostic::codes;
use phlo_transform_core::Diagnostic;
use std::collections::BTreeMap;

pub fn needs_rendering(text: &str) -> bool {
    text.contains("{{") || text.contains("{%")
}

/// Renders `text` with only `ref`, `source` and `var` available.
pub fn render(
    text: &str,
    file: &str,
    vars: &BTreeMap<String, toml::Value>,
) -> Result<String, Diagnostic> {
    let mut env = Environment::new();
    env.set_undefined_behavior(UndefinedBehavior::Strict);
    env.add_function("ref", |name: String| -> Result<String, Error> { Ok(name) });
    env.add_function(
        "source",
        |schema: String, table: String| -> Result<String, Error> {
            Ok(format!("{schema}.{table}"))
        },
    );
    let vars = vars.clone();
    env.add_function(
        "var",
        move |name: String, default: Option<Value>| -> Result<Value, Error> {
            match vars.get(&name) {
                Some(v) => Ok(toml_to_value(v)),
                None => default.ok_or_else(|| {
                    Error::new(
                        ErrorKind::InvalidOperation,
                        format!("variable `{name}` is not set in phlo.toml [vars]"),
                    )
                }),
            }
        },
    );
    env.render_str(text, ()).map_err(|e| {
        let line = e.line().unwrap_or(1);
        Diagnostic::error(codes::TEMPLATE_ERROR, format!("template error: {}", e.detail().unwrap_or(&e.to_string())))
            .in_file(file)
            .at(line, 1)
            .with_help("only {{ ref(\"…\") }}, {{ source(\"…\", \"…\") }} and {{ var(\"…\") }} are available; prefer plain SQL names")
    })
}

fn toml_to_value(v: &toml::Value) -> Value {
    match v {
        toml::Value::String(s) => Value::from(s.clone()),
        toml::Value::Integer(i) => Value::from(*i),
        toml::Value::Float(f) => Value::from(*f),
        toml::Value::Boolean(b) => Value::from(*b),
        other => Value::from(other.to_string()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ref_source_and_var() {
        let mut vars = BTreeMap::new();
        vars.insert("site".to_string(), toml::Value::String("oxford".into()));
        let out = render(
            "select * from {{ ref(\"assay.results\") }} join {{ source(\"lims\", \"samples\") }} using (id) where site = '{{ var(\"site\") }}'",
            "m.sql",
            &vars,
        )
        .unwrap();
        assert_eq!(
            out,
            "select * from assay.results join lims.samples using (id) where site = 'oxford'"
        );
    }

    #[test]
    fn unknown_var_and_other_functions_fail() {
        let err = render("select '{{ var(\"nope\") }}'", "m.sql", &BTreeMap::new()).unwrap_err();
        assert_eq!(err.code, codes::TEMPLATE_ERROR);
        assert!(err.message.contains("nope"), "{}", err.message);
        assert!(render("{{ run_query('x') }}", "m.sql", &BTreeMap::new()).is_err());
    }
}
