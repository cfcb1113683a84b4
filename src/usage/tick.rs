//! The scheduled tick: run lanes in rotation while the tick's statement and time budgets allow,
//! then record the tick. Budgets are configuration (D1 plans differ), checked before each step
//! against the metered count, so a tick never issues more statements than configured.

use serde_json::json;

use super::deletion::{self, CleanupBatch, Held, StepOutcome as DeletionStep};
use super::extract::Rules;
use super::project::{
    self, Admission, GroupOutcome, JobOutcome, Policy, GROUP_MAX_STATEMENTS, GROUP_START, JOB_MAX_STATEMENTS,
};
use super::repair::{
    self, StepOutcome as RepairStep, BARRIER_STEP_STATEMENTS, STEP_MAX_STATEMENTS as REPAIR_STEP_MAX_STATEMENTS,
};
use crate::clock::Clock;
use crate::exec::meter::Metered;
use crate::exec::{Error, Executor};
use crate::ids;
use crate::model::state::TickOutcome;
use crate::repo::continuation as continuation_repo;
use crate::repo::ticks::{self as repo, TickLog};
use crate::storage::{sweep, Storage};

/// The smallest statement budget a tick accepts: one job (its media lookup included), the
/// continuation's baton and the tick's own log write.
pub const MIN_TICK_STATEMENTS: u64 = 11;
/// Statements the tick's own log write costs.
pub const LOG_STATEMENTS: u64 = 1;
/// An upper bound on steps per tick, whatever the budget.
pub const MAX_STEPS_PER_TICK: u32 = 10_000;

/// What a tick (or a repair request running the lanes) may spend: statements and wall time.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Budget {
    pub max_statements: u64,
    pub max_ms: f64,
}

impl Budget {
    /// A budget of `max_statements` (at least [`MIN_TICK_STATEMENTS`]) and `max_ms`.
    pub fn new(max_statements: u64, max_ms: f64) -> Budget {
        Budget { max_statements: max_statements.max(MIN_TICK_STATEMENTS), max_ms }
    }
}

/// How background work is done, whoever does it (a tick, a repair request, the DELETE of a
/// collection, the after-write projection): the cleanup batch of the deletion lane, the policy
/// (reference rules, admission) of projection jobs, and the storage sweep's grace period. Built
/// from the deployment's settings ([`crate::settings::Settings::background`]).
#[derive(Debug, Clone, PartialEq)]
pub struct BackgroundPolicy {
    pub cleanup: CleanupBatch,
    pub projection: Policy,
    /// How old an unreferenced stored object must be before the storage lane deletes it.
    pub storage_grace_ms: f64,
}

impl BackgroundPolicy {
    pub fn with_cleanup(self, cleanup: CleanupBatch) -> BackgroundPolicy {
        BackgroundPolicy { cleanup, ..self }
    }

    pub fn with_admission(self, admission: Admission) -> BackgroundPolicy {
        BackgroundPolicy { projection: Policy { admission, ..self.projection }, ..self }
    }

    pub fn with_rules(self, rules: Rules) -> BackgroundPolicy {
        BackgroundPolicy { projection: Policy { rules, ..self.projection }, ..self }
    }

    pub fn with_storage_grace_ms(self, storage_grace_ms: f64) -> BackgroundPolicy {
        BackgroundPolicy { storage_grace_ms, ..self }
    }
}

/// What a tick did.
#[derive(Debug, Clone, PartialEq)]
pub struct TickReport {
    /// Lanes that made progress, in the order they first did.
    pub lanes: Vec<&'static str>,
    pub outcome: TickOutcome,
    pub jobs: u32,
    pub failed_jobs: u32,
    pub conflicts: u32,
    pub repair_steps: u32,
    pub deletion_steps: u32,
    /// Cleanup rows deleted by the deletion lane.
    pub deleted_rows: u64,
    /// Deletions finished (tombstone gone).
    pub deletions_finalized: u32,
    /// Deletion steps that failed and were recorded for retry.
    pub deletion_failures: u32,
    /// Stored objects the storage lane deleted.
    pub objects_deleted: u32,
    /// Object store operations (counted against the statement budget like statements).
    pub storage_operations: u64,
    /// Statements issued, the log write included.
    pub statements: u64,
    pub error: Option<String>,
    /// The continuation token to send: this tick took the continuation baton.
    pub continue_with: Option<String>,
}

