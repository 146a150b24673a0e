//! Lakehouse catalogs and table formats: a small Iceberg REST catalog client that loads what a
//! source needs before compiling, a Nessie API v2 client, Iceberg table state read from a
//! metadata file, and the one reader of Delta logs' files.

pub mod delta_log;
pub mod iceberg_state;
pub mod nessie;
pub mod rest;

pub use iceberg_state::{read_table_state, IcebergTableState, SnapshotInfo};
pub use nessie::{Content, Nessie, NessieError, NessieErrorKind, Reference};

pub use rest::{load_tables, FailureKind, LoadedTable, RestError, TableRequest, REQUEST_TIMEOUT};
