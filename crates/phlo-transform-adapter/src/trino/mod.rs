//! The Trino engine: a client for Trino's statement protocol (the adapter builds on it).

pub mod client;

pub use client::{Trino, TrinoConfig, TrinoError};