impl TickReport {
    fn new() -> TickReport {
        TickReport {
            lanes: Vec::new(),
            outcome: TickOutcome::Idle,
            jobs: 0,
            failed_jobs: 0,
            conflicts: 0,
            repair_steps: 0,
            deletion_steps: 0,
            deleted_rows: 0,
            deletions_finalized: 0,
            deletion_failures: 0,
            objects_deleted: 0,
            storage_operations: 0,
            statements: 0,
            error: None,
            continue_with: None,
        }
    }

    fn note_error(&mut self, lane: &str, e: impl std::fmt::Display) {
        self.outcome = TickOutcome::Error;
        self.error.get_or_insert_with(|| format!("{lane} lane: {e}"));
    }
}

/// One lane of the tick: a kind of background work advanced one bounded step at a time.
#[derive(Debug)]
pub enum Lane {
    /// Projection jobs from the work queue; `group` is the size of its next group job (it adapts
    /// within the tick).
    Work { group: u32 },
    /// Collection deletions; the deletion being worked on is held between steps and released
    /// when the tick ends.
    Deletion { held: Option<Held> },
    /// Repair runs; `barrier` names the collection whose run waits at its barrier for the work
    /// lane: the lane's next step looks at that run only.
    Repair { barrier: Option<String> },
    /// The storage sweep (only with an object store): a page of the bucket listing per step, at
    /// most one pass per tick.
    Storage { pass_done: bool },
}

/// What a lane step did, for the rotation.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
struct Stepped {
    /// It gave the work lane something to do again (a repair pass queued entries).
    wakes_work: bool,
    /// A repair run now waits at its barrier for queue work that may be due: the lane has
    /// nothing useful to do until the work lane has run out of due work.
    waits_for_work: bool,
    /// The step only looked (a storage sweep page with nothing to delete): it is not progress,
    /// and work left of this kind never asks for a continuation.
    looked_only: bool,
}

impl Lane {
    /// The lanes of a tick, in rotation order (the storage lane only with an object store).
    pub fn all(with_storage: bool) -> Vec<Lane> {
        let mut lanes =
            vec![Lane::Work { group: GROUP_START }, Lane::Deletion { held: None }, Lane::Repair { barrier: None }];
        if with_storage {
            lanes.push(Lane::Storage { pass_done: false });
        }
        lanes
    }

