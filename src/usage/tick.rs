//! The scheduled tick: run lanes while the tick's statement and time budgets allow, then record
//! the tick. Budgets are configuration (D1 plans differ), checked before each job against the
//! metered count, so a tick never issues more statements than configured.

use super::project::{self, JobOutcome, JOB_MAX_STATEMENTS};
use crate::clock::Clock;
use crate::exec::meter::Metered;
use crate::exec::{Error, Executor};
use crate::repo::usage::{self as repo, TickLog};

/// The smallest statement budget a tick accepts (one job plus the tick's own log write).
pub const MIN_TICK_STATEMENTS: u64 = 10;
/// Statements the tick's own log write costs.
pub const LOG_STATEMENTS: u64 = 1;
/// An upper bound on jobs per tick, whatever the budget.
pub const MAX_JOBS_PER_TICK: u32 = 10_000;

/// A tick's budget.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct TickBudget {
    pub max_statements: u64,
    pub max_ms: f64,
}

impl TickBudget {
    /// Reads `MEDIA_USAGE_TICK_MAX_QUERIES` / `MEDIA_USAGE_TICK_MAX_MS`: defaults 40 and 2500,
    /// statements raised to the supported minimum of 10.
    pub fn from_settings(max_queries: Option<&str>, max_ms: Option<&str>) -> TickBudget {
        let max_statements =
            max_queries.and_then(|s| s.trim().parse::<u64>().ok()).unwrap_or(40).max(MIN_TICK_STATEMENTS);
        let max_ms = max_ms.and_then(|s| s.trim().parse::<f64>().ok()).filter(|m| *m > 0.0).unwrap_or(2500.0);
        TickBudget { max_statements, max_ms }
    }
}

/// What a tick did.
#[derive(Debug, Clone, PartialEq)]
pub struct TickReport {
    /// Lanes that ran, in order.
    pub lanes: Vec<&'static str>,
    /// `idle` (nothing due), `progress` (work done), `budget` (stopped by the budget with work
    /// possibly left) or `error`.
    pub outcome: &'static str,
    pub jobs: u32,
    pub failed_jobs: u32,
    pub conflicts: u32,
    /// Statements issued, the log write included.
    pub statements: u64,
    pub error: Option<String>,
}

/// Runs one tick against a metered executor and records it in `_emdash_media_usage_ticks`.
pub async fn run<E: Executor, C: Clock, K: Clock>(exec: &Metered<E, C>, clock: &K, budget: TickBudget) -> TickReport {
    let started = clock.now_ms();
    let mut report = TickReport {
        lanes: vec!["work"],
        outcome: "idle",
        jobs: 0,
        failed_jobs: 0,
        conflicts: 0,
        statements: 0,
        error: None,
    };
    for _ in 0..MAX_JOBS_PER_TICK {
        let spent = exec.usage().statements;
        if spent + JOB_MAX_STATEMENTS + LOG_STATEMENTS > budget.max_statements
            || clock.now_ms() - started >= budget.max_ms
        {
            if report.jobs > 0 {
                report.outcome = "budget";
            }
            break;
        }
        match project::process_next(exec, None).await {
            Ok(None) => break,
            Ok(Some(outcome)) => {
                report.jobs += 1;
                report.outcome = "progress";
                match outcome {
                    JobOutcome::Failed { .. } => report.failed_jobs += 1,
                    JobOutcome::Conflict => report.conflicts += 1,
                    _ => {}
                }
            }
            Err(e) => {
                report.outcome = "error";
                report.error = Some(e.to_string());
                break;
            }
        }
    }
    let usage = exec.usage();
    report.statements = usage.statements + LOG_STATEMENTS;
    let log = TickLog {
        lane: report.lanes.join(","),
        outcome: report.outcome.to_owned(),
        statements: report.statements,
        rows_written: usage.rows_written + 1,
        duration_ms: (clock.now_ms() - started).max(0.0).round() as u64,
        details: Some(
            serde_json::json!({
                "jobs": report.jobs,
                "failedJobs": report.failed_jobs,
                "conflicts": report.conflicts,
                "error": report.error.as_ref().map(|_| "see worker logs"),
            })
            .to_string(),
        ),
    };
    if let Err(e) = repo::insert_tick(exec, &log).await {
        report.outcome = "error";
        report.error.get_or_insert_with(|| format!("tick log write failed: {e}"));
    }
    report
}

/// Runs ticks until one finds nothing due (tests and tools); at most `max_ticks`.
pub async fn drain<E: Executor, C: Clock>(
    exec: &E,
    clock: &C,
    budget: TickBudget,
    max_ticks: u32,
) -> Result<u32, Error> {
    for n in 0..max_ticks {
        let metered = Metered::new(exec, clock);
        let report = run(&metered, clock, budget).await;
        if let Some(e) = report.error {
            return Err(Error::Backend(e));
        }
        if report.outcome == "idle" {
            return Ok(n + 1);
        }
    }
    Ok(max_ticks)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn budgets_default_and_clamp() {
        assert_eq!(TickBudget::from_settings(None, None), TickBudget { max_statements: 40, max_ms: 2500.0 });
        assert_eq!(TickBudget::from_settings(Some("3"), Some("x")).max_statements, 10);
        assert_eq!(
            TickBudget::from_settings(Some("1000"), Some("100")),
            TickBudget { max_statements: 1000, max_ms: 100.0 }
        );
    }
}
