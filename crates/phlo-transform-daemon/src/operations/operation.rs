//! An operation and its submission, status and progress: the values the API shows and the
//! journal keeps.

use crate::api_error::{ApiError, ErrorBody};
use phlo_transform_plan::SelectorSpec;
use serde::{Deserialize, Serialize};

/// What an operation does.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Kind {
    /// `run`: plan, build what changed, test.
    Run,
    /// `test`: the data tests against what exists.
    Test,
    /// `run --resume <run>`.
    Resume,
    /// `run --retry-failed <run>`.
    RetryFailed,
    /// Compile the workspace again from the disk (and read the sources again).
    Reload,
    /// `promote <candidate> --to <to>`: the gates evaluated, the candidate published when
    /// they pass.
    Promote,
}

/// A submission: the body of `POST /v1/operations`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Submission {
    pub kind: Kind,
    /// Selector terms, as `run`'s positional terms and `--select`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub select: Vec<String>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub exclude: Vec<String>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub tags: Vec<String>,
    /// The environment (`--ref`); default main.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub environment: Option<String>,
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub full_refresh: bool,
    /// The run `resume` and `retry_failed` continue (an id or a unique prefix).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub run: Option<String>,
    /// Models built at once (`-j`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub jobs: Option<usize>,
    /// The reference `promote` publishes (its positional argument).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub candidate: Option<String>,
    /// The reference `promote` publishes into (`--to`); default main.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub to: Option<String>,
    /// `promote --check`: the gates only, nothing published.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub check: bool,
    /// `promote --require-diff`.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub require_diff: bool,
    /// The idempotency key, when not given as the `Idempotency-Key` header.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub idempotency_key: Option<String>,
}

impl Submission {
    /// API003 for a submission that cannot be executed as written.
    pub fn validate(&self) -> Result<(), ApiError> {
        let continues = matches!(self.kind, Kind::Resume | Kind::RetryFailed);
        if continues && self.run.is_none() {
            return Err(ApiError::bad_request(
                "`resume` and `retry_failed` need `run`: the id of the run to continue",
            ));
        }
        if continues && (!self.select.is_empty() || !self.exclude.is_empty() || self.full_refresh) {
            return Err(ApiError::bad_request(
                "selection and `full_refresh` do not apply to resume / retry_failed: the earlier run defines the work",
            ));
        }
        if !continues && self.run.is_some() {
            return Err(ApiError::bad_request(
                "`run` only applies to `resume` and `retry_failed`",
            ));
        }
        if self.jobs == Some(0) {
            return Err(ApiError::bad_request("`jobs` must be at least 1"));
        }
        let promotes = self.kind == Kind::Promote;
        if promotes && self.candidate.is_none() {
            return Err(ApiError::bad_request(
                "`promote` needs `candidate`: the reference to publish",
            ));
        }
        let selects = !self.select.is_empty() || !self.exclude.is_empty() || !self.tags.is_empty();
        if promotes
            && (selects || self.full_refresh || self.jobs.is_some() || self.environment.is_some())
        {
            return Err(ApiError::bad_request(
                "selection, `environment`, `full_refresh` and `jobs` do not apply to promote: it publishes `candidate` into `to`",
            ));
        }
        if !promotes
            && (self.candidate.is_some() || self.to.is_some() || self.check || self.require_diff)
        {
            return Err(ApiError::bad_request(
                "`candidate`, `to`, `check` and `require_diff` only apply to `promote`",
            ));
        }
        Ok(())
    }

    pub fn selection(&self) -> SelectorSpec {
        SelectorSpec {
            include: self.select.clone(),
            exclude: self.exclude.clone(),
            tags: self.tags.clone(),
            ..SelectorSpec::default()
        }
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Status {
    Queued,
    Running,
    Succeeded,
    Failed,
    Cancelled,
}

impl Status {
    pub fn is_finished(self) -> bool {
        matches!(self, Status::Succeeded | Status::Failed | Status::Cancelled)
    }
}

/// How far a run has come, from its events.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Progress {
    pub models_total: usize,
    pub models_done: usize,
    pub tests_total: usize,
    pub tests_done: usize,
}

/// One operation, as `GET /v1/operations/<id>` shows it and the journal keeps it.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct Operation {
    pub id: String,
    pub status: Status,
    pub submission: Submission,
    pub idempotency_key: Option<String>,
    pub submitted_at: String,
    pub started_at: Option<String>,
    pub finished_at: Option<String>,
    /// The state store's run id, once the run started.
    pub run_id: Option<String>,
    pub progress: Progress,
    /// What the command's `--json` prints: the run report (run, test, resume, retry_failed)
    /// or the check report (reload).
    pub result: Option<serde_json::Value>,
    pub error: Option<ErrorBody>,
    /// Cancellation was asked for.
    #[serde(default)]
    pub cancel_requested: bool,
}

impl Operation {
    pub(super) fn finish(
        &mut self,
        status: Status,
        result: Option<serde_json::Value>,
        error: Option<ErrorBody>,
    ) {
        self.status = status;
        self.result = result;
        self.error = error;
        self.finished_at = Some(now());
    }
}

pub(super) fn now() -> String {
    chrono::Utc::now().to_rfc3339_opts(chrono::SecondsFormat::Millis, true)
}
