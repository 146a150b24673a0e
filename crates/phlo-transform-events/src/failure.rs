//! A run's failures (SPEC §65): what kind, the engine's code, which attempt, when, and
//! whether a retry may cure it. The executor decides them; the report and events carry them.

use phlo_transform_core::Code;
use serde::Serialize;

/// The stable machine-readable kind of a failure.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Category {
    /// The engine's storage failed (I/O, contention, an unreadable relation).
    Adapter,
    /// The model's SQL failed when it ran (a bad cast, a division by zero, rows breaking a
    /// table constraint).
    Sql,
    /// The engine itself failed (resources exhausted, an internal error).
    Engine,
    /// A data test found violations or could not run.
    Test,
    /// An attempt ran longer than `--model-timeout`.
    Timeout,
    /// Stopped by `--fail-fast` or an interrupt before it finished.
    Cancelled,
    /// An upstream model did not materialise.
    Dependency,
    /// The state store could not record progress.
    State,
    /// A bug: a panicking task, an unbuildable query.
    Internal,
}

impl Category {
    /// The word it serialises to, as the state store records it.
    pub fn as_str(self) -> &'static str {
        match self {
            Category::Adapter => "adapter",
            Category::Sql => "sql",
            Category::Engine => "engine",
            Category::Test => "test",
            Category::Timeout => "timeout",
            Category::Cancelled => "cancelled",
            Category::Dependency => "dependency",
            Category::State => "state",
            Category::Internal => "internal",
        }
    }
}

/// A structured failure (SPEC §65): what kind, the engine's code, which attempt, when, and
/// whether a retry may cure it.
#[derive(Clone, Debug, Serialize)]
pub struct ErrorInfo {
    pub code: String,
    pub category: Category,
    pub message: String,
    /// The attempt that failed (1-based); 0 for work that never started (blocked, cancelled).
    pub attempt: u32,
    pub at: String,
    pub retryable: bool,
    /// The model's file, for failures of a model's own query; the source's file for a source
    /// that could not be read (R003).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub file: Option<String>,
    /// What to do about it, where the failure says more than its code's help.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub help: Option<String>,
}

impl ErrorInfo {
    pub fn new(category: Category, code: Code, message: impl Into<String>) -> Self {
        ErrorInfo {
            code: code.0.into(),
            category,
            message: message.into(),
            attempt: 0,
            at: now(),
            retryable: false,
            file: None,
            help: None,
        }
    }

    /// Names the model file whose query failed.
    pub fn in_file(mut self, file: Option<String>) -> Self {
        self.file = file;
        self
    }

    pub fn at_attempt(mut self, attempt: u32) -> Self {
        self.attempt = attempt;
        self
    }
}

fn now() -> String {
    chrono::Utc::now().to_rfc3339_opts(chrono::SecondsFormat::Millis, true)
}
