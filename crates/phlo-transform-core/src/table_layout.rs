//! How a table on disk shows its format: the folder a Delta table's log lives in, the folder
//! or file of an Iceberg table's metadata, and the extensions of Parquet and CSV files.
//!
//! The one definition of these names. Workspace discovery (`phlo-transform-project`: which
//! paths under the sources folder are sources, and of what format) sits below the crate that
//! reads table logs (`phlo-transform-lakehouse`), so the names live here, below both, instead
//! of the project crate spelling a storage format's layout itself. Nothing here opens a table:
//! whether a log holds a commit, what a metadata file says, is the lakehouse crate's.

use std::path::Path;

/// The folder inside a Delta table that holds its log.
pub const DELTA_LOG_DIR: &str = "_delta_log";

/// The folder inside an Iceberg table that holds its metadata files.
pub const ICEBERG_METADATA_DIR: &str = "metadata";

/// The suffix of an Iceberg table metadata file (`v3.metadata.json`).
pub const ICEBERG_METADATA_SUFFIX: &str = ".metadata.json";

/// The file suffixes a table file's name ends with, longest first (a source found by
/// convention is named after the file without it).
pub const FILE_SUFFIXES: [&str; 3] = [ICEBERG_METADATA_SUFFIX, ".parquet", ".csv"];

/// A table format, as its layout on disk shows it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TableLayout {
    Parquet,
    Csv,
    Delta,
    Iceberg,
}

/// The format `path` shows: a folder with a Delta log folder is Delta, one with an Iceberg
/// metadata folder Iceberg; a file by its name's suffix (case-insensitive). `None` for
/// anything else, and for a path that does not exist.
pub fn detect(path: &Path) -> Option<TableLayout> {
    if path.is_dir() {
        if path.join(DELTA_LOG_DIR).is_dir() {
            return Some(TableLayout::Delta);
        }
        if path.join(ICEBERG_METADATA_DIR).is_dir() {
            return Some(TableLayout::Iceberg);
        }
        return None;
    }
    let name = path.file_name()?.to_str()?.to_ascii_lowercase();
    if name.ends_with(ICEBERG_METADATA_SUFFIX) {
        Some(TableLayout::Iceberg)
    } else if name.ends_with(".parquet") {
        Some(TableLayout::Parquet)
    } else if name.ends_with(".csv") {
        Some(TableLayout::Csv)
    } else {
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn folders_by_their_marker_and_files_by_their_suffix() {
        let root = std::env::temp_dir().join(format!("phlo-layout-test-{}", std::process::id()));
        let at = |p: &str| root.join(p);
        std::fs::create_dir_all(at("d").join(DELTA_LOG_DIR)).unwrap();
        std::fs::create_dir_all(at("i").join(ICEBERG_METADATA_DIR)).unwrap();
        std::fs::create_dir_all(at("plain")).unwrap();
        for file in ["a.PARQUET", "b.csv", "v1.metadata.json", "c.txt"] {
            std::fs::write(at(file), "").unwrap();
        }
        assert_eq!(detect(&at("d")), Some(TableLayout::Delta));
        assert_eq!(detect(&at("i")), Some(TableLayout::Iceberg));
        assert_eq!(detect(&at("plain")), None);
        assert_eq!(detect(&at("a.PARQUET")), Some(TableLayout::Parquet));
        assert_eq!(detect(&at("b.csv")), Some(TableLayout::Csv));
        assert_eq!(detect(&at("v1.metadata.json")), Some(TableLayout::Iceberg));
        assert_eq!(detect(&at("c.txt")), None);
        std::fs::remove_dir_all(&root).unwrap();
    }
}
