//! `--output`: the differing rows as one Parquet file (`_diff`, `_side`, then the aligned
//! columns; a modified row appears twice, once per side).

use datafusion::arrow::array::RecordBatch;
use datafusion::arrow::datatypes::Schema;
use datafusion::parquet::arrow::ArrowWriter;
use phlo_transform_core::diagnostic::codes;
use phlo_transform_core::Diagnostic;
use std::path::Path;

use crate::keyed::output_schema;

pub fn write_parquet(
    path: &Path,
    aligned: &Schema,
    batches: &[RecordBatch],
) -> Result<(), Diagnostic> {
    let failed = |e: &dyn std::fmt::Display| {
        Diagnostic::error(
            codes::DIFF_INVALID_OPTION,
            format!("cannot write the differing rows to {}: {e}", path.display()),
        )
        .with_help("pass an --output path in a writable directory")
    };
    let tmp = path.with_extension("parquet.tmp");
    let write = || -> Result<(), Box<dyn std::error::Error>> {
        let file = std::fs::File::create(&tmp)?;
        let mut writer = ArrowWriter::try_new(file, output_schema(aligned), None)?;
        for b in batches {
            writer.write(b)?;
        }
        writer.close()?;
        std::fs::rename(&tmp, path)?;
        Ok(())
    };
    write().map_err(|e| {
        let _ = std::fs::remove_file(&tmp);
        failed(&e)
    })
}
