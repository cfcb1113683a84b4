//! The scheduled tick: run lanes while the tick's statement and time budgets allow, then record
//! the tick. Budgets are configuration (D1 plans differ), checked before each job against the
//! metered count, so a tick never issues more statements than configured.

use super::project::{self, JobOutcome, JOB_MAX_STATEMENTS};
use super::repair::{self, StepOutcome, STEP_MAX_STATEMENTS};
use crate::clock::Clock;
use crate::exec::meter::Metered;
use crate::exec::{Error, Executor};
use crate::repo::usage::{self as repo, TickLog};

/// The smallest statement budget a tick accepts (one job plus the tick's own log write).
pub const MIN_TICK_STATEMENTS: u64 = 10;
/// Statements the tick's own log write costs.
pub const LOG_STATEMENTS: u64 = 1;
/// Statements reserved before each step of any lane: the larger of a job and a repair step.
pub const STEP_RESERVE: u64 =
    if JOB_MAX_STATEMENTS > STEP_MAX_STATEMENTS { JOB_MAX_STATEMENTS } else { STEP_MAX_STATEMENTS };
/// An upper bound on jobs per tick, whatever the budget.
pub const MAX_JOBS_PER_TICK: u32 = 10_000;

/// A tick's budget.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct TickBudget {
    pub max_statements: u64,
    pub max_ms: f64,
}

impl TickBudget {
    /// The defaults of `wrangler.toml`: 40 statements, 2.5 s.
    pub const DEFAULT: TickBudget = TickBudget { max_statements: 40, max_ms: 2500.0 };

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
    pub repair_steps: u32,
    /// Statements issued, the log write included.
    pub statements: u64,
    pub error: Option<String>,
}

/// The lanes a tick rotates through.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Lane {
    Work,
    Repair,
}

impl Lane {
    fn name(self) -> &'static str {
        match self {
            Lane::Work => "work",
            Lane::Repair => "repair",
        }
    }
}

/// Runs the lanes in rotation (projection work, repair runs) while the budget allows one more
/// step of either, without recording a tick. The repair request uses this directly.
pub async fn run_lanes<E: Executor, C: Clock, K: Clock>(
    exec: &Metered<E, C>,
    clock: &K,
    budget: TickBudget,
) -> TickReport {
    let started = clock.now_ms();
    let mut report = TickReport {
        lanes: Vec::new(),
        outcome: "idle",
        jobs: 0,
        failed_jobs: 0,
        conflicts: 0,
        repair_steps: 0,
        statements: 0,
        error: None,
    };
    let lanes = [Lane::Work, Lane::Repair];
    let mut idle = [false; 2];
    for i in 0..MAX_JOBS_PER_TICK as usize {
        if idle.iter().all(|x| *x) {
            break;
        }
        let spent = exec.usage().statements;
        if spent + STEP_RESERVE + LOG_STATEMENTS > budget.max_statements || clock.now_ms() - started >= budget.max_ms {
            if report.jobs + report.repair_steps > 0 && report.outcome != "error" {
                report.outcome = "budget";
            }
            break;
        }
        let k = i % lanes.len();
        if idle[k] {
            continue;
        }
        let lane = lanes[k];
        let ran = match lane {
            Lane::Work => project::process_next(exec, None).await.map(|o| {
                o.map(|outcome| {
                    report.jobs += 1;
                    match outcome {
                        JobOutcome::Failed { .. } => report.failed_jobs += 1,
                        JobOutcome::Conflict => report.conflicts += 1,
                        _ => {}
                    }
                })
            }),
            Lane::Repair => repair::step_next(exec).await.map(|o| {
                o.map(|step| {
                    report.repair_steps += 1;
                    // A scan step queues entries: the work lane has something to do again.
                    if matches!(step, StepOutcome::Queued { n } if n > 0) {
                        idle[0] = false;
                    }
                })
            }),
        };
        match ran {
            Ok(None) => idle[k] = true,
            Ok(Some(())) => {
                if report.outcome != "error" {
                    report.outcome = "progress";
                }
                if !report.lanes.contains(&lane.name()) {
                    report.lanes.push(lane.name());
                }
            }
            // One lane's failure must not starve the others: note it, rest that lane, go on.
            Err(e) => {
                report.outcome = "error";
                report.error.get_or_insert_with(|| format!("{} lane: {e}", lane.name()));
                idle[k] = true;
            }
        }
    }
    if report.lanes.is_empty() {
        report.lanes.push(Lane::Work.name());
    }
    report.statements = exec.usage().statements;
    report
}

/// Runs one tick against a metered executor and records it in `_emdash_media_usage_ticks`.
pub async fn run<E: Executor, C: Clock, K: Clock>(exec: &Metered<E, C>, clock: &K, budget: TickBudget) -> TickReport {
    let started = clock.now_ms();
    let mut report = run_lanes(exec, clock, budget).await;
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
                "repairSteps": report.repair_steps,
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
