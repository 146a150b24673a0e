//! [`LiveWorkspace`]: the compilation an editor's session works on, kept current with its
//! buffers and the disk.

use phlo_transform_adapter::SchemaRead;
use phlo_transform_compiler::{Compilation, CompileCache};
use phlo_transform_core::Diagnostic;
use phlo_transform_exec::SourceStates;
use phlo_transform_project::Overlay;
use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, RwLock};

/// One published state of the workspace: the compilation readers answer from and the
/// diagnostics an editor shows.
pub struct Published {
    /// Increases with every publication.
    pub generation: u64,
    pub compilation: Arc<Compilation>,
    /// The compilation's diagnostics, except that a buffer that does not parse shows its own
    /// parse errors while `compilation` keeps its last text that parsed, so the models
    /// downstream keep their types mid-edit.
    pub diagnostics: Vec<Diagnostic>,
    /// Why the workspace could not be compiled at all this time (its configuration cannot be
    /// read); `compilation` is then the last one that could.
    pub fatal: Option<Diagnostic>,
    /// The editor's buffers as they were compiled.
    pub buffers: Overlay,
    /// Whether `compilation` was compiled from the previous one (only the edited models and
    /// what reads them), not as a whole workspace.
    pub incremental: bool,
}

impl Published {
    /// `c` shown as it compiled.
    fn as_compiled(c: Compilation, buffers: &Overlay, generation: u64) -> Published {
        Published {
            generation,
            diagnostics: c.diagnostics.iter().cloned().collect(),
            compilation: Arc::new(c),
            fatal: None,
            buffers: buffers.clone(),
            incremental: false,
        }
    }

    /// The text of file `rel` the editor sees: its buffer, else the compiled model's.
    pub fn text(&self, rel: &str) -> Option<&str> {
        if let Some(text) = self.buffers.files.get(rel) {
            return Some(text);
        }
        let models = &self.compilation.workspace.models;
        models
            .iter()
            .find(|m| m.path == rel)
            .map(|m| m.text.as_str())
    }
}

/// A change of the editor's buffers (paths workspace-relative).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum BufferChange {
    /// The editor's text of the file replaces the disk's.
    Set { path: String, text: String },
    /// The editor no longer holds the file: the disk's text counts again.
    Close { path: String },
}

/// The buffers the editor holds, and for each the last text of it that parsed.
#[derive(Default)]
struct Buffers {
    overlay: Overlay,
    last_parsed: HashMap<String, String>,
}

impl Buffers {
    /// Applies the editor's changes; returns the paths they change.
    fn apply(&mut self, changes: Vec<BufferChange>) -> Vec<String> {
        let mut changed = Vec::with_capacity(changes.len());
        for change in changes {
            match change {
                BufferChange::Set { path, text } => {
                    self.overlay.files.insert(path.clone(), text);
                    changed.push(path);
                }
                BufferChange::Close { path } => {
                    self.overlay.files.remove(&path);
                    self.last_parsed.remove(&path);
                    changed.push(path);
                }
            }
        }
        changed
    }
}

/// A workspace compiled in memory and recompiled on every change of a buffer or the disk.
pub struct LiveWorkspace {
    root: PathBuf,
    adapter: Option<String>,
    cache: CompileCache,
    sources: SourceStates,
    buffers: Mutex<Buffers>,
    current: RwLock<Arc<Published>>,
}

impl LiveWorkspace {
    /// Compiles the workspace at `root` for `adapter`'s target (`None`: the workspace's
    /// `[adapter]`), as `check` does. Fails only as `check` fails before it compiles.
    pub fn open(root: &Path, adapter: Option<&str>) -> Result<LiveWorkspace, Diagnostic> {
        let cache = CompileCache::in_memory();
        let sources = SourceStates::default();
        let compilation = compile(root, adapter, &Overlay::default(), &cache, &sources)?;
        let published = Published {
            generation: 0,
            diagnostics: compilation.diagnostics.iter().cloned().collect(),
            compilation: Arc::new(compilation),
            fatal: None,
            buffers: Overlay::default(),
            incremental: false,
        };
        Ok(LiveWorkspace {
            root: published.compilation.workspace.root.clone(),
            adapter: adapter.map(str::to_string),
            cache,
            sources,
            buffers: Mutex::default(),
            current: RwLock::new(Arc::new(published)),
        })
    }

    /// The workspace's root (absolute).
    pub fn root(&self) -> &Path {
        &self.root
    }

    /// The state readers answer from now.
    pub fn snapshot(&self) -> Arc<Published> {
        self.current
            .read()
            .unwrap_or_else(|e| e.into_inner())
            .clone()
    }

    /// The workspace-relative path of `path` (absolute), when it is inside the workspace.
    pub fn relative(&self, path: &Path) -> Option<String> {
        let rel = path.strip_prefix(&self.root).ok()?;
        let parts: Vec<String> = rel
            .components()
            .map(|c| c.as_os_str().to_string_lossy().into_owned())
            .collect();
        (!parts.is_empty()).then(|| parts.join("/"))
    }

    /// Applies the editor's changes to its buffers, then publishes the workspace compiled
    /// with them: one compile however many changes.
    pub fn apply(&self, changes: Vec<BufferChange>) -> Arc<Published> {
        let mut buffers = self.buffers.lock().unwrap_or_else(|e| e.into_inner());
        let changed = buffers.apply(changes);
        self.recompile(&mut buffers, Some(&changed))
    }

