//! Index repair: a resumable run per collection, advanced in bounded steps by the cron tick
//! (and by the repair request, within one tick budget).
//!
//! The proof of coverage is the work queue itself: every entry that exists when the scan passes
//! it is queued by the scan, every entry written later is queued by its capture trigger, and
//! every stored source whose entry is gone is queued by the orphan pass. Coverage is finalised
//! `complete` (reconciliation no longer required) by one statement that requires the run token
//! and an empty queue for the collection; a failed job finalises it `partial`.

use super::backoff::Attempts;
use super::extract::Rules;
use super::project::GROUP_ENTRY_ROWS;
use crate::exec::{Error, Executor};
use crate::lane::{Counter, Ctx, Lane, LaneStep, RowCount};
use crate::model::ident::Ident;
use crate::model::state::RepairPhase;
use crate::repo::repair::{self as repo, Advance, Barrier, Remaining, Run};

/// Entries queued per scan step (one JSON parameter; one statement).
pub const PAGE_SIZE: u32 = 500;
/// The longest a run whose queue has not drained waits before it looks again (it looks as soon
/// as the collection's earliest unfinished work row is due).
pub const BARRIER_POLL_SECONDS: i64 = 10;
/// The most statements one repair step issues: claim, page read, a guarded batch of three
/// (guard, enqueue, advance), and the end of a run whose batch lost its guard; or claim and
/// [`RULES_CHECK_STATEMENTS`] when no run is due.
pub const STEP_MAX_STATEMENTS: u64 = 6;
/// The most rows an entry (or orphaned source) of a page costs: read by the page query and
/// queued (its work row written with its five index entries, an existing one read first).
pub const PAGE_ENTRY_ROWS: RowCount = RowCount::new(6, 10);
/// A run's finalisation counts the collection's indexed and failed sources up to this many each
/// (`indexedSourceCount`, `failedSourceCount`): a count at the cap means at least that many.
pub const SOURCE_COUNT_CAP: u32 = 5_000;
/// The rows of a step that do not grow with its page: the claim, the guard, the run's advance,
/// or the barrier's look and the finalisation's counts; and the start of runs for other
/// reference rules (each collection's run and coverage row).
pub const STEP_FIXED_ROWS: RowCount = RowCount::new(100, 400 + 2 * SOURCE_COUNT_CAP as u64);

/// What one step did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum StepOutcome {
    /// Queued a page of entries (or orphaned sources) and moved the cursor. `at_barrier` names
    /// the collection when that was the last page: its run now waits for the queue to drain.
    Queued { n: usize, at_barrier: Option<String> },
    /// The queue has not drained; the run of `collection_id` waits. `work_due`: the collection
    /// has queue work due now, so the run can finalise once the work lane has run it.
    Waiting { collection_id: String, work_due: bool },
    /// Coverage was finalised (or the run was superseded or its collection is gone).
    Finished,
    /// The lease was lost or the collection changed; nothing was written.
    Conflict,
    /// No run was due; `n` runs were started for coverage proven under other reference rules.
    Started { n: u64 },
}

/// Starts a repair run for every collection whose coverage was not proven under `rules` (a new
/// rules version was deployed, `MEDIA_PUBLIC_URL` changed, or a re-check was asked for) and that
/// no run under them is re-projecting; returns how many started. At most
/// [`RULES_CHECK_STATEMENTS`] statements, one read when there is nothing to start.
pub async fn start_for_rules<E: Executor>(exec: &E, rules: &Rules) -> Result<u64, Error> {
    let ids = repo::needing_rules(exec, rules.id()).await?;
    if ids.is_empty() {
        return Ok(0);
    }
    let ids: Vec<&str> = ids.iter().map(String::as_str).collect();
    repo::begin(exec, &ids, rules.id()).await
}

/// The statements [`start_for_rules`] issues at most: the read and a batch of two.
pub const RULES_CHECK_STATEMENTS: u64 = 3;

