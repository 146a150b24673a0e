//! Shared vocabulary of phlo-transform: model names, diagnostics with stable codes and
//! the hashing helper every version fingerprint is built with.

pub mod diagnostic;
pub mod hash;
pub mod names;

pub use diagnostic::{Code, Diagnostic, Diagnostics, Severity};
pub use hash::Fingerprint;
pub use names::{did_you_mean, ModelName};
