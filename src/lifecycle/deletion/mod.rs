//! Crash-safe collection deletion: a tombstone that reserves the slug and checkpoints a leased,
//! retryable sequence of phases.
//!
//! The DELETE request creates (or takes over) the tombstone and runs the front phases under its
//! lease: `fence` (content writes refused from here on), `registry` (the collection leaves the
//! API), `table` (the content table is dropped); then it releases the tombstone at `work`. Cron
//! ticks run the rest as a lane, several bounded steps per tick: first, within `work`, the count
//! of every kind of row it will delete (a page per statement, kept on the tombstone, so the
//! status reads what is left from one row), then `work` (queued work, revisions),
//! `sources` (occurrences by the collection's source-key range, then source rows), `status`
//! (repair runs, coverage row) and `finalize` (verify nothing is left, delete the tombstone). A
//! crash anywhere leaves a tombstone whose phase says what to redo, and every step is idempotent.
//!
//! Failures are recorded on the tombstone (`retry` after 30·2^(n−1) s, `failed` after 5
//! attempts), except inside the request: a request that loses a front phase leaves the
//! tombstone leased, and the lane takes it over when the lease expires.

use crate::clock::Clock;
use crate::exec::{Error, Executor};
use crate::ids;
use crate::lane::RowCount;
use crate::model::state::DeletionPhase;
use crate::repo::deletion::{self as repo, Batch, Lease, Rows, COUNTED};
use crate::repo::lease::Failure;
use crate::usage::backoff::Attempts;

pub mod batch;
pub mod front;
pub mod lane;

use batch::{CleanupBatch, START_BATCH_ROWS};
use front::{front_step, Front};

/// The error code recorded on a tombstone whose step failed.
pub const FAILURE_CODE: &str = "MEDIA_USAGE_COLLECTION_DELETION_FAILED";

/// The most statements one lane step issues at its smallest: a claim, then the largest phase
/// step (`status`: the leftover check and a batch of three; the table drop a guarded batch of
/// three; a cleanup step one delete in a batch with its counter's statement, and a checkpoint; a
/// counting step one statement), then recording its failure. A step given more room issues more
/// cleanup or counting statements, up to [`STEP_MAX_DELETES`].
pub const STEP_MAX_STATEMENTS: u64 = 6;
/// The most cleanup (or counting) statements one step issues (a probe of one row, a statement
/// sized from it, and the next kind's first), when its room has the statements.
pub const STEP_MAX_DELETES: usize = 3;
/// Statements a cleanup statement costs: itself and its counter's, in one batch.
const DELETE_STATEMENTS: u64 = 2;
/// Statements of a step besides its cleanup or counting statements: a claim, a checkpoint and
/// a failure record.
const STEP_OTHER_STATEMENTS: u64 = 3;
/// What the counter's statement beside each cleanup statement costs: the tombstone written (as
/// [`RELEASE_ROWS`]) and the lease check's reads.
pub const COUNTER_ROWS: RowCount = RowCount::new(8, 10);
/// What a counting statement costs beside its rows: the tombstone written, its cursor and the
/// lease check read, and the revisions of one entry it may pass over to reach its cursor (an
/// entry keeps at most 1,000, `MEDIA_USAGE_MAX_REVISIONS_PER_ENTRY`'s ceiling).
pub const COUNT_STATEMENT_ROWS: RowCount = RowCount::new(8, 1_020);
/// What counting one row reads until a statement of its kind has measured it: its index entry,
/// then the page's rows as the statement reads them back (its size, its last key). D1 reads
/// each twice (`workerd/status.test.mjs`), SQLite's counters once.
pub const COUNT_ROW_COST: RowCount = RowCount::new(0, 3);
/// The most rows one counting statement counts.
pub const MAX_COUNT_ROWS: u32 = 10_000;
/// Statements releasing a held deletion costs at the end of a tick.
pub const RELEASE_STATEMENTS: u64 = 1;
/// The rows releasing a held deletion costs (its tombstone written with its index entries).
pub const RELEASE_ROWS: RowCount = RowCount::new(8, 20);
/// The rows of a step that do not grow with its batches: the claim, a checkpoint (or the status
/// phase's statements, or the finalisation) and a failure record, each a tombstone written with
/// its index entries and a few index reads.
pub const STEP_FIXED_ROWS: RowCount = RowCount::new(30, 100);

