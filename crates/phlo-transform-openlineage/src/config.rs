//! Where events go: `[openlineage]` in phlo.toml, overridden by the `OPENLINEAGE__*`
//! environment variables (the same names other tools use, so one deployment setting serves
//! them all). The API key comes from the environment only.

use phlo_transform_project::config::OpenLineageSection;
use phlo_transform_project::Workspace;
use std::path::{Path, PathBuf};
use std::time::Duration;

pub const DEFAULT_ENDPOINT: &str = "api/v1/lineage";
pub const DEFAULT_NAMESPACE: &str = "phlo-transform";
pub const DEFAULT_TIMEOUT_SECONDS: u64 = 10;
/// Longest timeout honoured (one hour): larger values are clamped, so that deadlines computed
/// from it never overflow.
pub const MAX_TIMEOUT_SECONDS: u64 = 3600;

#[derive(Clone)]
pub struct OpenLineageConfig {
    /// The collector's base URL; `None`: no HTTP transport.
    pub url: Option<String>,
    pub endpoint: String,
    /// Bearer token. Kept out of `Debug` and out of every event.
    pub api_key: Option<String>,
    /// JSON Lines file the events are appended to; `None`: no file transport.
    pub file: Option<PathBuf>,
    /// Namespace of jobs, and of datasets with no physical location.
    pub namespace: String,
    /// Per HTTP attempt, and the whole drain at exit.
    pub timeout: Duration,
    /// Where the local engine writes models: their datasets are named by their location.
    pub warehouse: PathBuf,
    /// The local engine's `default_schema`, which places models in the warehouse.
    pub default_schema: Option<String>,
}

impl std::fmt::Debug for OpenLineageConfig {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("OpenLineageConfig")
            .field("url", &self.url.as_deref().map(redact_url))
            .field("endpoint", &self.endpoint)
            .field("api_key", &self.api_key.as_ref().map(|_| "<set>"))
            .field("file", &self.file)
            .field("namespace", &self.namespace)
            .field("timeout", &self.timeout)
            .field("warehouse", &self.warehouse)
            .field("default_schema", &self.default_schema)
            .finish()
    }
}

impl OpenLineageConfig {
    /// The workspace's `[openlineage]` section with the process environment over it.
    pub fn from_env(workspace: &Workspace, warehouse: &Path) -> OpenLineageConfig {
        let mut config = Self::resolve(
            &workspace.config.openlineage,
            &workspace.root,
            warehouse,
            |name| std::env::var(name).ok(),
        );
        config.default_schema = workspace
            .adapter_target(Some(phlo_transform_project::AdapterKind::Local.as_str()))
            .ok()
            .and_then(|t| t.settings.default_schema);
        config
    }

    /// `section` (paths in it relative to `root`) with variables read through `env` over it.
    /// An empty variable counts as unset.
    pub fn resolve(
        section: &OpenLineageSection,
        root: &Path,
        warehouse: &Path,
        env: impl Fn(&str) -> Option<String>,
    ) -> OpenLineageConfig {
        let var = |name: &str| env(name).filter(|v| !v.trim().is_empty());
        let file = var("OPENLINEAGE__FILE")
            .map(PathBuf::from)
            .or_else(|| section.file.as_ref().map(|f| root.join(f)));
        let timeout = var("OPENLINEAGE__TIMEOUT_SECONDS")
            .and_then(|t| t.trim().parse().ok())
            .or(section.timeout_seconds)
            .unwrap_or(DEFAULT_TIMEOUT_SECONDS);
        let url = var("OPENLINEAGE__URL").or_else(|| section.url.clone());
        let api_key = var("OPENLINEAGE__API_KEY");
        if let Some(url) = &url {
            phlo_transform_core::secrets::register_url(url);
        }
        if let Some(key) = &api_key {
            phlo_transform_core::secrets::register(key);
        }
        OpenLineageConfig {
            url,
            endpoint: var("OPENLINEAGE__ENDPOINT")
                .or_else(|| section.endpoint.clone())
                .unwrap_or_else(|| DEFAULT_ENDPOINT.to_string()),
            api_key,
            file,
            namespace: var("OPENLINEAGE__NAMESPACE")
                .or_else(|| section.namespace.clone())
                .unwrap_or_else(|| DEFAULT_NAMESPACE.to_string()),
            timeout: Duration::from_secs(timeout.clamp(1, MAX_TIMEOUT_SECONDS)),
            warehouse: warehouse.to_path_buf(),
            default_schema: None,
        }
    }

