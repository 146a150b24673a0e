//! Lakehouse catalogs. For now: a small Iceberg REST catalog client that loads what a source
//! needs before compiling (a table's metadata and where it lives), and nothing else.

pub mod rest;

pub use rest::{load_tables, FailureKind, LoadedTable, RestError, TableRequest, REQUEST_TIMEOUT};