/// What deleting one row of a kind is assumed to cost until a statement of that kind has
/// measured it: D1 counts one row written per deleted row, and reads the row and each of its
/// index entries (a source also looks for its occurrences, a revision for the entries that
/// point at it).
pub fn declared_row_cost(rows: Rows) -> RowCount {
    match rows {
        Rows::Work => RowCount::new(1, 8),
        Rows::Revisions => RowCount::new(1, 20),
        Rows::Occurrences => RowCount::new(1, 8),
        Rows::Sources => RowCount::new(2, 12),
    }
}

/// Whether a kind's first statement in a tick deletes a single row to measure what a row costs:
/// revisions, whose delete checks every content table's references to them (through their
/// indexes, but a table the `tables` lane has not upgraded yet is scanned), which no declared
/// figure can say; the other kinds cost their row and its index entries, as declared.
fn probed(rows: Rows) -> bool {
    matches!(rows, Rows::Revisions)
}

/// The largest [`declared_row_cost`].
const MAX_DECLARED_ROW_COST: RowCount = RowCount::new(2, 20);

/// The rows each cleanup phase deletes, in order.
fn phase_rows(phase: DeletionPhase) -> &'static [Rows] {
    match phase {
        DeletionPhase::Work => &[Rows::Work, Rows::Revisions],
        DeletionPhase::Sources => &[Rows::Occurrences, Rows::Sources],
        _ => &[],
    }
}

// ---------------------------------------------------------------------------------------------
// The cron lane.

/// A deletion the lane holds between steps of one tick.
#[derive(Debug, Clone)]
pub struct Held {
    lease: Lease,
    attempts: Attempts,
    batch_rows: u32,
    /// Which kind of row of the current phase is being deleted (index into its rows).
    rows_idx: usize,
    /// What deleting one row of that kind costs: measured by its last statement, declared
    /// ([`declared_row_cost`]) before.
    row_cost: RowCount,
    /// Whether a statement of this kind has measured `row_cost` in this tick: until one has, a
    /// kind that is [`probed`] deletes a single row first, so it passes the rows budget by at
    /// most one row's cost however far its cost is from the declared one.
    measured: bool,
    /// The kind of row being counted (an index into [`Rows::ALL`]; [`COUNTED`] once all are):
    /// nothing is deleted before every kind is counted.
    count_kind: u32,
    /// The rows counted so far, every kind together (as the tombstone says).
    counted_rows: u64,
    /// What counting one row costs: measured by the last counting statement, declared
    /// ([`COUNT_ROW_COST`]) before.
    count_cost: RowCount,
}

impl Held {
    /// A checkpoint moved the deletion to `to`: the attempt under way is now its only one, and
    /// the new phase's first kind of row starts at the batch's first size `start`.
    fn progressed(&mut self, to: DeletionPhase, start: u32) {
        self.lease.phase = to;
        self.attempts = Attempts::new(1);
        self.begin_kind(0, start);
    }

    /// Starts deleting the current phase's `idx`th kind of row at the batch `start`, at its
    /// declared cost until measured.
    fn begin_kind(&mut self, idx: usize, start: u32) {
        self.rows_idx = idx;
        self.batch_rows = start;
        self.row_cost = phase_rows(self.lease.phase).get(idx).map_or(MAX_DECLARED_ROW_COST, |r| declared_row_cost(*r));
        self.measured = false;
    }

    /// Whether its next step counts rows rather than deleting them.
    fn counting(&self) -> bool {
        self.count_kind < COUNTED && matches!(self.lease.phase, DeletionPhase::Work | DeletionPhase::Sources)
    }

