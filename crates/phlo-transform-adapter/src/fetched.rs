//! The result of [`crate::Adapter::fetch`] from columns an adapter has read and typed itself
//! (PostgreSQL's text, Trino's JSON): one record batch with its schema.

use datafusion::arrow::array::{ArrayRef, RecordBatch};
use datafusion::arrow::datatypes::{Field, Schema, SchemaRef};
use phlo_transform_core::diagnostic::codes;

use crate::AdapterError;

/// `fields` and their `arrays` (equal lengths) as one batch.
pub(crate) fn one_batch(
    fields: Vec<Field>,
    arrays: Vec<ArrayRef>,
) -> Result<(SchemaRef, Vec<RecordBatch>), AdapterError> {
    let schema = std::sync::Arc::new(Schema::new(fields));
    let batch = RecordBatch::try_new(schema.clone(), arrays)
        .map_err(|e| AdapterError::new(codes::QUERY_FAILED, e.to_string()))?;
    Ok((schema, vec![batch]))
}
