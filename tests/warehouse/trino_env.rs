//! Where the Trino, Nessie and Iceberg services of the tests are: the ports and directories
//! `scripts/services.sh up` uses, unless PHLO_TEST_TRINO_URL, PHLO_TEST_NESSIE_URL or
//! PHLO_TEST_ICEBERG_LOCAL_ROOT say otherwise. One copy for the root tests, the Trino bench and
//! the adapter crate's Trino tests (each includes it with `#[path]`), so that their defaults
//! cannot drift apart.

use std::path::PathBuf;

/// The environment variable `var`, else `default`.
pub fn env_or(var: &str, default: &str) -> String {
    std::env::var(var).unwrap_or_else(|_| default.into())
}

/// Trino's HTTP endpoint.
pub fn trino_url() -> String {
    env_or("PHLO_TEST_TRINO_URL", "http://127.0.0.1:8080")
}

/// Nessie's API v2 root.
pub fn nessie_url() -> String {
    env_or("PHLO_TEST_NESSIE_URL", "http://127.0.0.1:19120/api/v2")
}

/// The directory Trino's `local://` file system is rooted at (its Iceberg warehouse).
pub fn local_root() -> PathBuf {
    std::env::var_os("PHLO_TEST_ICEBERG_LOCAL_ROOT").map_or_else(
        || {
            PathBuf::from(std::env::var_os("HOME").expect("HOME"))
                .join(".cache/phlo-transform/services/warehouse")
        },
        PathBuf::from,
    )
}

/// `[adapter]` for the test servers: models in schema `schema` of catalog `iceberg` (views in
/// `views`), queries run as `user`.
pub fn adapter_toml(schema: &str, user: &str) -> String {
    format!(
        "\n[adapter]\ntype = \"trino\"\nurl = \"{}\"\nuser = \"{user}\"\ncatalog = \"iceberg\"\n\
         views_catalog = \"views\"\ndefault_schema = \"{schema}\"\nlocal_root = \"{}\"\n\n\
         [adapter.nessie]\nurl = \"{}\"\n",
        trino_url(),
        local_root().display(),
        nessie_url(),
    )
}

/// A schema (or user) name no other test, bench or earlier run uses.
pub fn unique(prefix: &str) -> String {
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_nanos();
    format!("{prefix}_{}_{nanos}", std::process::id())
}