/// Claims the next due run (or `only` that collection's, if due) and advances it one step;
/// `None` when no such run is due. With no run due (and no `only`), first starts the runs that
/// coverage proven under other reference rules needs ([`start_for_rules`]), so an upgrade
/// re-projects every entry without an operator.
pub async fn step_next<E: Executor>(exec: &E, only: Option<&str>, rules: &Rules) -> Result<Option<StepOutcome>, Error> {
    step_next_sized(exec, only, rules, PAGE_SIZE).await
}

/// [`step_next`] with pages of at most `page` entries (1..=[`PAGE_SIZE`]): the repair lane's
/// pages fit the rows its tick has left.
pub async fn step_next_sized<E: Executor>(
    exec: &E,
    only: Option<&str>,
    rules: &Rules,
    page: u32,
) -> Result<Option<StepOutcome>, Error> {
    if let Some(run) = repo::claim(exec, only).await? {
        return step(exec, &run, page.clamp(1, PAGE_SIZE)).await.map(Some);
    }
    if only.is_some() {
        return Ok(None);
    }
    Ok(match start_for_rules(exec, rules).await? {
        0 => None,
        n => Some(StepOutcome::Started { n }),
    })
}

async fn step<E: Executor>(exec: &E, run: &Run, page_size: u32) -> Result<StepOutcome, Error> {
    // Claimed more often than it may be attempted (its holders kept dying): give up, visibly.
    if Attempts::new(run.lease.attempt_count).over_claimed() {
        repo::fail(exec, run).await?;
        return Ok(StepOutcome::Finished);
    }
    let Ok(slug) = Ident::parse(&run.collection_slug) else {
        repo::end(exec, run).await?;
        return Ok(StepOutcome::Finished);
    };

    match run.phase {
        RepairPhase::Scan => {
            let ids = match repo::scan_page(exec, &slug, run.scan_cursor.as_deref(), page_size).await {
                Ok(ids) => ids,
                Err(e) if e.is_missing_content_table() => {
                    repo::end(exec, run).await?;
                    return Ok(StepOutcome::Finished);
                }
                Err(e) => return Err(e),
            };
            let done = ids.len() < page_size as usize;
            let next = Advance {
                phase: if done { RepairPhase::Sources } else { RepairPhase::Scan },
                scan_cursor: ids.last().map(String::as_str).or(run.scan_cursor.as_deref()),
                source_cursor: None,
                delay_seconds: 0,
                progressed: true,
            };
            advanced(exec, run, repo::enqueue_and_advance(exec, run, &ids, &next).await, ids.len(), next.phase).await
        }
        RepairPhase::Sources => {
            let page = match repo::orphan_page(exec, run, &slug, run.source_cursor.as_deref(), page_size).await {
                Ok(page) => page,
                Err(e) if e.is_missing_content_table() => {
                    repo::end(exec, run).await?;
                    return Ok(StepOutcome::Finished);
                }
                Err(e) => return Err(e),
            };
            let done = page.len() < page_size as usize;
            let ids: Vec<String> = page.iter().filter(|(_, orphan)| *orphan).map(|(id, _)| id.clone()).collect();
            let next = Advance {
                phase: if done { RepairPhase::Barrier } else { RepairPhase::Sources },
                scan_cursor: run.scan_cursor.as_deref(),
                source_cursor: page.last().map(|(id, _)| id.as_str()).or(run.source_cursor.as_deref()),
                delay_seconds: 0,
                progressed: true,
            };
            advanced(exec, run, repo::enqueue_and_advance(exec, run, &ids, &next).await, ids.len(), next.phase).await
        }
        // Waiting for the queue is not a failure: the wait resets the attempt count.
        RepairPhase::Barrier => Ok(match repo::barrier(exec, run, BARRIER_POLL_SECONDS, SOURCE_COUNT_CAP).await? {
            Barrier::Ended => StepOutcome::Finished,
            Barrier::Waiting { work_due } => {
                StepOutcome::Waiting { collection_id: run.collection_id.clone(), work_due }
            }
            Barrier::Lost => StepOutcome::Conflict,
        }),
    }
}

