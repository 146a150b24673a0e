//! Why a query failed while it ran, decided from the error's variants, never its text:
//!
//! - **SQL** (E006): the model's SQL cannot compute its rows — a division by zero, an
//!   overflow, a value a cast cannot convert; or (E007) the rows break a constraint of the
//!   table (NOT NULL, CHECK). Never retried: the same data fails the same way.
//! - **Engine** (A006): the engine failed — resources exhausted, an internal error, something
//!   it does not implement. Not retried.
//! - **I/O** (A002): storage or commit contention, and the machine failing under the query
//!   (a full disk, an exceeded quota, a device error) wherever in the error it shows
//!   ([`machine_failure`]). Retryable.

use datafusion::arrow::error::ArrowError;
use datafusion::common::DataFusionError;
use deltalake::DeltaTableError;
use phlo_transform_core::diagnostic::codes;

use crate::AdapterError;

/// What a run-time failure is the fault of.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Cause {
    Sql,
    /// The rows break a NOT NULL or CHECK constraint of the table.
    Constraint,
    Engine,
    Io,
}

impl Cause {
    /// The adapter error for a failure of this cause.
    pub fn error(self, message: impl Into<String>) -> AdapterError {
        let (code, retryable) = match self {
            Cause::Sql => (codes::SQL_RUNTIME_ERROR, false),
            Cause::Constraint => (codes::CONSTRAINT_VIOLATED, false),
            Cause::Engine => (codes::ENGINE_FAILED, false),
            Cause::Io => (codes::WRITE_FAILED, true),
        };
        AdapterError {
            code,
            message: message.into(),
            retryable,
            help: None,
        }
    }
}

/// An Arrow compute error: what the SQL asked of the data, except for I/O and Arrow's own
/// limits.
pub fn of_arrow(e: &ArrowError) -> (Cause, String) {
    use ArrowError::*;
    match e {
        DivideByZero => (Cause::Sql, "division by zero".into()),
        ArithmeticOverflow(m) => (Cause::Sql, format!("arithmetic overflow: {m}")),
        CastError(m) => (Cause::Sql, format!("cast failed: {m}")),
        ParseError(m) => (Cause::Sql, format!("cannot parse value: {m}")),
        InvalidArgumentError(m) => (Cause::Sql, format!("invalid argument: {m}")),
        ComputeError(m) => (Cause::Sql, m.clone()),
        IoError(m, _) => (Cause::Io, m.clone()),
        ExternalError(inner) => match inner.downcast_ref::<DataFusionError>() {
            Some(df) => of_datafusion(df),
            None => (Cause::Engine, inner.to_string()),
        },
        other => (Cause::Engine, other.to_string()),
    }
}