    /// The batch to store for the next holder.
    fn batch(&self) -> Batch {
        Batch { rows: self.batch_rows, kind: u32::try_from(self.rows_idx).unwrap_or(0) }
    }
}

/// What one lane step did.
#[derive(Debug, Clone, PartialEq)]
pub enum StepOutcome {
    /// A phase finished; the deletion is at `to`.
    Advanced { to: DeletionPhase },
    /// Cleanup statements ran, each deleting up to a batch of one kind of row (`advanced_to`
    /// when that finished the phase).
    Deleted { deleted: Vec<(Rows, u64)>, advanced_to: Option<DeletionPhase> },
    /// Counting statements ran (`statements`; 0 when the rows left did not fit one).
    Counted { statements: u32 },
    /// Nothing was left: the tombstone is gone and the slug is free.
    Finalized,
    /// The (background) fence found entries outside the trash without force: the tombstone was
    /// cancelled and the collection kept.
    Cancelled,
    /// The step failed and the failure was recorded (`retry`, or `failed` when terminal).
    Failed { terminal: bool, reason: String },
    /// Someone else holds the deletion now; this holder's statements changed nothing.
    LeaseLost,
}

impl StepOutcome {
    /// Whether the lane still holds the deletion after this step.
    fn keeps_hold(&self) -> bool {
        matches!(self, StepOutcome::Advanced { .. } | StepOutcome::Deleted { .. } | StepOutcome::Counted { .. })
    }
}

