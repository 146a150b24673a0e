//! `[adapter]` (the default target) and `[adapters.<name>]` (named targets, chosen with
//! `--adapter <name>`): which engine a workspace builds on. Secrets never live here: a
//! password is named by the environment variable holding it (`password_env`).

use phlo_transform_core::diagnostic::codes;
use phlo_transform_core::Diagnostic;
use serde::Deserialize;

/// One target's settings, as written.
#[derive(Clone, Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct AdapterSection {
    /// `local` (default), `duckdb`, `postgres`, `trino`.
    #[serde(rename = "type")]
    pub kind: String,
    /// duckdb: the database file, relative to the workspace root.
    pub path: Option<String>,
    /// postgres / trino: the server URL (`postgres://user@host:5432/db`), without a password.
    pub url: Option<String>,
    /// Name of the environment variable holding the password.
    pub password_env: Option<String>,
    /// Schema every model is written to instead of one schema per namespace; `[transform]
    /// default_schema` when unset (see `Workspace::adapter_target`).
    pub default_schema: Option<String>,
    /// trino: the catalog models are written to.
    pub catalog: Option<String>,
    /// trino: the user queries run as.
    pub user: Option<String>,
    /// trino: the catalog views are written to when `catalog` cannot hold views (Trino's
    /// Nessie catalog cannot); the same catalog when absent.
    pub views_catalog: Option<String>,
    /// trino: the directory Trino's `local://` file system is rooted at (the catalog's
    /// `local.location`), so that Iceberg metadata there can be read natively.
    pub local_root: Option<String>,
    /// trino: `[adapter.nessie]`, the Nessie server behind `catalog`.
    pub nessie: Option<NessieSection>,
}

/// `[adapter.nessie]`: where the catalog's Nessie server answers, and on which reference.
#[derive(Clone, Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct NessieSection {
    /// The API v2 root, e.g. `http://127.0.0.1:19120/api/v2`.
    pub url: String,
    /// The reference Trino's catalog is on (`iceberg.nessie-catalog.ref`); `main` by default.
    #[serde(rename = "ref")]
    pub reference: Option<String>,
    /// The default warehouse directory of the catalogs of candidate environments
    /// (`iceberg.nessie-catalog.default-warehouse-dir`, e.g. `local:///iceberg`).
    pub warehouse: Option<String>,
}

/// The adapter types this build knows.
pub const ADAPTER_TYPES: &[&str] = &["local", "duckdb", "postgres", "trino"];

/// The target a command runs against: its name (as chosen) and settings.
#[derive(Clone, Debug)]
pub struct AdapterTarget {
    /// `default` for `[adapter]` (or the implicit local engine), else the `[adapters.<name>]`
    /// key.
    pub name: String,
    pub settings: AdapterSection,
}

impl AdapterTarget {
    /// The embedded local engine.
    pub fn local() -> Self {
        AdapterTarget {
            name: "default".into(),
            settings: AdapterSection {
                kind: "local".into(),
                ..AdapterSection::default()
            },
        }
    }

    pub fn kind(&self) -> &str {
        &self.settings.kind
    }

    /// The dialect the target's engine speaks: models are type-checked against its
    /// `dialects/<name>.toml`. `None` for the local engine (then `[transform] dialect`).
    pub fn dialect(&self) -> Option<&'static str> {
        match self.kind() {
            "duckdb" => Some("duckdb"),
            "postgres" => Some("postgres"),
            "trino" => Some("trino"),
            _ => None,
        }
    }

    /// The password named by `password_env`, when set and present. It is registered as a
    /// secret ([`phlo_transform_core::secrets`]) before anyone can use it, so that no message,
    /// artifact or record shows it even if a server or a driver echoes it back.
    pub fn password(&self) -> Result<Option<String>, Diagnostic> {
        let Some(var) = &self.settings.password_env else {
            return Ok(None);
        };
        let password = std::env::var(var);
        if let Ok(p) = &password {
            phlo_transform_core::secrets::register(p);
        }
        password.map(Some).map_err(|_| {
            Diagnostic::error(
                codes::UNKNOWN_ADAPTER,
                format!(
                    "adapter `{}`: password_env names `{var}`, which is not set",
                    self.name
                ),
            )
            .with_help(format!("export {var}=<password>, or remove password_env"))
        })
    }
}

/// Checks a target's settings: the fields its type needs, no password in a URL. A008.
pub(crate) fn validate(t: &AdapterTarget) -> Result<(), Diagnostic> {
    let invalid = |message: String, help: &str| {
        Err(Diagnostic::error(codes::UNKNOWN_ADAPTER, message).with_help(help.to_string()))
    };
    let s = &t.settings;
    match s.kind.as_str() {
        "local" => Ok(()),
        "duckdb" if s.path.is_none() => invalid(
            format!("adapter `{}` (duckdb) has no `path`", t.name),
            "set path = \"warehouse.duckdb\" (the database file, relative to the workspace)",
        ),
        "postgres" | "trino" if s.url.is_none() => invalid(
            format!("adapter `{}` ({}) has no `url`", t.name, s.kind),
            "set url = \"postgres://user@host:5432/database\" (no password: use password_env)",
        ),
        "postgres" | "trino" if s.url.as_deref().is_some_and(has_password) => invalid(
            format!(
                "adapter `{}`: the url carries a password; secrets never go in phlo.toml",
                t.name
            ),
            "remove the password from the url and name its environment variable with password_env",
        ),
        "duckdb" | "postgres" | "trino" => Ok(()),
        other => invalid(
            format!("adapter `{}` has unknown type `{other}`", t.name),
            &format!("type is one of: {}", ADAPTER_TYPES.join(", ")),
        ),
    }
}

/// `scheme://user:password@host…`: a password between `:` and `@` in the authority.
fn has_password(url: &str) -> bool {
    let rest = url.split_once("://").map_or(url, |(_, r)| r);
    let authority = rest.split('/').next().unwrap_or("");
    authority
        .rsplit_once('@')
        .is_some_and(|(userinfo, _)| userinfo.contains(':'))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_password_read_from_password_env_is_a_registered_secret() {
        let var = "PHLO_TEST_ADAPTER_PASSWORD_UNIT";
        // The variable is this test's own; no other test reads or writes it.
        std::env::set_var(var, "adapter-unit-pw-0c1d");
        let target = AdapterTarget {
            name: "pg".into(),
            settings: AdapterSection {
                kind: "postgres".into(),
                password_env: Some(var.into()),
                ..AdapterSection::default()
            },
        };
        assert_eq!(
            target.password().unwrap().as_deref(),
            Some("adapter-unit-pw-0c1d")
        );
        let shown = phlo_transform_core::secrets::scrub("auth failed for adapter-unit-pw-0c1d");
        assert_eq!(shown, "auth failed for ***");
    }

    #[test]
    fn passwords_in_urls_are_recognised() {
        assert!(has_password("postgres://u:secret@h:5432/db"));
        assert!(!has_password("postgres://u@h:5432/db"));
        assert!(!has_password("postgres://h:5432/db"));
    }
}
