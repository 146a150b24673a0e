//! Which target a command runs against: `--adapter <name>` read against the workspace's
//! `[adapter]` and `[adapters.<name>]` (the section types are in [`crate::adapter`], which
//! reads nothing of the workspace).

use phlo_transform_core::diagnostic::codes;
use phlo_transform_core::{did_you_mean, Diagnostic};

use crate::adapter::{AdapterKind, AdapterTarget};
use crate::Workspace;

impl Workspace {
    /// The target `--adapter name` chooses: `[adapters.<name>]`, or `[adapter]` (and the local
    /// engine when there is none) without a name. `local` always names the local engine.
    /// A target without its own `default_schema` takes `[transform] default_schema`, so the
    /// workspace's setting places models on every engine alike. An unknown name or an invalid
    /// target is A008.
    pub fn adapter_target(&self, name: Option<&str>) -> Result<AdapterTarget, Diagnostic> {
        let mut target = match name {
            None | Some("default") => match &self.config.adapter {
                Some(settings) => AdapterTarget::new("default", settings.clone())?,
                None => AdapterTarget::local(),
            },
            Some(name)
                if name == AdapterKind::Local.as_str()
                    && !self.config.adapters.contains_key(name) =>
            {
                AdapterTarget::local()
            }
            Some(name) => match self.config.adapters.get(name) {
                Some(settings) => AdapterTarget::new(name, settings.clone())?,
                None => {
                    let known = self.config.adapters.keys().map(String::as_str);
                    return Err(Diagnostic::error(
                        codes::UNKNOWN_ADAPTER,
                        format!("no adapter named `{name}`"),
                    )
                    .with_suggestions(did_you_mean(name, known))
                    .with_help(
                        "declare it in phlo.toml as [adapters.<name>] (type = \"postgres\", …), or use `local`",
                    ));
                }
            },
        };
        if target.settings.default_schema.is_none() {
            target.settings.default_schema = self.config.transform.default_schema.clone();
        }
        Ok(target)
    }
}