/// Why a step did not complete.
enum StepFailure {
    /// A guard or checkpoint changed nothing: the lease was lost, or a precondition failed.
    Stale(&'static str),
    /// Rows of the collection are left where none may be.
    Leftovers(repo::Leftovers),
    Error(Error),
}

impl From<Error> for StepFailure {
    fn from(e: Error) -> Self {
        StepFailure::Error(e)
    }
}

/// Runs one step of the deletion lane: claims the next due deletion unless one is held, then
/// advances it by one bounded step. `None` when nothing is held and nothing is due.
pub async fn step<E: Executor, K: Clock>(
    exec: &E,
    clock: &K,
    batch: CleanupBatch,
    held: &mut Option<Held>,
) -> Result<Option<StepOutcome>, Error> {
    step_within(exec, clock, batch, held, (u64::MAX, RowCount::new(u64::MAX, u64::MAX)), &RowCount::default).await
}

/// [`step`] within `statements` (at least [`STEP_MAX_STATEMENTS`]) and `rows`: it issues no more
/// cleanup or counting statements than the statements allow, and they delete (or count) no more
/// rows than fit, at what a row of their kind costs (measured through `spent`, the rows read and
/// written so far).
pub async fn step_within<E: Executor, K: Clock>(
    exec: &E,
    clock: &K,
    batch: CleanupBatch,
    held: &mut Option<Held>,
    (statements, rows): (u64, RowCount),
    spent: &dyn Fn() -> RowCount,
) -> Result<Option<StepOutcome>, Error> {
    if held.is_none() {
        let token = ids::new_id();
        let Some(row) = repo::claim_next(exec, &token).await? else { return Ok(None) };
        let Some(lease) = Lease::of(&row) else {
            let batch = Batch { rows: batch.start(), kind: 0 };
            repo::record_failure(
                exec,
                (row.collection_id.as_str(), token.as_str(), row.phase),
                (Failure::FINAL, row.lease.attempt_count),
                batch,
                FAILURE_CODE,
            )
            .await?;
            let reason = format!("stored slug {:?} is not an identifier", row.collection_slug);
            return Ok(Some(StepOutcome::Failed { terminal: true, reason }));
        };
        let batch_rows = match batch {
            CleanupBatch::Fixed(n) => n,
            CleanupBatch::Adaptive { .. } => u32::try_from(row.cleanup_batch_rows).unwrap_or(START_BATCH_ROWS),
        };
        // The kind of row the stored batch was learned on (a phase's kinds are few).
        let rows_idx = usize::try_from(row.cleanup_rows_kind).unwrap_or(0).min(phase_rows(row.phase).len());
        let attempts = Attempts::new(row.lease.attempt_count);
        let row_cost = MAX_DECLARED_ROW_COST;
        let count_kind = u32::try_from(row.count_kind).unwrap_or(0).min(COUNTED);
        let counted_rows = row.left().iter().map(|(_, n)| n).sum();
        let mut h = Held {
            lease,
            attempts,
            batch_rows,
            rows_idx,
            row_cost,
            measured: false,
            count_kind,
            counted_rows,
            count_cost: COUNT_ROW_COST,
        };
        h.row_cost = phase_rows(row.phase).get(rows_idx).map_or(MAX_DECLARED_ROW_COST, |r| declared_row_cost(*r));
        // Claimed more often than it may be attempted: earlier holders died without recording
        // anything. Stop here, visibly.
        if h.attempts.over_claimed() {
            let outcome = fail(exec, batch, &h, StepFailure::Stale("its holders kept dying")).await?;
            return Ok(Some(outcome));
        }
        *held = Some(h);
    }
    let Some(h) = held.as_mut() else { return Ok(None) };
    // Without a rows budget there is nothing a probe would protect.
    let probes = rows != RowCount::new(u64::MAX, u64::MAX);
    let room = Room { statements, rows, spent, from: spent(), probes };
    let res = match phase_step(exec, clock, batch, h, &room).await {
        Ok(outcome) => Ok(outcome),
        Err(failure) => fail(exec, batch, h, failure).await,
    };
    // An error here (the database failing, or the isolate "dying" in a fault test) leaves the
    // deletion leased: a later tick takes it over once the lease expires.
    if !res.as_ref().is_ok_and(StepOutcome::keeps_hold) {
        *held = None;
    }
    res.map(Some)
}

/// Records a failed step under the lease (`failed` once attempts are used up), with the batch
/// halved for the next holder: a statement that failed (or timed out) is not repeated as it was.
async fn fail<E: Executor>(
    exec: &E,
    batch: CleanupBatch,
    h: &Held,
    failure: StepFailure,
) -> Result<StepOutcome, Error> {
    let reason = match failure {
        StepFailure::Stale(what) => format!("{} at {}: {what}", h.lease.slug, h.lease.phase),
        StepFailure::Leftovers(l) => format!("{} at {}: rows left behind {l:?}", h.lease.slug, h.lease.phase),
        StepFailure::Error(e) => format!("{} at {}: {e}", h.lease.slug, h.lease.phase),
    };
    let failure = h.attempts.failure();
    let next = Batch { rows: batch.sizer().after_failure(h.batch_rows), ..h.batch() };
    let recorded = repo::record_failure(
        exec,
        (h.lease.collection_id.as_str(), h.lease.token.as_str(), h.lease.phase),
        (failure, h.attempts.count()),
        next,
        FAILURE_CODE,
    )
    .await?;
    Ok(if recorded { StepOutcome::Failed { terminal: failure.terminal, reason } } else { StepOutcome::LeaseLost })
}

/// The rows a step may spend, and how it measures what it spent.
struct Room<'a> {
    /// Statements the step may issue.
    statements: u64,
    rows: RowCount,
    spent: &'a dyn Fn() -> RowCount,
    /// What was spent before the step.
    from: RowCount,
    /// A kind's first statement in a tick deletes one row, to measure what a row costs.
    probes: bool,
}

