//! Canonical row comparison across engines: rows as optional strings, compared as sets
//! (sorted), numbers equal within a relative 1e-6: engines round decimal division and
//! averages at different scales (DataFusion at 4–6 digits, PostgreSQL's numeric at 16+), and
//! some results are floats on one engine.

#![allow(dead_code)]

use std::cmp::Ordering;

pub type Row = Vec<Option<String>>;

/// A JSON value as the text a warehouse prints (`null` → `None`).
pub fn from_json(v: &serde_json::Value) -> Option<String> {
    match v {
        serde_json::Value::Null => None,
        serde_json::Value::String(s) => Some(s.clone()),
        other => Some(other.to_string()),
    }
}

/// Parses PostgreSQL's text form of a row value (`(1,"a b",,2.50)`): fields separated by
/// commas, double-quoted when they contain specials (`""` and `\` escape), empty = NULL.
pub fn parse_pg_record(text: &str) -> Row {
    let inner = &text[1..text.len() - 1];
    let mut fields = Vec::new();
    let mut chars = inner.chars().peekable();
    loop {
        let mut field = String::new();
        let mut quoted = false;
        let mut was_quoted = false;
        while let Some(c) = chars.next() {
            match c {
                '"' if !quoted => {
                    quoted = true;
                    was_quoted = true;
                }
                '"' if quoted => {
                    if chars.peek() == Some(&'"') {
                        chars.next();
                        field.push('"');
                    } else {
                        quoted = false;
                    }
                }
                '\\' if quoted => {
                    if let Some(n) = chars.next() {
                        field.push(n);
                    }
                }
                ',' if !quoted => break,
                other => field.push(other),
            }
        }
        fields.push((was_quoted || !field.is_empty()).then_some(field));
        if chars.peek().is_none() {
            // A trailing comma means one more (NULL) field.
            if inner.ends_with(',') {
                fields.push(None);
            }
            break;
        }
    }
    fields
}

fn number(s: &Option<String>) -> Option<f64> {
    s.as_deref().and_then(|s| s.parse::<f64>().ok())
}

fn cmp_field(a: &Option<String>, b: &Option<String>) -> Ordering {
    match (number(a), number(b)) {
        (Some(x), Some(y)) => x.partial_cmp(&y).unwrap_or(Ordering::Equal),
        _ => a.cmp(b),
    }
}

fn same_field(a: &Option<String>, b: &Option<String>) -> bool {
    match (number(a), number(b)) {
        (Some(x), Some(y)) => (x - y).abs() <= 1e-6 * x.abs().max(y.abs()).max(1.0),
        _ => a == b,
    }
}

pub fn sort(rows: &mut [Row]) {
    rows.sort_by(|a, b| {
        a.iter()
            .zip(b)
            .map(|(x, y)| cmp_field(x, y))
            .find(|o| *o != Ordering::Equal)
            .unwrap_or(Ordering::Equal)
    });
}

/// `None` when `a` and `b` hold the same rows; else the first difference.
pub fn difference(mut a: Vec<Row>, mut b: Vec<Row>) -> Option<String> {
    if a.len() != b.len() {
        return Some(format!("{} rows vs {} rows", a.len(), b.len()));
    }
    sort(&mut a);
    sort(&mut b);
    for (x, y) in a.iter().zip(&b) {
        let equal = x.len() == y.len() && x.iter().zip(y).all(|(p, q)| same_field(p, q));
        if !equal {
            return Some(format!("{x:?} vs {y:?}"));
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn records_parse() {
        assert_eq!(
            parse_pg_record("(1,\"a, b\",,2.50,\"say \"\"hi\"\"\")"),
            vec![
                Some("1".into()),
                Some("a, b".into()),
                None,
                Some("2.50".into()),
                Some("say \"hi\"".into())
            ]
        );
        assert_eq!(parse_pg_record("(1,)"), vec![Some("1".into()), None]);
    }
}
