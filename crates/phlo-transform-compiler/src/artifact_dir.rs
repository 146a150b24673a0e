//! The artifact directory (`.phlo/transform/`): the files commands write there and how. Each
//! file is written whole (a temporary file of its own renamed into place, so concurrent
//! commands never leave half a file: the last one wins), as compact JSON with secrets
//! scrubbed; the lineage documents only as [`LineageArtifacts`] says, judged by a stamp kept
//! beside them.

use phlo_transform_core::diagnostic::codes;
use phlo_transform_core::Diagnostic;
use serde::Serialize;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

use crate::artifacts::LineageArtifacts;
use crate::compile::Compilation;

/// The stamp of the lineage documents on disk ([`Compilation::lineage_stamp`]).
const LINEAGE_STAMP: &str = "lineage.stamp";

/// The design-time OpenLineage document (`openlineage.json`), which the OpenLineage crate
/// builds: what it depends on beyond the compilation (its namespace and warehouse, part of
/// the stamp) and how to serialise it, called only when it is written.
pub struct DesignEvents<'a> {
    pub context: String,
    pub json: Box<dyn Fn() -> String + Sync + 'a>,
}

/// One workspace's artifact directory.
pub struct ArtifactDir {
    path: PathBuf,
}

impl ArtifactDir {
    /// Every file a command writes here (`clean` removes them all, with the
    /// [`EVIDENCE_PREFIX`](Self::EVIDENCE_PREFIX) exports).
    pub const FILES: [&'static str; 9] = [
        "manifest.json",
        "lineage.json",
        "openlineage.json",
        LINEAGE_STAMP,
        "graph.json",
        "plan.json",
        "run.json",
        "branch_diff.json",
        "environment.json",
    ];

    /// The exports of each reference's environment evidence start with this
    /// (`environment_<ref slug>.json`).
    pub const EVIDENCE_PREFIX: &'static str = "environment_";

    pub fn new(path: impl Into<PathBuf>) -> Self {
        ArtifactDir { path: path.into() }
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Writes `value` as `name` (compact: the manifest of a 10,000-model workspace is tens
    /// of megabytes).
    pub fn write(&self, name: &str, value: &impl Serialize) -> Result<(), Diagnostic> {
        let text = serde_json::to_string(value).expect("reports serialise");
        self.write_text(name, &text)
    }

    fn write_text(&self, name: &str, text: &str) -> Result<(), Diagnostic> {
        // A name of its own per writer: concurrent `check`/`plan` runs each rename a whole
        // file into place (the last one wins) instead of failing on a shared temp file.
        static NEXT: AtomicU64 = AtomicU64::new(0);
        let write = || -> std::io::Result<()> {
            std::fs::create_dir_all(&self.path)?;
            let path = self.path.join(name);
            let n = NEXT.fetch_add(1, Ordering::Relaxed);
            let tmp = path.with_extension(format!("json.{}.{n}.tmp", std::process::id()));
            std::fs::write(&tmp, phlo_transform_core::secrets::scrub(text))?;
            std::fs::rename(tmp, path)
        };
        write().map_err(|e| self.unwritable(name, e))
    }

    fn unwritable(&self, name: &str, e: std::io::Error) -> Diagnostic {
        Diagnostic::error(
            codes::STATE_WRITE_FAILED,
            format!("cannot write artifact {name}: {e}"),
        )
        .with_help(format!("check that {} is writable", self.path.display()))
    }

    /// manifest.json and graph.json, and the lineage documents when `lineage` says so (see
    /// [`ArtifactDir::write_lineage`]). The documents are serialised on their own threads.
    pub fn write_compile(
        &self,
        c: &Compilation,
        lineage: LineageArtifacts,
        design: &DesignEvents<'_>,
    ) -> Result<(), Diagnostic> {
        std::thread::scope(|s| {
            let graph = s.spawn(|| self.write("graph.json", &c.graph_document()));
            let lineage = s.spawn(|| self.write_lineage(c, lineage, design));
            let manifest = self.write("manifest.json", &c.manifest());
            let graph = graph.join().expect("artifact threads do not panic");
            let lineage = lineage.join().expect("artifact threads do not panic");
            manifest.and(graph).and(lineage)
        })
    }

    /// lineage.json and openlineage.json, unless they are current (their stamp matches) or
    /// `wanted` says not to create them.
    pub fn write_lineage(
        &self,
        c: &Compilation,
        wanted: LineageArtifacts,
        design: &DesignEvents<'_>,
    ) -> Result<(), Diagnostic> {
        let stamp = c.lineage_stamp(&design.context);
        let present = ["lineage.json", "openlineage.json"].map(|n| self.path.join(n).is_file());
        let recorded = match present {
            [false, false] => None,
            // Both documents and the stamp they were written with; a missing piece is stale.
            [true, true] => {
                Some(std::fs::read_to_string(self.path.join(LINEAGE_STAMP)).unwrap_or_default())
            }
            _ => Some(String::new()),
        };
        if !wanted.should_write(recorded.as_deref(), &stamp) {
            return Ok(());
        }
        std::thread::scope(|s| {
            let events = s.spawn(|| self.write_text("openlineage.json", &(design.json)()));
            let graph = self.write("lineage.json", &c.lineage().document());
            graph.and(events.join().expect("artifact threads do not panic"))
        })?;
        std::fs::write(self.path.join(LINEAGE_STAMP), stamp)
            .map_err(|e| self.unwritable(LINEAGE_STAMP, e))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_artifact_is_written_whole_with_secrets_scrubbed() {
        let dir = tempfile::tempdir().unwrap();
        let artifacts = ArtifactDir::new(dir.path().join("nested/transform"));
        phlo_transform_core::secrets::register("artifact-unit-secret-5e2a");
        let value =
            serde_json::json!({ "url": "postgres://u@h/db?password=artifact-unit-secret-5e2a" });
        artifacts.write("plan.json", &value).unwrap();
        let written = std::fs::read_to_string(artifacts.path().join("plan.json")).unwrap();
        assert!(!written.contains("artifact-unit-secret-5e2a"), "{written}");
        assert!(
            written.starts_with(r#"{"url":"postgres://u@h/db?password="#),
            "{written}"
        );
        // Only the file: the temporary it was written as was renamed into place.
        let names: Vec<_> = std::fs::read_dir(artifacts.path()).unwrap().collect();
        assert_eq!(names.len(), 1);
    }

    #[test]
    fn an_unwritable_directory_is_a_coded_error_with_its_path() {
        let dir = tempfile::tempdir().unwrap();
        let blocked = dir.path().join("transform");
        std::fs::write(&blocked, "a file where the directory should be").unwrap();
        let e = ArtifactDir::new(&blocked)
            .write("run.json", &serde_json::json!({}))
            .unwrap_err();
        assert_eq!(e.code, codes::STATE_WRITE_FAILED);
        assert!(
            e.message.starts_with("cannot write artifact run.json"),
            "{}",
            e.message
        );
        assert!(e.help.unwrap().contains(&blocked.display().to_string()));
    }
}
