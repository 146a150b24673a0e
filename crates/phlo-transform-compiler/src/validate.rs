//! Reads a source's data through, before compiling, so that data the local engine could not
//! read is an R003 at `check` time instead of a failure in the middle of a run: a CSV row that
//! does not parse with the columns the engine infers (or has the wrong number of fields), a
//! Parquet file cut short, a Delta log entry that is not JSON.

use datafusion::arrow::csv::reader::{Format, ReaderBuilder};
use phlo_transform_lakehouse::delta_log;
use phlo_transform_project::SourceFormat;
use std::io::{Seek, SeekFrom};
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// Rows the local engine samples to infer a CSV file's column types (DataFusion's default).
const CSV_INFERENCE_ROWS: usize = 1000;

/// Why a source's data cannot be read, and where.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Unreadable {
    pub reason: String,
    /// The file at fault when it is not the source's own location (a Delta log entry).
    pub file: Option<PathBuf>,
    /// 1-based line of that file, when known.
    pub line: Option<usize>,
}

impl Unreadable {
    fn new(reason: impl Into<String>) -> Unreadable {
        Unreadable {
            reason: reason.into(),
            file: None,
            line: None,
        }
    }
}

/// Checks that the data at `path` (for Delta, the table directory) can be read as `format`.
pub fn validate(format: SourceFormat, path: &Path) -> Result<(), Unreadable> {
    match format {
        SourceFormat::Csv => csv(path),
        SourceFormat::Parquet => parquet(path),
        SourceFormat::Delta => delta_log(path),
        // Iceberg metadata is parsed while reading the state; schema-only sources have no data.
        SourceFormat::Iceberg | SourceFormat::Declared => Ok(()),
    }
}

/// Decodes every row with the schema inferred from the first rows, as the engine will.
fn csv(path: &Path) -> Result<(), Unreadable> {
    let io = |e: std::io::Error| Unreadable::new(e.to_string());
    let mut file = std::fs::File::open(path).map_err(io)?;
    let format = Format::default().with_header(true);
    let (schema, _) = format
        .infer_schema(&mut file, Some(CSV_INFERENCE_ROWS))
        .map_err(|e| csv_error(&e.to_string(), &[]))?;
    let columns: Vec<String> = schema.fields().iter().map(|f| f.name().clone()).collect();
    file.seek(SeekFrom::Start(0)).map_err(io)?;
    let reader = ReaderBuilder::new(Arc::new(schema))
        .with_format(format)
        .build(file)
        .map_err(|e| csv_error(&e.to_string(), &columns))?;
    for batch in reader {
        batch.map_err(|e| csv_error(&e.to_string(), &columns))?;
    }
    Ok(())
}

/// Arrow's CSV errors name the line: a row with the wrong number of fields by its line in the
/// file (the header is line 1, as in an editor), a value that does not parse by its data row
/// (the header not counted); both become the line in the file.
fn csv_error(message: &str, columns: &[String]) -> Unreadable {
    let message = message
        .strip_prefix("Csv error: ")
        .or_else(|| message.strip_prefix("Parser error: "))
        .unwrap_or(message);
    let data_row = usize::from(message.starts_with("Error while parsing value"));
    let line = message.split("line ").nth(1).and_then(|rest| {
        let digits: String = rest.chars().take_while(char::is_ascii_digit).collect();
        digits.parse::<usize>().ok().map(|line| line + data_row)
    });
    // The row data arrow appends repeats the line; the location already points at it.
    let reason = message.split(". Row data:").next().unwrap_or(message);
    // "… Expected 5 records, found 6 records at line 14": arrow's records are fields.
    let counts = reason.split("Expected ").nth(1).and_then(|rest| {
        let (expected, rest) = rest.split_once(" records, found ")?;
        let (found, _) = rest.split_once(" records")?;
        Some((expected.to_string(), found.to_string()))
    });
    let reason = match (counts, line) {
        (Some((expected, found)), Some(line)) => {
            format!("line {line} has {found} fields where the header has {expected}")
        }
        _ => match (bad_value(reason, columns), line) {
            (Some(bad), Some(line)) => format!("line {line}: {bad}"),
            _ => reason.to_string(),
        },
    };
    Unreadable {
        reason: format!("malformed CSV: {reason}"),
        file: None,
        line,
    }
}

/// "Error while parsing value 'oops' as type 'Int64' for column 0 …" → "value 'oops' of
/// column `id` is not an Int64, the type the first 1000 rows give it".
fn bad_value(message: &str, columns: &[String]) -> Option<String> {
    let rest = message.strip_prefix("Error while parsing value ")?;
    let (value, rest) = rest.split_once(" as type '")?;
    let (ty, rest) = rest.split_once('\'')?;
    let index: usize = rest
        .split("for column ")
        .nth(1)?
        .chars()
        .take_while(char::is_ascii_digit)
        .collect::<String>()
        .parse()
        .ok()?;
    let column = columns.get(index)?;
    Some(format!(
        "value {value} of column `{column}` is not {ty}, the type the engine infers from the first {CSV_INFERENCE_ROWS} rows"
    ))
}

