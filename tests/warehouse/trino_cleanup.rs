//! Drops what a Trino test wrote: every table and view of its schema in the tables catalog
//! (`iceberg`, on Nessie) and the views catalog (`views`), then the schemas. A test holds a
//! [`DropSchema`] for its schema, so a passing or failing test leaves nothing in Nessie.

use phlo_transform_adapter::trino::client::{Trino, TrinoConfig};
use url::Url;

/// Drops schema `0` in both catalogs when dropped.
pub struct DropSchema(pub String);

impl Drop for DropSchema {
    fn drop(&mut self) {
        if let Err(e) = drop_schema(&self.0) {
            eprintln!("leftover Trino schema `{}`: {e}", self.0);
        }
    }
}

/// Drops the tables, views and the schema `schema` of the test catalogs, on a thread of its
/// own (an async test drops its guard inside its runtime, where no other can block).
pub fn drop_schema(schema: &str) -> Result<(), String> {
    let schema = schema.to_owned();
    std::thread::spawn(move || drop_now(&schema))
        .join()
        .map_err(|_| "the cleanup panicked".to_string())?
}

fn drop_now(schema: &str) -> Result<(), String> {
    let url = Url::parse(&super::trino_env::trino_url()).map_err(|e| e.to_string())?;
    let client =
        Trino::new(TrinoConfig::new(url, "phlo-test-cleanup")).map_err(|e| e.to_string())?;
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|e| e.to_string())?;
    let quoted = format!("\"{}\"", schema.replace('"', "\"\""));
    let literal = format!("'{}'", schema.replace('\'', "''"));
    runtime.block_on(async {
        for catalog in ["iceberg", "views"] {
            let listed = client
                .execute(&format!(
                    "SELECT table_name, table_type FROM {catalog}.information_schema.tables \
                     WHERE table_schema = {literal}"
                ))
                .await
                .map_err(|e| e.to_string())?;
            for row in &listed.rows {
                let (Some(name), Some(kind)) = (row[0].as_str(), row[1].as_str()) else {
                    continue;
                };
                let what = if kind == "VIEW" { "VIEW" } else { "TABLE" };
                client
                    .execute(&format!(
                        "DROP {what} IF EXISTS {catalog}.{quoted}.\"{}\"",
                        name.replace('"', "\"\"")
                    ))
                    .await
                    .map_err(|e| e.to_string())?;
            }
            client
                .execute(&format!("DROP SCHEMA IF EXISTS {catalog}.{quoted}"))
                .await
                .map_err(|e| e.to_string())?;
        }
        Ok(())
    })
}