impl Room<'_> {
    /// How many statements of `each` statements the step may issue beside its others, at most
    /// [`STEP_MAX_DELETES`] and at least one.
    fn statements(&self, each: u64) -> usize {
        let n = self.statements.saturating_sub(STEP_OTHER_STATEMENTS) / each;
        usize::try_from(n).unwrap_or(usize::MAX).clamp(1, STEP_MAX_DELETES)
    }

    /// How many rows of `cost` each the next statement may delete (or count; at most `cap`),
    /// leaving room for the step's fixed statements and what the statement costs beside its rows
    /// (`beside`).
    fn items(&self, cost: RowCount, cap: u32, beside: RowCount) -> u32 {
        let used = (self.spent)().minus(self.from);
        self.rows.minus(used).minus(STEP_FIXED_ROWS).minus(beside).items(cost, cap)
    }
}

/// Advances a held deletion by one bounded step of its phase.
async fn phase_step<E: Executor, K: Clock>(
    exec: &E,
    clock: &K,
    batch: CleanupBatch,
    h: &mut Held,
    room: &Room<'_>,
) -> Result<StepOutcome, StepFailure> {
    match h.lease.phase {
        phase if phase.is_front() => match front_step(exec, &mut h.lease, h.batch_rows, false).await? {
            Front::Advanced => {
                h.progressed(h.lease.phase, batch.start());
                Ok(StepOutcome::Advanced { to: h.lease.phase })
            }
            Front::HasContent => Ok(StepOutcome::Cancelled),
            Front::Lost => Err(StepFailure::Stale("a front-phase guard failed")),
        },
        _ if h.counting() => count_step(exec, batch, h, room).await,
        phase @ (DeletionPhase::Work | DeletionPhase::Sources) => {
            // Delete from the first kind of row that is not exhausted; a kind is exhausted once
            // a statement deletes fewer rows than asked. Moving on within the step means every
            // step deletes rows or finishes the phase, even when a tick has room for only one.
            // Each statement is sized to the rows the step has left, at what a row of its kind
            // costs; a kind that is probed deletes one row first to measure that.
            let kinds = phase_rows(phase);
            let mut deleted = Vec::new();
            let mut issued = 0;
            // Rows the probe of the current kind deleted in this step: part of its batch.
            let mut probed_rows = 0;
            while let Some(&rows) = kinds.get(h.rows_idx) {
                if issued == room.statements(DELETE_STATEMENTS) {
                    return Ok(StepOutcome::Deleted { deleted, advanced_to: None });
                }
                let probe = room.probes && probed(rows) && !h.measured;
                let cap = if probe { 1 } else { h.batch_rows.saturating_sub(probed_rows).max(1) };
                let limit = room.items(h.row_cost, cap, COUNTER_ROWS);
                if limit == 0 {
                    // The rows left do not fit one more row of this kind.
                    return Ok(StepOutcome::Deleted { deleted, advanced_to: None });
                }
                issued += 1;
                let started = clock.now_ms();
                let done = repo::delete_rows(exec, &h.lease, rows, limit).await?;
                let (n, cost) = (done.rows, RowCount::new(done.written, done.read));
                deleted.push((rows, n));
                if n > 0 {
                    // Progress: the attempt under way is the only one that counts.
                    h.attempts = Attempts::new(1);
                    if cost != RowCount::default() {
                        h.row_cost = RowCount::new(cost.written.div_ceil(n), cost.read.div_ceil(n));
                    }
                    h.measured = true;
                }
                if n >= u64::from(limit) {
                    if probe {
                        // Measured: the rest of the batch is sized from it.
                        probed_rows = 1;
                        continue;
                    }
                    // A statement cut short by the rows left says nothing about larger ones.
                    if limit == cap {
                        h.batch_rows = batch.sizer().next(
                            limit + probed_rows,
                            clock.now_ms() - started,
                            n + u64::from(probed_rows),
                        );
                    }
                    return Ok(StepOutcome::Deleted { deleted, advanced_to: None });
                }
                // This kind is exhausted; the next starts small (its rows may be far heavier).
                probed_rows = 0;
                h.begin_kind(h.rows_idx + 1, batch.start());
            }
            let to = phase.next().unwrap_or(DeletionPhase::Finalize);
            advance(exec, h, to, batch.start()).await?;
            Ok(StepOutcome::Deleted { deleted, advanced_to: Some(to) })
        }
        DeletionPhase::Status => {
            let left = repo::leftovers(exec, &h.lease).await?;
            if left.any() {
                return Err(StepFailure::Leftovers(left));
            }
            if !repo::clear_status(exec, &h.lease, h.batch_rows).await? {
                return Err(StepFailure::Stale("the status checkpoint changed nothing"));
            }
            h.progressed(DeletionPhase::Finalize, batch.start());
            Ok(StepOutcome::Advanced { to: DeletionPhase::Finalize })
        }
        DeletionPhase::Finalize => {
            if repo::finalize(exec, &h.lease).await? {
                Ok(StepOutcome::Finalized)
            } else {
                Err(StepFailure::Stale("rows of the collection remain, or the lease was lost"))
            }
        }
        other => Err(StepFailure::Error(Error::Decode(format!("unhandled phase {other}")))),
    }
}

