//! Shared vocabulary of phlo-transform: model names, diagnostics with stable codes, the
//! hashing helper every version fingerprint is built with, and the order-preserving parallel
//! map (`par`) the compiler and the data diff run their CPU-bound work on.

pub mod diagnostic;
pub mod envelope;
pub mod hash;
pub mod names;
pub mod pack_store;
pub mod par;
pub mod secrets;
pub mod table_layout;

pub use diagnostic::{Code, Diagnostic, Diagnostics, Severity};
pub use envelope::Envelope;
pub use hash::Fingerprint;
pub use names::{check_name, check_segment, did_you_mean, ModelName};