/// True when `e` failed because of the machine, not the SQL: a full disk (ENOSPC), an
/// exceeded quota (EDQUOT) or a device I/O error (EIO), found as an `io::Error` anywhere in its
/// causes or, where a layer flattened it to text (delta-rs's `Generic`, a DataFusion
/// `Execution` message), by the operating system's own message for it.
pub fn machine_failure(e: &(dyn std::error::Error + 'static)) -> bool {
    const OS_ERRORS: [i32; 3] = [libc::ENOSPC, libc::EDQUOT, libc::EIO];
    let mut cause = Some(e);
    while let Some(c) = cause {
        if let Some(io) = c.downcast_ref::<std::io::Error>() {
            if matches!(
                io.kind(),
                std::io::ErrorKind::StorageFull | std::io::ErrorKind::QuotaExceeded
            ) || io.raw_os_error().is_some_and(|n| OS_ERRORS.contains(&n))
            {
                return true;
            }
        }
        cause = c.source();
    }
    let text = e.to_string();
    OS_ERRORS.iter().any(|n| {
        // "No space left on device (os error 28)" → "No space left on device".
        let message = std::io::Error::from_raw_os_error(*n).to_string();
        let words = message.split(" (os error").next().unwrap_or(&message);
        text.contains(words)
    })
}

/// A DataFusion execution error, by its root cause.
pub fn of_datafusion(e: &DataFusionError) -> (Cause, String) {
    if machine_failure(e) {
        return (Cause::Io, e.strip_backtrace());
    }
    match e.find_root() {
        DataFusionError::ArrowError(a, _) => of_arrow(a),
        DataFusionError::IoError(io) => (Cause::Io, io.to_string()),
        DataFusionError::ObjectStore(os) => (Cause::Io, os.to_string()),
        DataFusionError::ResourcesExhausted(m)
        | DataFusionError::Internal(m)
        | DataFusionError::NotImplemented(m) => (Cause::Engine, m.clone()),
        DataFusionError::External(inner) => match inner.downcast_ref::<ArrowError>() {
            Some(a) => of_arrow(a),
            None => (Cause::Engine, inner.to_string()),
        },
        // An execution error raised by a function on the data it was given (a malformed
        // timestamp string, an out-of-range argument), or a plan the data makes invalid.
        DataFusionError::Execution(m) | DataFusionError::Plan(m) => (Cause::Sql, m.clone()),
        other => (Cause::Engine, other.strip_backtrace()),
    }
}

/// A delta-rs write failure. delta-rs keeps Arrow errors as values and turns other DataFusion
/// errors into text (`Generic`): those are the query's, as they were before it wrote.
pub fn of_delta(e: &DeltaTableError) -> (Cause, String) {
    if machine_failure(e) {
        return (Cause::Io, e.to_string());
    }
    match e {
        DeltaTableError::Arrow { source } => of_arrow(source),
        DeltaTableError::InvalidData { .. } => (Cause::Constraint, e.to_string()),
        DeltaTableError::ObjectStore { .. }
        | DeltaTableError::Io { .. }
        | DeltaTableError::VersionAlreadyExists(_)
        | DeltaTableError::Transaction { .. } => (Cause::Io, e.to_string()),
        DeltaTableError::Generic(text) => of_flattened(text),
        other => (Cause::Engine, other.to_string()),
    }
}

/// delta-rs flattens every DataFusion error but Arrow's, I/O and object-store ones into text
/// (`DeltaTableError::Generic`), its own constraint check (`InvalidData`, raised inside the
/// write's execution) included; the text is all that is left. The root cause is the part
/// after the last `caused by`, and delta-rs's `InvalidData` message is recognised by its
/// fixed wording. Anything else is the query's, as it was before this write.
fn of_flattened(text: &str) -> (Cause, String) {
    let root = text.rsplit("caused by\n").next().unwrap_or(text);
    let root = ["External error: ", "Arrow error: "]
        .iter()
        .fold(root.trim(), |r, prefix| r.strip_prefix(prefix).unwrap_or(r));
    let line = root.lines().next().unwrap_or(root).trim().to_string();
    if line.starts_with("Invalid data found:") {
        (Cause::Constraint, line)
    } else if let Some(arrow) = arrow_text(&line) {
        of_arrow(&arrow)
    } else {
        (Cause::Sql, line)
    }
}

/// The Arrow compute error whose display `line` is, where its own message is clearer
/// (`Divide by zero error` → division by zero).
fn arrow_text(line: &str) -> Option<ArrowError> {
    (line == "Divide by zero error").then_some(ArrowError::DivideByZero)
}

/// `of_datafusion` as an adapter error.
pub fn datafusion_error(e: &DataFusionError) -> AdapterError {
    let (cause, message) = of_datafusion(e);
    cause.error(message)
}

/// `of_delta` as an adapter error.
pub fn delta_error(e: &DeltaTableError) -> AdapterError {
    let (cause, message) = of_delta(e);
    cause.error(message)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Issue 10: a full disk used to be a non-retryable SQL error.
    #[test]
    fn a_full_disk_is_a_retryable_write_failure_not_sql() {
        let full = || std::io::Error::from_raw_os_error(libc::ENOSPC);
        // Wrapped as a Delta write running in a DataFusion plan reports it.
        let wrapped = DeltaTableError::GenericError {
            source: Box::new(DataFusionError::External(Box::new(full()))),
        };
        let e = delta_error(&wrapped);
        assert_eq!((e.code, e.retryable), (codes::WRITE_FAILED, true));
        // Flattened to text by delta-rs.
        let e = delta_error(&DeltaTableError::Generic(format!(
            "External error: writing part-0001.parquet: {}",
            full()
        )));
        assert_eq!((e.code, e.retryable), (codes::WRITE_FAILED, true));
        let e = datafusion_error(&DataFusionError::Execution(format!("spilling: {}", full())));
        assert_eq!((e.code, e.retryable), (codes::WRITE_FAILED, true));
        // An SQL error stays one.
        let sql = DataFusionError::Execution("Cannot cast string 'x' to Int32".into());
        assert_eq!(datafusion_error(&sql).code, codes::SQL_RUNTIME_ERROR);
    }

    #[test]
    fn causes_follow_the_error_variants() {
        let arrow = |e| of_arrow(&e).0;
        assert_eq!(arrow(ArrowError::DivideByZero), Cause::Sql);
        assert_eq!(arrow(ArrowError::CastError("x".into())), Cause::Sql);
        assert_eq!(arrow(ArrowError::MemoryError("x".into())), Cause::Engine);
        let df = |e| of_datafusion(&e).0;
        assert_eq!(
            df(
                DataFusionError::ArrowError(Box::new(ArrowError::DivideByZero), None)
                    .context("while writing")
            ),
            Cause::Sql
        );
        assert_eq!(
            df(DataFusionError::ResourcesExhausted("m".into())),
            Cause::Engine
        );
        assert_eq!(
            df(DataFusionError::IoError(std::io::Error::other("disk"))),
            Cause::Io
        );
        let delta = |e| of_delta(&e);
        assert_eq!(
            delta(DeltaTableError::Arrow {
                source: ArrowError::DivideByZero
            }),
            (Cause::Sql, "division by zero".to_string())
        );
        assert_eq!(
            delta(DeltaTableError::Generic(
                "Optimizer rule 'simplify_expressions' failed\ncaused by\nArrow error: Cast \
                 error: Cannot cast string 'seven' to value of Int32 type"
                    .into()
            )),
            (
                Cause::Sql,
                "Cast error: Cannot cast string 'seven' to value of Int32 type".to_string()
            )
        );
        assert_eq!(
            delta(DeltaTableError::Generic(
                "External error: Invalid data found: 1 rows failed validation check.\nPreview"
                    .into()
            ))
            .0,
            Cause::Constraint
        );
        let (cause, _) = of_delta(&DeltaTableError::VersionAlreadyExists(3));
        assert!(cause.error("m").retryable);
    }
}