    /// [`apply`](Self::apply) when files may also have changed on the disk (saved, or
    /// reported by the editor's file watcher): one whole compile, the sources read again.
    pub fn apply_and_reload(&self, changes: Vec<BufferChange>) -> Arc<Published> {
        let mut buffers = self.buffers.lock().unwrap_or_else(|e| e.into_inner());
        buffers.apply(changes);
        self.sources.forget();
        self.recompile(&mut buffers, None)
    }

    /// Files changed on the disk (saved, created, deleted, renamed; a source's data too):
    /// compiles again, the sources read again.
    pub fn reload(&self) -> Arc<Published> {
        let mut buffers = self.buffers.lock().unwrap_or_else(|e| e.into_inner());
        self.sources.forget();
        self.recompile(&mut buffers, None)
    }

    /// Publishes the workspace compiled with the buffers: from the published compilation
    /// when only the texts of its models changed (the files `changed`, `None`: anything on
    /// the disk may have), else as a whole.
    fn recompile(&self, buffers: &mut Buffers, changed: Option<&[String]>) -> Arc<Published> {
        let previous = self.snapshot();
        let generation = previous.generation + 1;
        let adapter = self.adapter.as_deref();
        let edited = changed
            .filter(|_| previous.fatal.is_none())
            .and_then(|changed| self.edited(&previous.compilation, &buffers.overlay, changed));
        let incremental = edited.is_some();
        let compiled = match edited {
            Some(c) => Ok(c),
            None => compile(
                &self.root,
                adapter,
                &buffers.overlay,
                &self.cache,
                &self.sources,
            ),
        };
        let published = match compiled {
            Err(fatal) => Published {
                generation,
                compilation: previous.compilation.clone(),
                diagnostics: vec![fatal.clone()],
                fatal: Some(fatal),
                buffers: buffers.overlay.clone(),
                incremental: false,
            },
            Ok(c) => self.keeping_last_parsed(c, buffers, generation),
        };
        let published = Arc::new(Published {
            incremental,
            ..published
        });
        *self.current.write().unwrap_or_else(|e| e.into_inner()) = published.clone();
        published
    }

    /// `c` as published: when a buffer does not parse and an earlier text of it did, the
    /// workspace is compiled with that text, and the buffer's own diagnostics are its parse
    /// errors.
    fn keeping_last_parsed(
        &self,
        c: Compilation,
        buffers: &mut Buffers,
        generation: u64,
    ) -> Published {
        let mut broken = Vec::new();
        for (rel, text) in &buffers.overlay.files {
            if does_not_parse(&c, rel) {
                if buffers.last_parsed.contains_key(rel) {
                    broken.push(rel.clone());
                }
            } else {
                buffers.last_parsed.insert(rel.clone(), text.clone());
            }
        }
        if broken.is_empty() {
            return Published::as_compiled(c, &buffers.overlay, generation);
        }
        let mut kept = buffers.overlay.clone();
        for rel in &broken {
            kept.files
                .insert(rel.clone(), buffers.last_parsed[rel].clone());
        }
        let adapter = self.adapter.as_deref();
        let good = match self.edited(&c, &kept, &broken) {
            Some(good) => good,
            None => match compile(&self.root, adapter, &kept, &self.cache, &self.sources) {
                Ok(good) => good,
                Err(_) => return Published::as_compiled(c, &buffers.overlay, generation),
            },
        };
        let in_broken = |d: &Diagnostic| d.file.as_ref().is_some_and(|f| broken.contains(f));
        let diagnostics = good
            .diagnostics
            .iter()
            .filter(|d| !in_broken(d))
            .chain(c.diagnostics.iter().filter(|d| in_broken(d)))
            .cloned()
            .collect();
        Published {
            generation,
            compilation: Arc::new(good),
            diagnostics,
            fatal: None,
            buffers: buffers.overlay.clone(),
            incremental: false,
        }
    }
}

impl LiveWorkspace {
    /// `previous` compiled again with the texts `overlay` (else the disk) gives the files
    /// `changed` and the models whose buffer `previous` did not compile (a buffer that did not
    /// parse was compiled with its last text that did); `None` when that needs a whole compile.
    fn edited(
        &self,
        previous: &Compilation,
        overlay: &Overlay,
        changed: &[String],
    ) -> Option<Compilation> {
        let text = |rel: &str| match overlay.files.get(rel) {
            Some(text) => Some(text.clone()),
            None => std::fs::read_to_string(self.root.join(rel)).ok(),
        };
        let mut edits = Vec::new();
        for rel in changed {
            edits.push((rel.clone(), text(rel)?));
        }
        let compiled = |rel: &str| previous.workspace.models.iter().find(|m| m.path == rel);
        for (rel, buffer) in &overlay.files {
            let stale = compiled(rel).is_some_and(|m| m.text != *buffer);
            if stale && !changed.contains(rel) {
                edits.push((rel.clone(), buffer.clone()));
            }
        }
        phlo_transform_exec::recompile_edited(
            previous,
            self.adapter.as_deref(),
            SchemaRead::Cached,
            &edits,
            &self.cache,
        )
    }
}

/// The workspace at `root` compiled with `overlay`, as `check` compiles it.
fn compile(
    root: &Path,
    adapter: Option<&str>,
    overlay: &Overlay,
    cache: &CompileCache,
    sources: &SourceStates,
) -> Result<Compilation, Diagnostic> {
    phlo_transform_exec::compile_for_target_with(
        root,
        adapter,
        SchemaRead::Cached,
        overlay,
        cache,
        sources,
    )
}

/// Whether model file `rel` failed to parse (an S-code on it).
fn does_not_parse(c: &Compilation, rel: &str) -> bool {
    c.diagnostics
        .iter()
        .any(|d| d.file.as_deref() == Some(rel) && d.code.0.starts_with('S'))
}
