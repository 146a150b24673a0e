//! Marks an engine puts in the metadata of a fetched column's Arrow field, telling the data
//! diff how the column was read: what the field's type alone does not say.

/// A PostgreSQL `numeric` without a declared scale, read as a 38-digit decimal at the largest
/// scale among its values: the diff casts both sides to the larger of their scales.
pub const SCALE_FROM_VALUES: &str = "phlo.scale_from_values";

/// A Trino array, map, row or json column read as its JSON text: compared as retyped, never
/// by value, and fetched rather than compared in Trino (which cannot cast it to varchar).
pub const JSON_TEXT: &str = "phlo.trino_json_text";
