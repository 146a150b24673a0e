//! How failures are classified and retried (SPEC §65): only adapter failures the adapter
//! marked retryable are retried, with bounded exponential backoff; SQL errors, engine
//! failures, timeouts, test failures, blocked and cancelled work never are. The adapter
//! decides the cause from the engine's error variants (`phlo_transform_adapter::cause`); the
//! category follows from its code.

use phlo_transform_adapter::AdapterError;
use phlo_transform_core::diagnostic::codes;
use phlo_transform_events::{Category, ErrorInfo};
use std::time::Duration;

pub(crate) fn now() -> String {
    chrono::Utc::now().to_rfc3339_opts(chrono::SecondsFormat::Millis, true)
}

/// An adapter error of `attempt`: a query that failed to plan or run on its data is an
/// SQL error, an engine fault the engine's, anything else the adapter's; retryable only
/// when the adapter says so. The adapter's help line, when it has one, comes along.
pub(crate) fn adapter_failure(e: AdapterError, attempt: u32) -> ErrorInfo {
    let category = match e.code {
        codes::QUERY_FAILED | codes::SQL_RUNTIME_ERROR | codes::CONSTRAINT_VIOLATED
            if !e.retryable =>
        {
            Category::Sql
        }
        codes::ENGINE_FAILED => Category::Engine,
        _ => Category::Adapter,
    };
    ErrorInfo {
        retryable: e.retryable,
        help: e.help,
        ..ErrorInfo::new(category, e.code, e.message).at_attempt(attempt)
    }
}

/// How often and how patiently retryable failures are retried.
#[derive(Clone, Copy, Debug)]
pub struct RetryPolicy {
    /// Extra attempts after the first (`--retries`).
    pub retries: u32,
    /// The wait before the first retry; each further retry waits twice as long…
    pub base_delay: Duration,
    /// …up to this bound.
    pub max_delay: Duration,
}

impl RetryPolicy {
    pub fn new(retries: u32) -> Self {
        RetryPolicy {
            retries,
            base_delay: Duration::from_secs(1),
            max_delay: Duration::from_secs(30),
        }
    }

    /// The wait before the attempt after failed attempt `attempt` (1-based), or `None` when
    /// the failure is final.
    pub(crate) fn retry_after(&self, failure: &ErrorInfo) -> Option<Duration> {
        if !failure.retryable || failure.category != Category::Adapter {
            return None;
        }
        if failure.attempt > self.retries {
            return None;
        }
        let doubling = 2u32.saturating_pow(failure.attempt.saturating_sub(1));
        Some(self.base_delay.saturating_mul(doubling).min(self.max_delay))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn adapter(retryable: bool, attempt: u32) -> ErrorInfo {
        adapter_failure(
            AdapterError {
                retryable,
                ..AdapterError::new(codes::WRITE_FAILED, "connection reset")
            },
            attempt,
        )
    }

    #[test]
    fn backoff_doubles_up_to_its_bound_and_stops_after_the_retries() {
        let policy = RetryPolicy {
            retries: 5,
            base_delay: Duration::from_millis(100),
            max_delay: Duration::from_millis(500),
        };
        let waits: Vec<Option<u128>> = (1..=6)
            .map(|n| policy.retry_after(&adapter(true, n)).map(|d| d.as_millis()))
            .collect();
        assert_eq!(
            waits,
            vec![Some(100), Some(200), Some(400), Some(500), Some(500), None]
        );
    }

    #[test]
    fn only_retryable_adapter_failures_are_retried() {
        let policy = RetryPolicy::new(3);
        assert!(policy.retry_after(&adapter(false, 1)).is_none());
        let sql = adapter_failure(AdapterError::new(codes::QUERY_FAILED, "cast failed"), 1);
        assert_eq!(sql.category, Category::Sql);
        assert!(policy.retry_after(&sql).is_none());
        let timeout = ErrorInfo::new(Category::Timeout, codes::MODEL_TIMEOUT, "slow");
        assert!(policy.retry_after(&timeout.at_attempt(1)).is_none());
    }
}
