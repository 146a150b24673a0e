//! The one error type every adapter returns.

use phlo_transform_core::diagnostic::codes;
use phlo_transform_core::Code;

#[derive(Clone, Debug)]
pub struct AdapterError {
    pub code: Code,
    pub message: String,
    /// True only for failures a retry may cure (I/O, contention), never for SQL errors.
    pub retryable: bool,
}

impl AdapterError {
    /// A failure that a retry would not cure.
    pub fn new(code: Code, message: impl Into<String>) -> Self {
        AdapterError {
            code,
            message: message.into(),
            retryable: false,
        }
    }

    /// A failure a retry may cure.
    pub fn retryable(code: Code, message: impl Into<String>) -> Self {
        AdapterError {
            retryable: true,
            ..AdapterError::new(code, message)
        }
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
