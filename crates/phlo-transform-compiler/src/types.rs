//! SQL type names as users write them (declared source columns, contracts, CAST) and the
//! Arrow types they stand for. The names are the common vocabulary of Trino, DuckDB and
//! PostgreSQL; `dialects/<name>.toml` adds a dialect's own names.

use datafusion::arrow::datatypes::{DataType, TimeUnit};

/// The Arrow type of a SQL type name (`bigint`, `decimal(15,2)`, `timestamp with time zone`).
pub fn sql_type(name: &str) -> Option<DataType> {
    let n = name.trim().to_lowercase();
    let n = n.split_whitespace().collect::<Vec<_>>().join(" ");
    if let Some(args) = n
        .strip_prefix("decimal")
        .or_else(|| n.strip_prefix("numeric"))
    {
        let args = args.trim();
        if args.is_empty() {
            return Some(DataType::Decimal128(38, 10));
        }
        let inner = args.strip_prefix('(')?.strip_suffix(')')?;
        let mut parts = inner.split(',').map(|p| p.trim().parse::<u8>());
        let precision = parts.next()?.ok()?;
        let scale = match parts.next() {
            Some(s) => s.ok()? as i8,
            None => 0,
        };
        return Some(DataType::Decimal128(precision, scale));
    }
    // `varchar(20)`, `char(1)`: the length does not change the Arrow type.
    let base = n.split('(').next().unwrap_or(&n).trim();
    Some(match base {
        "varchar" | "char" | "character" | "character varying" | "text" | "string" | "json"
        | "uuid" => DataType::Utf8,
        "bigint" | "int8" | "long" => DataType::Int64,
        "integer" | "int" | "int4" => DataType::Int32,
        "smallint" | "int2" => DataType::Int16,
        "tinyint" => DataType::Int8,
        "double" | "double precision" | "float8" | "float" => DataType::Float64,
        "real" | "float4" => DataType::Float32,
        "boolean" | "bool" => DataType::Boolean,
        "date" => DataType::Date32,
        "time" => DataType::Time64(TimeUnit::Microsecond),
        "timestamp" | "timestamp without time zone" => {
            DataType::Timestamp(TimeUnit::Microsecond, None)
        }
        "timestamptz" | "timestamp with time zone" => {
            DataType::Timestamp(TimeUnit::Microsecond, Some("UTC".into()))
        }
        "varbinary" | "binary" | "bytea" | "blob" => DataType::Binary,
        _ => return None,
    })
}

/// Two types are the same for a contract when they agree up to string representation
/// (`Utf8` / `LargeUtf8` / `Utf8View`) and timestamp precision.
pub fn same_family(a: &DataType, b: &DataType) -> bool {
    use DataType::*;
    match (a, b) {
        (Utf8 | LargeUtf8 | Utf8View, Utf8 | LargeUtf8 | Utf8View) => true,
        (Timestamp(_, tz_a), Timestamp(_, tz_b)) => tz_a.is_some() == tz_b.is_some(),
        (Binary | LargeBinary | BinaryView, Binary | LargeBinary | BinaryView) => true,
        _ => a == b,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_map_to_arrow_types() {
        assert_eq!(sql_type("BIGINT"), Some(DataType::Int64));
        assert_eq!(
            sql_type("decimal(15, 2)"),
            Some(DataType::Decimal128(15, 2))
        );
        assert_eq!(sql_type("varchar(25)"), Some(DataType::Utf8));
        assert_eq!(
            sql_type("timestamp  with time zone"),
            Some(DataType::Timestamp(
                TimeUnit::Microsecond,
                Some("UTC".into())
            ))
        );
        assert_eq!(sql_type("geometry"), None);
        assert!(same_family(&DataType::LargeUtf8, &DataType::Utf8));
    }
}
