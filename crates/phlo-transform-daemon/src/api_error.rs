//! The daemon's errors: `{"error": {"code", "message", "help"}, "diagnostics": [...]}` with an
//! HTTP status. An `API0xx` code is the daemon's own (docs/codes.md, "Daemon API"); a library
//! diagnostic that stopped a read or an operation keeps its own code and travels whole under
//! `diagnostics`.

use phlo_transform_core::diagnostic::codes;
use phlo_transform_core::{Code, Diagnostic};
use serde::{Deserialize, Serialize};

/// The `error` object of a response, and an operation's `error` once it failed.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ErrorBody {
    pub code: String,
    pub message: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub help: Option<String>,
}

impl ErrorBody {
    /// A daemon error with `code`'s help line from the codes table.
    pub fn new(code: Code, message: impl Into<String>) -> ErrorBody {
        ErrorBody {
            code: code.0.to_string(),
            message: message.into(),
            help: codes::lookup(code.0).map(|info| info.help.to_string()),
        }
    }

    /// The error a library diagnostic states.
    pub fn of(d: &Diagnostic) -> ErrorBody {
        ErrorBody {
            code: d.code.0.to_string(),
            message: d.message.clone(),
            help: d.help.clone(),
        }
    }
}

/// An error response: its status, its `error` and the diagnostics behind it.
#[derive(Debug)]
pub struct ApiError {
    pub status: u16,
    pub error: ErrorBody,
    pub diagnostics: Vec<Diagnostic>,
}

impl ApiError {
    pub fn new(status: u16, code: Code, message: impl Into<String>) -> ApiError {
        ApiError {
            status,
            error: ErrorBody::new(code, message),
            diagnostics: Vec::new(),
        }
    }

    pub fn bad_request(message: impl Into<String>) -> ApiError {
        ApiError::new(400, codes::API_BAD_REQUEST, message)
    }

    /// The library refused: its first error names the response (404 for a name that resolves
    /// to nothing, 422 otherwise), and every diagnostic comes along.
    pub fn from_diagnostics(diagnostics: Vec<Diagnostic>) -> ApiError {
        let Some(first) = diagnostics
            .iter()
            .find(|d| d.is_error())
            .or(diagnostics.first())
        else {
            return ApiError::bad_request("the request could not be answered");
        };
        let status = if first.code == codes::UNKNOWN_MODEL {
            404
        } else {
            422
        };
        ApiError {
            status,
            error: ErrorBody::of(first),
            diagnostics,
        }
    }

    pub fn body(&self) -> serde_json::Value {
        serde_json::json!({ "error": self.error, "diagnostics": self.diagnostics })
    }
}

impl From<Diagnostic> for ApiError {
    fn from(d: Diagnostic) -> ApiError {
        ApiError::from_diagnostics(vec![d])
    }
}

impl From<Vec<Diagnostic>> for ApiError {
    fn from(diagnostics: Vec<Diagnostic>) -> ApiError {
        ApiError::from_diagnostics(diagnostics)
    }
}