    pub fn name(&self) -> &'static str {
        match self {
            Lane::Work { .. } => "work",
            Lane::Deletion { .. } => "deletion",
            Lane::Repair { .. } => "repair",
            Lane::Storage { .. } => "storage",
        }
    }

    /// The most statements one step of this lane issues.
    pub fn reserve(&self) -> u64 {
        match self {
            Lane::Work { .. } => JOB_MAX_STATEMENTS,
            Lane::Deletion { .. } => deletion::STEP_MAX_STATEMENTS,
            Lane::Repair { barrier: Some(_) } => BARRIER_STEP_STATEMENTS,
            Lane::Repair { barrier: None } => REPAIR_STEP_MAX_STATEMENTS,
            Lane::Storage { .. } => sweep::STEP_MAX_OPERATIONS,
        }
    }

    /// Statements finishing this lane will cost when the tick ends (releasing what it holds).
    pub fn release_cost(&self) -> u64 {
        match self {
            Lane::Deletion { held: Some(_) } => deletion::RELEASE_STATEMENTS,
            _ => 0,
        }
    }

    /// Runs one step; `None` when the lane has nothing due.
    /// `room` is how many statements this step may issue.
    #[allow(clippy::too_many_arguments)]
    async fn step_next<E: Executor, K: Clock>(
        &mut self,
        exec: &E,
        clock: &K,
        storage: Option<&dyn Storage>,
        policy: &BackgroundPolicy,
        room: u64,
        report: &mut TickReport,
    ) -> Result<Option<Stepped>, Error> {
        match self {
            Lane::Storage { pass_done } => {
                let Some(storage) = storage.filter(|_| !*pass_done) else { return Ok(None) };
                let step = sweep::step(exec, storage, policy.storage_grace_ms).await;
                report.storage_operations += match &step {
                    Ok(s) => s.operations,
                    // A failed step may have issued its list and its delete.
                    Err(_) => 2,
                };
                let step = step?;
                report.objects_deleted += u32::try_from(step.deleted.len()).unwrap_or(u32::MAX);
                *pass_done = step.pass_done;
                // A page that deleted nothing only looked; the lane goes on until the pass ends.
                let looked_only = step.deleted.is_empty();
                Ok((!looked_only || !step.pass_done).then_some(Stepped { looked_only, ..Stepped::default() }))
            }
            Lane::Work { group } => {
                // Fresh work goes in groups while a group fits (the group claim takes one
                // retry, expired lease or handed-back row as a single job when nothing fresh is
                // due); once a group no longer fits, single jobs.
                if room >= GROUP_MAX_STATEMENTS {
                    let started = clock.now_ms();
                    let size = *group;
                    match project::process_group(exec, &policy.projection, size).await? {
                        GroupOutcome::Nothing => return Ok(None),
                        GroupOutcome::Single(outcome) => {
                            count_job(report, &outcome);
                            return Ok(Some(Stepped::default()));
                        }
                        GroupOutcome::Published { published, .. } => {
                            report.jobs += u32::try_from(published).unwrap_or(u32::MAX);
                            let target = match policy.cleanup {
                                CleanupBatch::Adaptive { target_ms } => target_ms,
                                CleanupBatch::Fixed(_) => deletion::DEFAULT_TARGET_MS,
                            };
                            *group = project::next_group_size(size, published, clock.now_ms() - started, target);
                            return Ok(Some(Stepped::default()));
                        }
                        GroupOutcome::HandedBack { .. } => {
                            report.conflicts += 1;
                            return Ok(Some(Stepped::default()));
                        }
                    }
                }
                Ok(project::process_next(exec, None, &policy.projection).await?.map(|outcome| {
                    count_job(report, &outcome);
                    Stepped::default()
                }))
            }
            Lane::Deletion { held } => {
                let Some(step) = deletion::step(exec, clock, policy.cleanup, held).await? else { return Ok(None) };
                report.deletion_steps += 1;
                match step {
                    DeletionStep::Deleted { deleted, .. } => {
                        report.deleted_rows += deleted.iter().map(|(_, n)| n).sum::<u64>();
                    }
                    DeletionStep::Finalized => report.deletions_finalized += 1,
                    DeletionStep::Failed { reason, .. } => {
                        report.deletion_failures += 1;
                        report.note_error("deletion", reason);
                    }
                    DeletionStep::Advanced { .. } | DeletionStep::Cancelled | DeletionStep::LeaseLost => {}
                }
                Ok(Some(Stepped::default()))
            }
            Lane::Repair { barrier } => {
                let only = barrier.take();
                let Some(step) = repair::step_next(exec, only.as_deref(), &policy.projection.rules).await? else {
                    // The run it waited for is not due any more (someone else has it); other
                    // runs may be.
                    return Ok(only.map(|_| Stepped::default()));
                };
                report.repair_steps += 1;
                Ok(Some(match step {
                    RepairStep::Queued { n, at_barrier } => {
                        let waits_for_work = at_barrier.is_some();
                        *barrier = at_barrier;
                        Stepped { wakes_work: n > 0, waits_for_work, ..Stepped::default() }
                    }
                    RepairStep::Waiting { collection_id, work_due: true } => {
                        *barrier = Some(collection_id);
                        Stepped { wakes_work: false, waits_for_work: true, ..Stepped::default() }
                    }
                    RepairStep::Waiting { work_due: false, .. }
                    | RepairStep::Finished
                    | RepairStep::Conflict
                    | RepairStep::Started { .. } => Stepped::default(),
                }))
            }
        }
    }

    /// Releases what the lane holds (the tick is over).
    async fn finish<E: Executor>(&mut self, exec: &E) -> Result<(), Error> {
        if let Lane::Deletion { held } = self {
            if let Some(h) = held.take() {
                deletion::release(exec, &h).await?;
            }
        }
        Ok(())
    }
}

fn count_job(report: &mut TickReport, outcome: &JobOutcome) {
    report.jobs += 1;
    match outcome {
        JobOutcome::Failed { .. } => report.failed_jobs += 1,
        JobOutcome::Conflict => report.conflicts += 1,
        _ => {}
    }
}

/// A lane and where it stands in this tick.
struct Slot {
    lane: Lane,
    /// Nothing due (or it failed): skipped for the rest of the tick.
    idle: bool,
    /// Its next step does not fit the budget any more.
    out_of_budget: bool,
    /// Asleep until the work lane runs out of due work.
    waiting_for_work: bool,
}

/// Wakes the lanes asleep until the work lane stops.
fn wake_waiters(slots: &mut [Slot]) {
    for s in slots.iter_mut().filter(|s| s.waiting_for_work) {
        s.waiting_for_work = false;
        s.idle = false;
    }
}