/// Maps the outcome of a scan or orphan step. A lost guard ends the run when it no longer owns
/// its collection's coverage (collection deleted, run superseded); otherwise the run is retried
/// when its lease expires.
async fn advanced<E: Executor>(
    exec: &E,
    run: &Run,
    res: Result<(), Error>,
    n: usize,
    next: RepairPhase,
) -> Result<StepOutcome, Error> {
    match res {
        Ok(()) => {
            Ok(StepOutcome::Queued { n, at_barrier: (next == RepairPhase::Barrier).then(|| run.collection_id.clone()) })
        }
        Err(Error::Stale) => {
            Ok(if repo::end(exec, run).await? { StepOutcome::Finished } else { StepOutcome::Conflict })
        }
        Err(e) => Err(e),
    }
}

// ---------------------------------------------------------------------------------------------
// The tick's repair lane.

/// Repair steps run (including the look that started runs for other reference rules).
pub const REPAIR_STEPS: Counter = Counter::new("repairSteps");

/// The repair lane in a tick: repair runs, one step at a time.
#[derive(Debug, Clone)]
pub struct RepairLane<'a> {
    rules: &'a Rules,
    /// The collection whose run waits at its barrier for the work lane: the lane's next step
    /// looks at that run only.
    barrier: Option<String>,
}

impl<'a> RepairLane<'a> {
    /// The lane's name in the tick log.
    pub const NAME: &'static str = "repair";
    /// Its tick-log counters.
    pub const COUNTERS: &'static [Counter] = &[REPAIR_STEPS];

    /// The lane at the start of a tick, starting runs for coverage not proven under `rules`.
    pub fn new(rules: &'a Rules) -> RepairLane<'a> {
        RepairLane { rules, barrier: None }
    }

    /// The rows a run with `left` still writes: each entry left to scan is paged and then
    /// projected, each queued entry projected, at a group entry's assumed cost.
    pub fn rows_to_write(left: &Remaining) -> u64 {
        let entry = GROUP_ENTRY_ROWS.written;
        left.entries * (entry + PAGE_ENTRY_ROWS.written) + left.queued * entry
    }
}

impl<E: Executor, K> Lane<E, K> for RepairLane<'_> {
    type Error = Error;

    fn name(&self) -> &'static str {
        Self::NAME
    }

    /// The most statements its next step issues. A run that waited at its barrier may have
    /// passed it by its next step (the work lane drained its queue in this tick), so that step
    /// may be a whole one too.
    fn reserve(&self) -> u64 {
        STEP_MAX_STATEMENTS
    }

    /// The most rows one step reads and writes at its smallest (a page of one entry); its pages
    /// are sized to the rows it is given.
    fn reserve_rows(&self) -> RowCount {
        STEP_FIXED_ROWS.plus(PAGE_ENTRY_ROWS)
    }

    /// Advances the next due run by one step ([`step_next`]), its page sized to the rows left;
    /// `None` when none is due.
    async fn step(&mut self, ctx: &mut Ctx<'_, E, K>) -> Result<Option<LaneStep>, Error> {
        let only = self.barrier.take();
        let page = ctx.rows.minus(STEP_FIXED_ROWS).items(PAGE_ENTRY_ROWS, PAGE_SIZE);
        let Some(step) = step_next_sized(ctx.exec, only.as_deref(), self.rules, page).await? else {
            // The run it waited for is not due any more (someone else has it); other runs may be.
            return Ok(only.map(|_| LaneStep::progress()));
        };
        ctx.count(REPAIR_STEPS, 1);
        Ok(Some(match step {
            StepOutcome::Queued { n, at_barrier } => {
                let waits_for_work = at_barrier.is_some();
                self.barrier = at_barrier;
                LaneStep { wakes_work: n > 0, waits_for_work, ..LaneStep::progress() }
            }
            StepOutcome::Waiting { collection_id, work_due: true } => {
                self.barrier = Some(collection_id);
                LaneStep { waits_for_work: true, ..LaneStep::progress() }
            }
            StepOutcome::Waiting { work_due: false, .. }
            | StepOutcome::Finished
            | StepOutcome::Conflict
            | StepOutcome::Started { .. } => LaneStep::progress(),
        }))
    }
}
