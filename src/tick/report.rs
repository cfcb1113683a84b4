//! What a tick did ([`TickReport`]) and the tick log's `details` it is recorded with.

use serde_json::{json, Map, Value as Json};

use super::lanes::COUNTERS;
use crate::exec::meter::Usage;
use crate::lane::{Counts, LaneStep, RowCount};
use crate::model::state::TickOutcome;
use crate::usage::project::WorkLane;

/// What a tick did.
#[derive(Debug, Clone, PartialEq)]
pub struct TickReport {
    /// Lanes that made progress, in the order they first did (`work` when none did).
    pub lanes: Vec<&'static str>,
    /// Idle (nothing changed), progress, budget (progress, and stopped with due work left) or
    /// error.
    pub outcome: TickOutcome,
    /// What the lanes did, by tick-log counter: every counter of every kind of lane
    /// ([`COUNTERS`]), 0 when unused. Read one with [`TickReport::count`].
    pub counts: Counts,
    /// Statements issued, the log write included when the tick is recorded ([`super::run`]).
    pub statements: u64,
    /// Rows read and written, as the database reported them (the log write's [`super::budget::LOG_ROWS`]
    /// included when the tick is recorded).
    pub rows: RowCount,
    /// The daily budget stopped a lane that had work due: it rests until the next UTC day.
    pub daily_spent: bool,
    /// The first error, prefixed with the lane (or step) it came from; the tick log says only
    /// that there was one.
    pub error: Option<String>,
    /// The continuation token to send: this tick took the continuation baton.
    pub continue_with: Option<String>,
}

impl TickReport {
    pub(super) fn new() -> TickReport {
        TickReport {
            lanes: Vec::new(),
            outcome: TickOutcome::Idle,
            counts: Counts::declare(COUNTERS),
            statements: 0,
            rows: RowCount::default(),
            daily_spent: false,
            error: None,
            continue_with: None,
        }
    }

    /// The count of the tick-log counter `name` (`"jobs"`, `"deletedRows"`, …).
    pub fn count(&self, name: &str) -> u64 {
        debug_assert!(self.counts.has(name), "no lane counts {name:?}");
        self.counts.get(name)
    }

    pub(super) fn note_error(&mut self, lane: &str, e: impl std::fmt::Display) {
        self.outcome = TickOutcome::Error;
        self.error.get_or_insert_with(|| format!("{lane} lane: {e}"));
    }

    /// Takes in a step of `lane`: progress, unless it only looked, and the failure it recorded.
    pub(super) fn stepped(&mut self, lane: &'static str, step: &LaneStep) {
        if step.progressed {
            if self.outcome == TickOutcome::Idle {
                self.outcome = TickOutcome::Progress;
            }
            if !self.lanes.contains(&lane) {
                self.lanes.push(lane);
            }
        }
        if let Some(failure) = &step.failure {
            self.note_error(lane, failure);
        }
    }

    /// The rotation is over: a tick that made progress and stopped with due work left for lack
    /// of budget ends `budget` (which asks for a continuation).
    pub(super) fn rotation_ended(&mut self, stopped_by_budget: bool) {
        if stopped_by_budget && self.outcome == TickOutcome::Progress {
            self.outcome = TickOutcome::Budget;
        }
        if self.lanes.is_empty() {
            self.lanes.push(WorkLane::NAME);
        }
    }
}