/// The footer must parse and every column chunk must lie inside the file: a file cut short
/// (an interrupted copy) fails one or the other.
fn parquet(path: &Path) -> Result<(), Unreadable> {
    let file = std::fs::File::open(path).map_err(|e| Unreadable::new(e.to_string()))?;
    let size = file
        .metadata()
        .map_err(|e| Unreadable::new(e.to_string()))?
        .len();
    let metadata = datafusion::parquet::file::reader::SerializedFileReader::new(file)
        .map(|r| {
            use datafusion::parquet::file::reader::FileReader;
            r.metadata().clone()
        })
        .map_err(|e| Unreadable::new(format!("not a readable Parquet file: {e}")))?;
    for (g, group) in metadata.row_groups().iter().enumerate() {
        for column in group.columns() {
            let (start, length) = column.byte_range();
            if start.saturating_add(length) > size {
                return Err(Unreadable::new(format!(
                    "truncated Parquet file: row group {g}, column `{}` ends at byte {} of {size}",
                    column.column_path(),
                    start + length
                )));
            }
        }
    }
    Ok(())
}

/// Every JSON commit after the latest checkpoint must be JSON lines (the engine replays them
/// all).
fn delta_log(table: &Path) -> Result<(), Unreadable> {
    let checkpoint = delta_log::last_checkpoint(table);
    let commits = delta_log::commits(table).map_err(|e| Unreadable::new(e.to_string()))?;
    for delta_log::Commit { path, .. } in commits
        .into_iter()
        .filter(|c| checkpoint.is_none_or(|v| c.version > v))
    {
        let text = std::fs::read_to_string(&path).map_err(|e| Unreadable::new(e.to_string()))?;
        for (i, line) in text.lines().enumerate() {
            if line.trim().is_empty() {
                continue;
            }
            if let Err(e) = serde_json::from_str::<serde_json::Value>(line) {
                return Err(Unreadable {
                    reason: format!("corrupt Delta log entry: {e}"),
                    file: Some(path),
                    line: Some(i + 1),
                });
            }
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_malformed_csv_row_is_found_with_its_line() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("s.csv");
        std::fs::write(&path, "id,site\n1,ox\n2,cam,extra\n3,ely\n").unwrap();
        let e = validate(SourceFormat::Csv, &path).unwrap_err();
        assert_eq!(e.line, Some(3), "{e:?}");
        assert!(e.reason.starts_with("malformed CSV"), "{e:?}");

        // A value the inferred type cannot hold, past the rows the inference samples.
        let mut text = String::from("id,site\n");
        for i in 0..1200 {
            text.push_str(&format!("{i},ox\n"));
        }
        text.push_str("oops,ox\n");
        std::fs::write(&path, text).unwrap();
        let e = validate(SourceFormat::Csv, &path).unwrap_err();
        assert_eq!(e.line, Some(1202), "{e:?}");
        assert_eq!(
            e.reason,
            "malformed CSV: line 1202: value 'oops' of column `id` is not Int64, the type the \
             engine infers from the first 1000 rows"
        );

        std::fs::write(&path, "id,site\n1,ox\n").unwrap();
        assert_eq!(validate(SourceFormat::Csv, &path), Ok(()));
    }

    #[test]
    fn a_truncated_parquet_file_is_found() {
        use datafusion::arrow::array::Int64Array;
        use datafusion::arrow::datatypes::{DataType, Field, Schema};
        use datafusion::arrow::record_batch::RecordBatch;
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("t.parquet");
        let schema = Arc::new(Schema::new(vec![Field::new("id", DataType::Int64, false)]));
        let batch = RecordBatch::try_new(
            schema.clone(),
            vec![Arc::new(Int64Array::from_iter_values(0..10_000))],
        )
        .unwrap();
        let file = std::fs::File::create(&path).unwrap();
        let mut writer =
            datafusion::parquet::arrow::ArrowWriter::try_new(file, schema, None).unwrap();
        writer.write(&batch).unwrap();
        writer.close().unwrap();
        assert_eq!(validate(SourceFormat::Parquet, &path), Ok(()));
        let bytes = std::fs::read(&path).unwrap();
        std::fs::write(&path, &bytes[..bytes.len() / 2]).unwrap();
        let e = validate(SourceFormat::Parquet, &path).unwrap_err();
        assert!(e.reason.contains("Parquet"), "{e:?}");
    }

    #[test]
    fn a_corrupt_delta_log_entry_is_found_with_its_file() {
        let dir = tempfile::tempdir().unwrap();
        let log = dir.path().join("_delta_log");
        std::fs::create_dir_all(&log).unwrap();
        std::fs::write(log.join("00000000000000000000.json"), "{\"protocol\":{}}\n").unwrap();
        assert_eq!(validate(SourceFormat::Delta, dir.path()), Ok(()));
        std::fs::write(
            log.join("00000000000000000001.json"),
            "{\"add\":{}}\n{\"add\":",
        )
        .unwrap();
        let e = validate(SourceFormat::Delta, dir.path()).unwrap_err();
        assert_eq!(e.line, Some(2));
        assert!(e.file.unwrap().ends_with("00000000000000000001.json"));
    }
}
