//! The one error type every adapter returns.

use phlo_transform_core::diagnostic::codes;
use phlo_transform_core::Code;

#[derive(Clone, Debug)]
pub struct AdapterError {
    pub code: Code,
    pub message: String,
    /// True only for failures a retry may cure (I/O, contention), never for SQL errors.
    pub retryable: bool,
    /// What to do about this failure, where the adapter knows more than the code's general
    /// help (a relation dropped behind our back, a server gone): shown under the failed
    /// model in a run report.
    pub help: Option<String>,
}

impl AdapterError {
    /// A failure that a retry would not cure.
    pub fn new(code: Code, message: impl Into<String>) -> Self {
        AdapterError {
            code,
            message: message.into(),
            retryable: false,
            help: None,
        }
    }

    /// A failure a retry may cure.
    pub fn retryable(code: Code, message: impl Into<String>) -> Self {
        AdapterError {
            retryable: true,
            ..AdapterError::new(code, message)
        }
    }

    /// This failure with `help`, what to do about it.
    pub fn with_help(mut self, help: impl Into<String>) -> Self {
        self.help = Some(help.into());
        self
    }
}

impl std::fmt::Display for AdapterError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "[{}] {}", self.code, self.message)
    }
}

/// [`AdapterError::new`], short for the local engine's many call sites.
pub(crate) fn err(code: Code, message: impl Into<String>) -> AdapterError {
    AdapterError::new(code, message)
}

/// A file-system failure of the local engine: a write failure a retry may cure.
pub(crate) fn io_err(message: impl Into<String>) -> AdapterError {
    AdapterError::retryable(codes::WRITE_FAILED, message)
}

/// Help lines of the SQL warehouses' run-time failures (PostgreSQL, DuckDB), by what failed:
/// every failure they classify carries one (issue 13, item 7).
pub(crate) mod help {
    /// A001: the engine refused or failed the statement.
    pub const SQL: &str = "fix the model's SQL where the message points \
        (`phlo-transform inspect <model> --sql` prints the statements sent); \
        the previous table stays and nothing was recorded as built";
    /// A002: a concurrent transaction won.
    pub const CONFLICT: &str = "another transaction wrote the same relation at the same time: \
        run again (`--retries <n>` retries it within the run)";
    /// A003: a relation is not in the warehouse.
    pub const RELATION_MISSING: &str = "a relation the statement reads is not in the \
        warehouse: dropped behind phlo-transform's back, or never built. Re-create it (a \
        model: `phlo-transform run` builds it again), then run again; nothing was recorded \
        as built";
    /// A008 during a run: the server went away.
    pub const CONNECTION_LOST: &str = "the warehouse went away or ran out of resources: check \
        that it is running and reachable, then run again (`--retries <n>` retries it within \
        the run; `run --resume` continues a run that stopped)";
    /// A011.
    pub const CANCELLED: &str = "cancelled by --model-timeout, --fail-fast, Ctrl-C or an \
        operator: raise --model-timeout if the model needs longer";
}
