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

/// A JSON array of rows (arrays of values), as the Python readers print them.
pub fn from_json_rows(rows: &serde_json::Value) -> Vec<Row> {
    rows.as_array()
        .expect("an array of rows")
        .iter()
        .map(|r| r.as_array().expect("a row").iter().map(from_json).collect())
        .collect()
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

/// A date-time as PostgreSQL prints it (`2024-01-02 03:04:05`), for one written the ISO way
/// (`2024-01-02T03:04:05`, Python's `isoformat`) or with a zero fraction of a second (Trino's
/// `2024-01-02 03:04:05.000000`).
fn date_time(s: &Option<String>) -> Option<String> {
    let s = s.as_deref()?;
    let b = s.as_bytes();
    if s.len() < 19 || b[4] != b'-' || !(b[10] == b'T' || b[10] == b' ') || b[13] != b':' {
        return Some(s.to_string());
    }
    let fraction = &s[19..];
    let zero = fraction.is_empty()
        || (fraction.starts_with('.') && fraction[1..].chars().all(|c| c == '0'));
    Some(format!(
        "{} {}{}",
        &s[..10],
        &s[11..19],
        if zero { "" } else { fraction }
    ))
}

fn same_field(a: &Option<String>, b: &Option<String>) -> bool {
    match (number(a), number(b)) {
        (Some(x), Some(y)) => (x - y).abs() <= 1e-6 * x.abs().max(y.abs()).max(1.0),
        _ => date_time(a) == date_time(b),
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

/// The number of digits after the point of a plain decimal literal (`"1.53"` → 2); `None`
/// for integers, exponent notation and non-numbers.
fn decimal_scale(s: &Option<String>) -> Option<i32> {
    let s = s.as_deref()?;
    let (whole, fraction) = s.split_once('.')?;
    let digits = |t: &str| !t.is_empty() && t.chars().all(|c| c.is_ascii_digit());
    (digits(whole.trim_start_matches('-')) && digits(fraction)).then_some(fraction.len() as i32)
}

/// As [`same_field`], and a number `b` prints as a decimal with scale `s` also equals an `a`
/// that rounds to it (within half a unit of its last digit): Trino's `avg` and division of
/// decimals keep the operands' scale where DataFusion carries more digits.
fn same_field_at_scale(a: &Option<String>, b: &Option<String>) -> bool {
    if same_field(a, b) {
        return true;
    }
    match (number(a), number(b), decimal_scale(b)) {
        (Some(x), Some(y), Some(scale)) => (x - y).abs() <= 0.5 * 10f64.powi(-scale) * (1.0 + 1e-9),
        _ => false,
    }
}

/// `None` when `a` and `b` hold the same rows; else the first difference.
pub fn difference(a: Vec<Row>, b: Vec<Row>) -> Option<String> {
    difference_by(a, b, same_field)
}

/// [`difference`] where `b`'s decimals are taken at their printed scale (see
/// [`same_field_at_scale`]).
pub fn difference_at_scale(a: Vec<Row>, b: Vec<Row>) -> Option<String> {
    difference_by(a, b, same_field_at_scale)
}

fn difference_by(
    mut a: Vec<Row>,
    mut b: Vec<Row>,
    same: fn(&Option<String>, &Option<String>) -> bool,
) -> Option<String> {
    if a.len() != b.len() {
        return Some(format!("{} rows vs {} rows", a.len(), b.len()));
    }
    sort(&mut a);
    sort(&mut b);
    for (x, y) in a.iter().zip(&b) {
        let equal = x.len() == y.len() && x.iter().zip(y).all(|(p, q)| same(p, q));
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

    #[test]
    fn decimals_compare_at_the_printed_scale() {
        let one = |s: &str| vec![vec![Some(s.to_string())]];
        assert_eq!(difference_at_scale(one("1.525"), one("1.53")), None);
        assert!(difference_at_scale(one("1.536"), one("1.53")).is_some());
        assert!(difference(one("1.525"), one("1.53")).is_some());
        assert_eq!(
            difference(one("2024-01-02T03:04:05"), one("2024-01-02 03:04:05")),
            None
        );
        assert!(difference(one("2024-01-02T03:04:05"), one("2024-01-02 03:04:06")).is_some());
        assert_eq!(
            difference(
                one("2024-01-02T03:04:05"),
                one("2024-01-02 03:04:05.000000")
            ),
            None
        );
        assert!(difference(one("2024-01-02T03:04:05"), one("2024-01-02 03:04:05.5")).is_some());
        assert_eq!(difference_at_scale(one("-0.0449"), one("-0.04")), None);
        assert!(difference_at_scale(one("2"), one("3")).is_some());
    }
}
