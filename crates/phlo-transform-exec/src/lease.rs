//! One writer per environment (issue 10). A command that records runs (`run`, `apply`,
//! `test`) holds the environment's writer lease in the state store from before it plans until
//! its run is recorded as finished. The lease expires unless renewed, so a killed process
//! blocks others for at most [`LEASE_TTL`]; a holder on this host whose process is gone is
//! taken over at once. Whoever takes the lease marks the runs a dead writer left `running`
//! as `interrupted` (they can still be resumed).

use chrono::Utc;
use phlo_transform_core::diagnostic::codes;
use phlo_transform_core::Diagnostic;
use phlo_transform_state::{LeaseHolder, LeaseRequest, StateStore};
use std::sync::Arc;
use std::time::Duration;

/// How long a lease lasts without renewal.
pub const LEASE_TTL: Duration = Duration::from_secs(30);
/// How often the holder renews it.
const RENEW_EVERY: Duration = Duration::from_secs(10);
/// How often a waiting writer asks again.
const POLL: Duration = Duration::from_millis(250);

/// The held writer lease of one environment; renewed in the background until released.
pub struct WriterLease {
    store: Arc<dyn StateStore>,
    scope: String,
    holder: String,
    renewal: tokio::task::JoinHandle<()>,
    /// Runs found `running` under no live writer and marked `interrupted`.
    pub interrupted: Vec<String>,
}

impl WriterLease {
    /// Takes the writer lease of `environment`, waiting up to `wait` for another writer to
    /// finish. Y006 when it is still held then; Y001/Y002 when the state cannot be used.
    pub async fn acquire(
        store: Arc<dyn StateStore>,
        environment: &str,
        wait: Duration,
    ) -> Result<WriterLease, Diagnostic> {
        let scope = format!("writer:{environment}");
        let holder = holder_name();
        let deadline = tokio::time::Instant::now() + wait;
        let mut take_over_from: Option<String> = None;
        loop {
            let now = Utc::now();
            let request = LeaseRequest {
                scope: &scope,
                holder: &holder,
                acquired_at: &now.to_rfc3339(),
                now_ms: now.timestamp_millis(),
                ttl_ms: LEASE_TTL.as_millis() as i64,
                take_over_from: take_over_from.as_deref(),
            };
            let held = store
                .acquire_lease(&request)
                .await
                .map_err(|e| state_error(&e.message))?;
            let Some(other) = held else {
                break;
            };
            if is_dead(&other.holder) {
                take_over_from = Some(other.holder);
                continue;
            }
            if tokio::time::Instant::now() >= deadline {
                return Err(busy(environment, &other));
            }
            tokio::time::sleep(POLL).await;
        }
        let interrupted = store
            .interrupt_stale_runs(environment, &crate::failure::now())
            .await
            .map_err(|e| state_error(&e.message))?;
        let renewal = tokio::spawn(renew(store.clone(), scope.clone(), holder.clone()));
        Ok(WriterLease {
            store,
            scope,
            holder,
            renewal,
            interrupted,
        })
    }

    /// Gives the lease up, for the next writer to take at once.
    pub async fn release(self) {
        self.renewal.abort();
        let _ = self.store.release_lease(&self.scope, &self.holder).await;
    }
}

impl Drop for WriterLease {
    fn drop(&mut self) {
        // Not released (an early return): stop renewing; the lease then expires.
        self.renewal.abort();
    }
}

async fn renew(store: Arc<dyn StateStore>, scope: String, holder: String) {
    loop {
        tokio::time::sleep(RENEW_EVERY).await;
        let until = Utc::now().timestamp_millis() + LEASE_TTL.as_millis() as i64;
        // A failed renewal is retried at the next tick; the run's own state writes report a
        // state store that is gone.
        let _ = store.renew_lease(&scope, &holder, until).await;
    }
}

/// `host:pid:nonce`: unique per acquisition, and says which process to check for liveness.
fn holder_name() -> String {
    format!(
        "{}:{}:{}",
        host_name(),
        std::process::id(),
        uuid::Uuid::now_v7().simple()
    )
}

fn host_name() -> String {
    std::fs::read_to_string("/proc/sys/kernel/hostname")
        .or_else(|_| std::fs::read_to_string("/etc/hostname"))
        .map(|h| h.trim().to_string())
        .ok()
        .filter(|h| !h.is_empty() && !h.contains(':'))
        .unwrap_or_else(|| "unknown-host".to_string())
}

/// True when `holder` is a process on this host that no longer exists.
fn is_dead(holder: &str) -> bool {
    let mut parts = holder.splitn(3, ':');
    let (Some(host), Some(pid)) = (parts.next(), parts.next()) else {
        return false;
    };
    let Ok(pid) = pid.parse::<u32>() else {
        return false;
    };
    host != "unknown-host" && host == host_name() && !process_exists(pid)
}

#[cfg(unix)]
fn process_exists(pid: u32) -> bool {
    let Ok(pid) = libc::pid_t::try_from(pid) else {
        return true;
    };
    // SAFETY: signal 0 only checks that the process exists; nothing is delivered.
    let alive = unsafe { libc::kill(pid, 0) } == 0;
    alive || std::io::Error::last_os_error().raw_os_error() != Some(libc::ESRCH)
}

#[cfg(not(unix))]
fn process_exists(_pid: u32) -> bool {
    true
}

fn busy(environment: &str, other: &LeaseHolder) -> Diagnostic {
    let until = chrono::DateTime::from_timestamp_millis(other.expires_ms)
        .map(|t| t.to_rfc3339_opts(chrono::SecondsFormat::Secs, true))
        .unwrap_or_default();
    Diagnostic::error(
        codes::WRITER_BUSY,
        format!(
            "another process is writing environment `{environment}` ({}, since {}; its lease runs until {until} unless renewed)",
            other.holder, other.acquired_at
        ),
    )
    .with_help("wait for that run to finish (`phlo-transform state runs` shows it), then try again; a killed writer's lease expires by itself")
}

fn state_error(message: &str) -> Diagnostic {
    Diagnostic::error(codes::STATE_UNAVAILABLE, message.to_string())
        .with_help("check --state / PHLO_STATE_URL")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_a_missing_process_on_this_host_is_dead() {
        let me = format!("{}:{}:x", host_name(), std::process::id());
        assert!(!is_dead(&me));
        // PIDs are below 2^22 on Linux.
        assert!(is_dead(&format!("{}:{}:x", host_name(), 1u32 << 30)));
        assert!(!is_dead(&format!("elsewhere:{}:x", 1u32 << 30)));
        assert!(!is_dead("garbage"));
    }
}