/// The tick log's `details`: every lane counter, whether the tick asked for a continuation, what
/// the database reported for the statements before the log write, and whether there was an
/// error (its cause goes to the worker log only). Keys sort (`openapi.json`, `TickDetails`).
pub(super) fn details(report: &TickReport, usage: &Usage) -> String {
    let mut details: Map<String, Json> =
        report.counts.iter().map(|(name, n)| (name.to_owned(), Json::from(n))).collect();
    details.insert("continued".into(), Json::from(report.continue_with.is_some()));
    details.insert("dailyBudgetSpent".into(), Json::from(report.daily_spent));
    details.insert(
        "d1".into(),
        json!({
            "results": usage.results,
            "failed": usage.failed,
            "rowsRead": usage.rows_read,
            "rowsWritten": usage.rows_written,
            "maxBinds": usage.max_binds,
            "maxSqlBytes": usage.max_sql_bytes,
        }),
    );
    details.insert("error".into(), json!(report.error.as_ref().map(|_| "see worker logs")));
    Json::Object(details).to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_step_that_only_looked_is_not_progress() {
        let mut report = TickReport::new();
        report.stepped("storage", &LaneStep::looked());
        assert_eq!((report.outcome, report.lanes.clone()), (TickOutcome::Idle, vec![]));
        report.rotation_ended(true);
        assert_eq!(report.outcome, TickOutcome::Idle, "looking only never asks for a continuation");
        assert_eq!(report.lanes, ["work"]);

        let mut report = TickReport::new();
        report.stepped("storage", &LaneStep::looked());
        report.stepped("deletion", &LaneStep::progress());
        report.stepped("deletion", &LaneStep::progress());
        assert_eq!((report.outcome, report.lanes.clone()), (TickOutcome::Progress, vec!["deletion"]));
        report.rotation_ended(true);
        assert_eq!(report.outcome, TickOutcome::Budget, "progress stopped by the budget");
    }

    #[test]
    fn a_failure_a_lane_recorded_is_the_ticks_error() {
        let mut report = TickReport::new();
        report.stepped("deletion", &LaneStep { failure: Some("posts at work: boom".into()), ..LaneStep::progress() });
        assert_eq!(report.outcome, TickOutcome::Error);
        assert_eq!(report.error.as_deref(), Some("deletion lane: posts at work: boom"));
        assert_eq!(report.lanes, ["deletion"]);
    }

    #[test]
    fn the_tick_log_details_keep_their_keys_and_shape() {
        let mut report = TickReport::new();
        report.counts.add(crate::usage::project::JOBS, 3);
        report.counts.add(crate::storage::sweep::STORAGE_OPERATIONS, 2);
        report.error = Some("x".into());
        let usage = Usage {
            results: 4,
            failed: 1,
            rows_read: 5,
            rows_written: 6,
            max_binds: 7,
            max_sql_bytes: 8,
            ..Usage::default()
        };
        // The shape the workerd tests, the console and openapi.json read.
        let expected = json!({
            "scheduledPublished": 0,
            "schedulesDropped": 0,
            "scheduleFailures": 0,
            "jobs": 3,
            "failedJobs": 0,
            "conflicts": 0,
            "splitJobs": 0,
            "cpuModelUs": 0,
            "repairSteps": 0,
            "deletionSteps": 0,
            "deletedRows": 0,
            "deletionsFinalized": 0,
            "deletionFailures": 0,
            "fieldDeletionSteps": 0,
            "fieldOccurrencesDeleted": 0,
            "fieldDeletionsFinalized": 0,
            "fieldDeletionFailures": 0,
            "mediaPurged": 0,
            "purgeOperations": 0,
            "objectsDeleted": 0,
            "storageOperations": 2,
            "tablesUpgraded": 0,
            "entriesRelinked": 0,
            "relinkConflicts": 0,
            "versionsPurged": 0,
            "continued": false,
            "dailyBudgetSpent": false,
            "d1": { "results": 4, "failed": 1, "rowsRead": 5, "rowsWritten": 6, "maxBinds": 7, "maxSqlBytes": 8 },
            "error": "see worker logs",
        });
        assert_eq!(details(&report, &usage), expected.to_string());
        report.error = None;
        report.continue_with = Some("t".into());
        let d: Json = serde_json::from_str(&details(&report, &usage)).unwrap();
        assert_eq!((&d["continued"], &d["error"]), (&Json::Bool(true), &Json::Null));
    }
}
