//! Which T-code a DataFusion planning error gets. Where DataFusion has a variant for the
//! failure, the variant decides: a column missing from the input schema or matching several
//! of its fields is a `SchemaError` (`FieldNotFound`, `AmbiguousReference`), a constant that
//! cannot be cast an Arrow `CastError`. DataFusion reports every other planning failure
//! (GROUP BY, set operations, coercion, unknown functions, subqueries) as `Plan`,
//! `Execution` or `NotImplemented` with only a message, so those are told apart by their
//! text; each text rule names the DataFusion wording it matches.

use datafusion::arrow::error::ArrowError;
use datafusion::common::{DataFusionError, SchemaError};
use phlo_transform_core::diagnostic::codes;
use phlo_transform_core::Code;

/// The T-code of planning error `e`. `text` is the error as DataFusion prints it and
/// `message` the message of its diagnostic (or the text's first line).
pub(crate) fn classify(e: &DataFusionError, text: &str, message: &str) -> Code {
    by_variant(e.find_root()).unwrap_or_else(|| by_text(&format!("{text}\n{message}")))
}

/// The code a variant decides, `None` for a variant that only carries a message. `root` is
/// the innermost DataFusion error ([`DataFusionError::find_root`]): the planner wraps the
/// failure in `Diagnostic` and `Context` layers, and a `Collection` reads as its first error.
fn by_variant(root: &DataFusionError) -> Option<Code> {
    match root {
        DataFusionError::SchemaError(e, _) => match e.as_ref() {
            SchemaError::FieldNotFound { .. } => Some(codes::UNKNOWN_COLUMN),
            SchemaError::AmbiguousReference { .. } => Some(codes::AMBIGUOUS_COLUMN),
            SchemaError::DuplicateQualifiedField { .. }
            | SchemaError::DuplicateUnqualifiedField { .. } => None,
        },
        DataFusionError::ArrowError(e, _) => match e.as_ref() {
            ArrowError::CastError(_) => Some(codes::INVALID_CAST),
            _ => None,
        },
        _ => None,
    }
}

/// The code of an error DataFusion gives as a message only.
fn by_text(t: &str) -> Code {
    // "No field named" is SchemaError's own wording, also when a caller re-wraps it as text.
    if t.contains("No field named") || t.contains("not found") && t.contains("column") {
        codes::UNKNOWN_COLUMN
    } else if t.contains("mbiguous") {
        codes::AMBIGUOUS_COLUMN
    } else if t.contains("Invalid function")
        || t.contains("Unsupported function")
        || t.contains("Did you mean") && t.contains("function")
    {
        codes::UNKNOWN_FUNCTION
    } else if t.contains("GROUP BY") || t.contains("aggregate function") {
        codes::NOT_GROUPED
    } else if t.contains("UNION")
        || t.contains("Union")
        || t.contains("INTERSECT")
        || t.contains("EXCEPT")
    {
        codes::SET_OPERATION_MISMATCH
    } else if t.contains("Unsupported CAST") || t.contains("Cannot cast") {
        codes::INVALID_CAST
    } else if t.contains("subquery") && t.contains("column") {
        codes::SUBQUERY_COLUMNS
    } else if t.contains("Cannot infer common")
        || t.contains("Cannot coerce")
        || t.contains("cannot be coerced")
        || t.contains("type")
    {
        codes::INCOMPATIBLE_TYPES
    } else {
        codes::UNTYPEABLE
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use datafusion::common::Column;

    fn schema_error(e: SchemaError) -> DataFusionError {
        DataFusionError::SchemaError(Box::new(e), Box::new(None))
    }

    #[test]
    fn the_variant_decides_where_there_is_one() {
        let missing = schema_error(SchemaError::FieldNotFound {
            field: Box::new(Column::from_name("x")),
            valid_fields: vec![],
        });
        // Wrapped as the planner wraps errors, and with a text that alone would read as a
        // type error: the variant still decides.
        let wrapped = missing.context("planning");
        assert_eq!(
            classify(&wrapped, "", "a type mismatch"),
            codes::UNKNOWN_COLUMN
        );
        let ambiguous = schema_error(SchemaError::AmbiguousReference {
            field: Box::new(Column::from_name("id")),
        });
        assert_eq!(classify(&ambiguous, "", ""), codes::AMBIGUOUS_COLUMN);
        let cast = DataFusionError::ArrowError(
            Box::new(ArrowError::CastError(
                "Can't cast value 300 to type Int8".into(),
            )),
            None,
        );
        assert_eq!(classify(&cast, "", ""), codes::INVALID_CAST);
    }

    #[test]
    fn message_only_errors_are_told_apart_by_their_text() {
        let plan = |text: &str| {
            let e = DataFusionError::Plan(text.to_string());
            classify(&e, &e.strip_backtrace(), text)
        };
        assert_eq!(
            plan("Column in SELECT must be in GROUP BY or an aggregate function"),
            codes::NOT_GROUPED
        );
        assert_eq!(
            plan("UNION queries have different number of columns"),
            codes::SET_OPERATION_MISMATCH
        );
        assert_eq!(plan("Invalid function 'foo'"), codes::UNKNOWN_FUNCTION);
        assert_eq!(
            plan("Cannot infer common argument type for comparison operation Utf8 = Int64"),
            codes::INCOMPATIBLE_TYPES
        );
        assert_eq!(plan("something else entirely"), codes::UNTYPEABLE);
    }
}
