//! The live workspace (SPEC §85–88): one compilation held in memory for a long-lived process
//! (the language server, the daemon), recompiled from the editor's buffers on every change.
//!
//! Invariants:
//! - A snapshot ([`LiveWorkspace::snapshot`]) is an immutable `Arc<Compilation>`; a change
//!   publishes a new one whole, so a reader never sees half an update.
//! - A snapshot is exactly what a cold `check` of the same files gives: the live workspace
//!   compiles through the command line's own path (`phlo_transform_exec::compile_for_target_with`)
//!   with an in-memory compile cache whose entries are keyed by everything they depend on, so
//!   an edit re-parses only the edited file and re-types only the models whose inputs'
//!   schemas changed, and nothing else can differ (`tests/live.rs` checks it on random edits).
//! - Positions are 0-based lines and character columns ([`Position`]); protocol encodings
//!   are the caller's business.

mod completion;
mod hover;
mod navigation;
mod position;
mod rename;
mod symbol;
mod workspace;

pub use completion::{completions, Completion, CompletionKind};
pub use hover::hover;
pub use navigation::{definition, references, FileRange};
pub use position::{Position, Range};
pub use rename::{rename_at, rename_model, RenameEdits};
pub use workspace::{BufferChange, LiveWorkspace, Published};
