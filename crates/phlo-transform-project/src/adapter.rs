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
    /// `local` (default), `duckdb`, `postgres`, `trino`, as written; the engine it names is
    /// [`AdapterTarget::kind`], parsed once when the target is chosen.
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

/// The engines this build knows: the one place an adapter's `type` is read. Everything past
/// the configuration holds this enum, never the name; the adapter crate maps each kind to its
/// engine's capabilities.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum AdapterKind {
    /// The embedded engine: DataFusion over Delta tables under `.phlo/warehouse`.
    #[default]
    Local,
    DuckDb,
    Postgres,
    /// Trino over Iceberg tables, with Nessie branches as environments.
    Trino,
}

impl AdapterKind {
    /// Every kind, in the order the configuration lists them.
    pub const ALL: [AdapterKind; 4] = [
        AdapterKind::Local,
        AdapterKind::DuckDb,
        AdapterKind::Postgres,
        AdapterKind::Trino,
    ];

    /// The kind `type = "<name>"` names; `None` for a name this build does not know.
    pub fn parse(name: &str) -> Option<AdapterKind> {
        AdapterKind::ALL.into_iter().find(|k| k.as_str() == name)
    }

    /// The name written in `type = "…"` and recorded with every materialisation.
    pub fn as_str(self) -> &'static str {
        match self {
            AdapterKind::Local => "local",
            AdapterKind::DuckDb => "duckdb",
            AdapterKind::Postgres => "postgres",
            AdapterKind::Trino => "trino",
        }
    }
}

impl std::fmt::Display for AdapterKind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// The target a command runs against: its name (as chosen), its engine and settings.
#[derive(Clone, Debug)]
pub struct AdapterTarget {
    /// `default` for `[adapter]` (or the implicit local engine), else the `[adapters.<name>]`
    /// key.
    pub name: String,
    kind: AdapterKind,
    pub settings: AdapterSection,
}

impl AdapterTarget {
    /// The embedded local engine.
    pub fn local() -> Self {
        AdapterTarget {
            name: "default".into(),
            kind: AdapterKind::Local,
            settings: AdapterSection {
                kind: AdapterKind::Local.as_str().into(),
                ..AdapterSection::default()
            },
        }
    }

    /// The target `name` with `settings`, checked: the fields its type needs, no password in
    /// a URL, a type this build knows (A008).
    pub fn new(name: impl Into<String>, settings: AdapterSection) -> Result<Self, Diagnostic> {
        let name = name.into();
        let kind = validate(&name, &settings)?;
        Ok(AdapterTarget {
            name,
            kind,
            settings,
        })
    }

    /// The engine this target builds on.
    pub fn kind(&self) -> AdapterKind {
        self.kind
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

/// Checks target `name`'s settings: a known type, the fields it needs, no password in a URL.
/// A008.
fn validate(name: &str, s: &AdapterSection) -> Result<AdapterKind, Diagnostic> {
    let invalid = |message: String, help: &str| {
        Err(Diagnostic::error(codes::UNKNOWN_ADAPTER, message).with_help(help.to_string()))
    };
    let Some(kind) = AdapterKind::parse(&s.kind) else {
        let known: Vec<_> = AdapterKind::ALL.iter().map(|k| k.as_str()).collect();
        return invalid(
            format!("adapter `{name}` has unknown type `{}`", s.kind),
            &format!("type is one of: {}", known.join(", ")),
        );
    };
    let needs_url = matches!(kind, AdapterKind::Postgres | AdapterKind::Trino);
    match kind {
        AdapterKind::DuckDb if s.path.is_none() => invalid(
            format!("adapter `{name}` (duckdb) has no `path`"),
            "set path = \"warehouse.duckdb\" (the database file, relative to the workspace)",
        ),
        _ if needs_url && s.url.is_none() => invalid(
            format!("adapter `{name}` ({kind}) has no `url`"),
            "set url = \"postgres://user@host:5432/database\" (no password: use password_env)",
        ),
        _ if needs_url && s.url.as_deref().is_some_and(has_password) => invalid(
            format!("adapter `{name}`: the url carries a password; secrets never go in phlo.toml"),
            "remove the password from the url and name its environment variable with password_env",
        ),
        _ => Ok(kind),
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
        let settings = AdapterSection {
            kind: "postgres".into(),
            url: Some("postgres://u@h/db".into()),
            password_env: Some(var.into()),
            ..AdapterSection::default()
        };
        let target = AdapterTarget::new("pg", settings).unwrap();
        assert_eq!(
            target.password().unwrap().as_deref(),
            Some("adapter-unit-pw-0c1d")
        );
        let shown = phlo_transform_core::secrets::scrub("auth failed for adapter-unit-pw-0c1d");
        assert_eq!(shown, "auth failed for ***");
    }

    #[test]
    fn every_kind_parses_back_from_its_name() {
        for kind in AdapterKind::ALL {
            assert_eq!(AdapterKind::parse(kind.as_str()), Some(kind));
        }
        assert_eq!(AdapterKind::parse("snowflake"), None);
        let unknown = AdapterSection {
            kind: "snowflake".into(),
            ..AdapterSection::default()
        };
        let err = AdapterTarget::new("x", unknown).unwrap_err();
        assert_eq!(err.code, codes::UNKNOWN_ADAPTER);
        assert_eq!(
            err.help.as_deref(),
            Some("type is one of: local, duckdb, postgres, trino")
        );
    }

    #[test]
    fn passwords_in_urls_are_recognised() {
        assert!(has_password("postgres://u:secret@h:5432/db"));
        assert!(!has_password("postgres://u@h:5432/db"));
        assert!(!has_password("postgres://h:5432/db"));
    }
}
