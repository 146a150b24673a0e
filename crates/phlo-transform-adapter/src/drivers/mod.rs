//! One [`Driver`] per engine: what each engine is beyond its [`crate::Adapter`]. Adding an
//! engine is one file here, its kind in `phlo_transform_project::AdapterKind`, and its arm in
//! [`driver`].

mod duckdb;
mod local;
mod postgres;
mod trino;

use phlo_transform_project::AdapterKind;

use crate::capabilities::Driver;

/// The driver of engine `kind`.
pub fn driver(kind: AdapterKind) -> &'static dyn Driver {
    match kind {
        AdapterKind::Local => &local::Local,
        AdapterKind::DuckDb => &duckdb::DuckDb,
        AdapterKind::Postgres => &postgres::Postgres,
        AdapterKind::Trino => &trino::Trino,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_kind_has_its_own_driver() {
        for kind in AdapterKind::ALL {
            assert_eq!(driver(kind).kind(), kind);
        }
    }
}
