//! A column's type as the SQL type name dbt's consumers read from `data_type` (`bigint`,
//! `varchar`, `decimal(10,2)`): the Arrow type the compiler infers, named as SQL names it.
//! Types SQL has no one name for (lists, structs, maps) keep the Arrow type's own text.

use datafusion::arrow::datatypes::{DataType, TimeUnit};

pub(crate) fn sql_type(t: &DataType) -> String {
    let name = match t {
        DataType::Boolean => "boolean",
        DataType::Int8 => "tinyint",
        DataType::Int16 => "smallint",
        DataType::Int32 => "integer",
        DataType::Int64 => "bigint",
        DataType::UInt8 => "utinyint",
        DataType::UInt16 => "usmallint",
        DataType::UInt32 => "uinteger",
        DataType::UInt64 => "ubigint",
        DataType::Float16 | DataType::Float32 => "real",
        DataType::Float64 => "double",
        DataType::Utf8 | DataType::LargeUtf8 | DataType::Utf8View => "varchar",
        DataType::Binary
        | DataType::LargeBinary
        | DataType::BinaryView
        | DataType::FixedSizeBinary(_) => "blob",
        DataType::Date32 | DataType::Date64 => "date",
        DataType::Time32(_) | DataType::Time64(_) => "time",
        DataType::Timestamp(_, Some(_)) => "timestamp with time zone",
        DataType::Timestamp(TimeUnit::Second, None) => "timestamp(0)",
        DataType::Timestamp(TimeUnit::Millisecond, None) => "timestamp(3)",
        DataType::Timestamp(_, None) => "timestamp",
        DataType::Interval(_) | DataType::Duration(_) => "interval",
        DataType::Decimal128(p, s) | DataType::Decimal256(p, s) => {
            return format!("decimal({p},{s})")
        }
        DataType::Dictionary(_, value) => return sql_type(value),
        other => return other.to_string(),
    };
    name.to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn arrow_types_get_their_sql_names() {
        assert_eq!(sql_type(&DataType::Int64), "bigint");
        assert_eq!(sql_type(&DataType::Utf8View), "varchar");
        assert_eq!(sql_type(&DataType::Decimal128(10, 2)), "decimal(10,2)");
        assert_eq!(
            sql_type(&DataType::Timestamp(TimeUnit::Microsecond, None)),
            "timestamp"
        );
    }
}