    /// True when events have somewhere to go.
    pub fn enabled(&self) -> bool {
        self.url.is_some() || self.file.is_some()
    }

    /// `url` + `endpoint`, joined with exactly one slash.
    pub fn endpoint_url(&self) -> Option<String> {
        let url = self.url.as_deref()?;
        Some(format!(
            "{}/{}",
            url.trim_end_matches('/'),
            self.endpoint.trim_start_matches('/')
        ))
    }
}

/// The one redaction (core): `http://user:secret@host` → `http://user:***@host`.
pub use phlo_transform_core::secrets::redact_url;

#[cfg(test)]
mod tests {
    use super::*;

    fn section() -> OpenLineageSection {
        OpenLineageSection {
            url: Some("http://marquez:5000/".into()),
            endpoint: None,
            file: Some("out/events.jsonl".into()),
            namespace: Some("lab".into()),
            timeout_seconds: Some(3),
        }
    }

    #[test]
    fn the_environment_overrides_phlo_toml_and_empty_variables_count_as_unset() {
        let vars = |name: &str| match name {
            "OPENLINEAGE__NAMESPACE" => Some("prod".to_string()),
            "OPENLINEAGE__API_KEY" => Some("k3y".to_string()),
            "OPENLINEAGE__URL" => Some(String::new()),
            "OPENLINEAGE__TIMEOUT_SECONDS" => Some("7".to_string()),
            _ => None,
        };
        let c = OpenLineageConfig::resolve(&section(), Path::new("/ws"), Path::new("/wh"), vars);
        assert_eq!(c.namespace, "prod");
        assert_eq!(c.url.as_deref(), Some("http://marquez:5000/"));
        assert_eq!(
            c.endpoint_url().as_deref(),
            Some("http://marquez:5000/api/v1/lineage")
        );
        assert_eq!(c.file.as_deref(), Some(Path::new("/ws/out/events.jsonl")));
        assert_eq!(c.timeout, Duration::from_secs(7));
        assert!(!format!("{c:?}").contains("k3y"));
    }

    #[test]
    fn defaults_apply_when_nothing_is_set() {
        let c = OpenLineageConfig::resolve(
            &OpenLineageSection::default(),
            Path::new("/ws"),
            Path::new("/wh"),
            |_| None,
        );
        assert!(!c.enabled());
        assert_eq!(c.namespace, DEFAULT_NAMESPACE);
        assert_eq!(c.endpoint, DEFAULT_ENDPOINT);
        assert_eq!(c.timeout, Duration::from_secs(DEFAULT_TIMEOUT_SECONDS));
    }

    #[test]
    fn messages_show_urls_without_secrets() {
        assert_eq!(
            redact_url("https://user:secret@collector:8443/api"),
            "https://user:***@collector:8443/api"
        );
    }

    #[test]
    fn a_huge_timeout_is_clamped_not_overflowed() {
        let c =
            OpenLineageConfig::resolve(&section(), Path::new("/ws"), Path::new("/wh"), |name| {
                (name == "OPENLINEAGE__TIMEOUT_SECONDS").then(|| u64::MAX.to_string())
            });
        assert_eq!(c.timeout, Duration::from_secs(MAX_TIMEOUT_SECONDS));
        // What the drain at exit computes from it.
        let _ = tokio::time::Instant::now() + c.timeout;
    }
}