/// Counts the rows the held deletion has left, a page per statement from the cursor kept on its
/// tombstone, kind after kind, up to [`STEP_MAX_DELETES`] statements sized to the rows the step
/// has (and, with a fixed cleanup batch, to that batch; the adaptive one counts up to
/// [`MAX_COUNT_ROWS`] a statement).
async fn count_step<E: Executor>(
    exec: &E,
    batch: CleanupBatch,
    h: &mut Held,
    room: &Room<'_>,
) -> Result<StepOutcome, StepFailure> {
    let cap = match batch {
        CleanupBatch::Fixed(n) => n.min(MAX_COUNT_ROWS),
        CleanupBatch::Adaptive { .. } => MAX_COUNT_ROWS,
    };
    let mut statements = 0;
    while let Some(&kind) = Rows::ALL.get(h.count_kind as usize) {
        if statements as usize == room.statements(1) {
            break;
        }
        let limit = room.items(h.count_cost, cap, COUNT_STATEMENT_ROWS);
        if limit == 0 {
            break;
        }
        statements += 1;
        let before = (room.spent)();
        let Some(row) = repo::count_rows(exec, &h.lease, kind, limit).await? else {
            return Err(StepFailure::Stale("a counting statement changed nothing"));
        };
        // What a row cost, measured on a page of some size (the statement's own rows aside).
        let counted: u64 = row.left().iter().map(|(_, n)| n).sum();
        let page = counted.saturating_sub(h.counted_rows);
        h.counted_rows = counted;
        let read = (room.spent)().minus(before).read;
        if page >= 100 && read > 0 {
            h.count_cost = RowCount::new(0, read.div_ceil(page).max(1));
        }
        let next = u32::try_from(row.count_kind).unwrap_or(0).min(COUNTED);
        if next != h.count_kind {
            // The next kind's rows may cost more: declared until measured.
            h.count_cost = COUNT_ROW_COST;
        }
        h.count_kind = next;
        // Progress: the attempt under way is the only one that counts.
        h.attempts = Attempts::new(1);
    }
    Ok(StepOutcome::Counted { statements })
}

/// Checkpoints the held deletion to `to`.
async fn advance<E: Executor>(exec: &E, h: &mut Held, to: DeletionPhase, start: u32) -> Result<(), StepFailure> {
    if !repo::checkpoint(exec, &h.lease, to, Batch { rows: start, kind: 0 }, false).await? {
        return Err(StepFailure::Stale("the checkpoint changed nothing"));
    }
    h.progressed(to, start);
    Ok(())
}

/// Releases a held deletion at the end of a tick: `pending` and due now, at its phase, with the
/// batch size learned so far. False when the lease was lost meanwhile.
pub async fn release<E: Executor>(exec: &E, h: &Held) -> Result<bool, Error> {
    repo::checkpoint(exec, &h.lease, h.lease.phase, h.batch(), true).await
}