/// Runs the lanes in rotation while the budget allows another step of one of them, without
/// recording a tick. The repair request uses this directly.
pub async fn run_lanes<E: Executor, C: Clock, K: Clock>(
    exec: &Metered<E, C>,
    clock: &K,
    budget: Budget,
    policy: &BackgroundPolicy,
) -> TickReport {
    run_lanes_with(exec, clock, budget, policy, None).await
}

/// [`run_lanes`] with the object store, whose sweep is then one more lane. Storage operations
/// count against the statement budget.
pub async fn run_lanes_with<E: Executor, C: Clock, K: Clock>(
    exec: &Metered<E, C>,
    clock: &K,
    budget: Budget,
    policy: &BackgroundPolicy,
    storage: Option<&dyn Storage>,
) -> TickReport {
    let started = clock.now_ms();
    let mut report = TickReport::new();
    let mut slots: Vec<Slot> = Lane::all(storage.is_some())
        .into_iter()
        .map(|lane| Slot { lane, idle: false, out_of_budget: false, waiting_for_work: false })
        .collect();
    let work_lane = |slots: &[Slot]| slots.iter().position(|s| matches!(s.lane, Lane::Work { .. }));

    let mut stopped_by_budget = false;
    for turn in 0..MAX_STEPS_PER_TICK as usize {
        if slots.iter().all(|s| s.idle || s.out_of_budget) {
            stopped_by_budget = slots.iter().any(|s| s.out_of_budget && !s.idle);
            break;
        }
        if clock.now_ms() - started >= budget.max_ms {
            stopped_by_budget = true;
            break;
        }
        let k = turn % slots.len();
        if slots[k].idle || slots[k].out_of_budget {
            continue;
        }
        let held: u64 = slots.iter().map(|s| s.lane.release_cost()).sum();
        let spent = exec.usage().statements + report.storage_operations;
        let is_work = matches!(slots[k].lane, Lane::Work { .. });
        if spent + slots[k].lane.reserve() + held + LOG_STATEMENTS > budget.max_statements {
            slots[k].out_of_budget = true;
            // The work lane will not run again this tick: whoever waited for it looks now.
            if is_work {
                wake_waiters(&mut slots);
            }
            continue;
        }
        let slot = &mut slots[k];
        let room = budget.max_statements.saturating_sub(spent + held + LOG_STATEMENTS);
        match slot.lane.step_next(exec, clock, storage, policy, room, &mut report).await {
            Ok(None) => {
                slot.idle = true;
                // The work lane ran out of due work: whoever waited for it looks again.
                if is_work {
                    wake_waiters(&mut slots);
                }
            }
            Ok(Some(stepped)) => {
                if !stepped.looked_only {
                    if report.outcome == TickOutcome::Idle {
                        report.outcome = TickOutcome::Progress;
                    }
                    let name = slot.lane.name();
                    if !report.lanes.contains(&name) {
                        report.lanes.push(name);
                    }
                }
                let work = work_lane(&slots);
                if stepped.wakes_work {
                    if let Some(w) = work {
                        slots[w].idle = false;
                    }
                }
                // A run waiting for the queue sleeps until the work lane is idle or out of budget
                // (if it already is, the run's next look is its barrier step, the cheapest).
                if stepped.waits_for_work && work.is_some_and(|w| !slots[w].idle && !slots[w].out_of_budget) {
                    slots[k].idle = true;
                    slots[k].waiting_for_work = true;
                }
            }
            // One lane's failure must not starve the others: note it, rest that lane, go on.
            Err(e) => {
                report.note_error(slot.lane.name(), &e);
                slot.idle = true;
            }
        }
    }
    for slot in &mut slots {
        if let Err(e) = slot.lane.finish(exec).await {
            report.note_error(slot.lane.name(), &e);
        }
    }
    if stopped_by_budget && report.outcome == TickOutcome::Progress {
        report.outcome = TickOutcome::Budget;
    }
    if report.lanes.is_empty() {
        report.lanes.push("work");
    }
    report.statements = exec.usage().statements;
    report
}

/// Whether a tick may ask for a continuation (another tick at once, through a queue) when it
/// ends with due work left.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Continuation<'a> {
    /// No continuation queue: cron alone drives the work.
    Off,
    /// A continuation queue is bound; `handing_on` is the token of the continuation message this
    /// tick runs for (`None` for a cron tick).
    On { handing_on: Option<&'a str> },
}

/// Statements the continuation decision costs (taking or dropping the baton).
pub const CONTINUATION_STATEMENTS: u64 = 1;

/// Runs one tick against a metered executor and records it in `_emdash_media_usage_ticks`.
pub async fn run<E: Executor, C: Clock, K: Clock>(
    exec: &Metered<E, C>,
    clock: &K,
    budget: Budget,
    policy: &BackgroundPolicy,
) -> TickReport {
    run_continuing(exec, clock, budget, policy, Continuation::Off, None).await
}

/// Runs one tick like [`run`]; with a continuation queue, a tick that ends with due work left
/// (stopped by its budget) takes the continuation baton and reports the token to send in
/// `continue_with`, and one that ends with nothing due drops the baton it was handed. At most one
/// continuation is in flight; the decision counts against the tick's statement budget.
pub async fn run_continuing<E: Executor, C: Clock, K: Clock>(
    exec: &Metered<E, C>,
    clock: &K,
    budget: Budget,
    policy: &BackgroundPolicy,
    continuation: Continuation<'_>,
    storage: Option<&dyn Storage>,
) -> TickReport {
    let started = clock.now_ms();
    let lanes_budget = match continuation {
        Continuation::Off => budget,
        Continuation::On { .. } => Budget { max_statements: budget.max_statements - CONTINUATION_STATEMENTS, ..budget },
    };
    let mut report = run_lanes_with(exec, clock, lanes_budget, policy, storage).await;
    if let Continuation::On { handing_on } = continuation {
        let decided = if report.outcome == TickOutcome::Budget {
            let token = ids::new_id();
            continuation_repo::claim(exec, &token, handing_on).await.map(|taken| taken.then_some(token))
        } else if let Some(held) = handing_on {
            continuation_repo::release(exec, held).await.map(|()| None)
        } else {
            Ok(None)
        };
        match decided {
            Ok(token) => report.continue_with = token,
            Err(e) => report.note_error("continuation", e),
        }
    }
    let usage = exec.usage();
    report.statements = usage.statements + LOG_STATEMENTS;
    let log = TickLog {
        lane: report.lanes.join(","),
        outcome: report.outcome,
        statements: report.statements,
        rows_written: usage.rows_written + 1,
        duration_ms: (clock.now_ms() - started).max(0.0).round() as u64,
        details: Some(
            json!({
                "jobs": report.jobs,
                "failedJobs": report.failed_jobs,
                "conflicts": report.conflicts,
                "repairSteps": report.repair_steps,
                "deletionSteps": report.deletion_steps,
                "deletedRows": report.deleted_rows,
                "deletionsFinalized": report.deletions_finalized,
                "deletionFailures": report.deletion_failures,
                "objectsDeleted": report.objects_deleted,
                "storageOperations": report.storage_operations,
                "continued": report.continue_with.is_some(),
                // What the database reported for the statements before the log write.
                "d1": {
                    "results": usage.results,
                    "failed": usage.failed,
                    "rowsRead": usage.rows_read,
                    "rowsWritten": usage.rows_written,
                    "maxBinds": usage.max_binds,
                    "maxSqlBytes": usage.max_sql_bytes,
                },
                "error": report.error.as_ref().map(|_| "see worker logs"),
            })
            .to_string(),
        ),
    };
    if let Err(e) = repo::insert_tick(exec, &log).await {
        report.note_error("tick log", format!("write failed: {e}"));
    }
    report
}

/// Runs ticks until one finds nothing due (tests and tools); at most `max_ticks`. Returns the
/// number of ticks run.
pub async fn drain<E: Executor, C: Clock>(
    exec: &E,
    clock: &C,
    budget: Budget,
    policy: &BackgroundPolicy,
    max_ticks: u32,
) -> Result<u32, Error> {
    for n in 0..max_ticks {
        let metered = Metered::new(exec, clock);
        let report = run(&metered, clock, budget, policy).await;
        if let Some(e) = report.error {
            return Err(Error::Backend(e));
        }
        if report.outcome == TickOutcome::Idle {
            return Ok(n + 1);
        }
    }
    Ok(max_ticks)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_budget_is_raised_to_the_smallest_tick() {
        assert_eq!(Budget::new(3, 100.0), Budget { max_statements: MIN_TICK_STATEMENTS, max_ms: 100.0 });
        assert_eq!(Budget::new(1000, 100.0), Budget { max_statements: 1000, max_ms: 100.0 });
    }

    #[test]
    fn every_lane_can_step_in_a_tick_of_the_smallest_budget() {
        for lane in Lane::all(true) {
            let needs = lane.reserve() + CONTINUATION_STATEMENTS + LOG_STATEMENTS;
            assert!(needs <= MIN_TICK_STATEMENTS, "{} needs {needs}", lane.name());
        }
    }
}
