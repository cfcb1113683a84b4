//! Crash-safe collection deletion: a tombstone that reserves the slug and checkpoints a leased,
//! retryable sequence of phases.
//!
//! The DELETE request creates (or takes over) the tombstone and runs the front phases under its
//! lease: `fence` (content writes refused from here on), `registry` (the collection leaves the
//! API), `table` (the content table is dropped); then it releases the tombstone at `work`. Cron
//! ticks run the rest as a lane, several bounded steps per tick: `work` (queued work, revisions),
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
use crate::lane::adaptive::AdaptiveBatch;
use crate::lane::{Counter, Ctx, LaneStep, RowCount};
use crate::model::ident::Ident;
use crate::model::state::DeletionPhase;
use crate::repo::capture;
use crate::repo::deletion::{self as repo, Batch, Fence, Lease, Rows, Tombstone};
use crate::repo::lease::Failure;
use crate::repo::schema;
use crate::usage::backoff::Attempts;

/// The error code recorded on a tombstone whose step failed.
pub const FAILURE_CODE: &str = "MEDIA_USAGE_COLLECTION_DELETION_FAILED";

/// The cleanup batch: rows per cleanup statement.
pub const START_BATCH_ROWS: u32 = 50;
/// The adaptive batch never shrinks below this.
pub const MIN_BATCH_ROWS: u32 = 50;
/// Nor grows beyond this.
pub const MAX_BATCH_ROWS: u32 = 10_000;

/// The most statements one lane step issues: a claim, then the largest phase step (`status`: the
/// leftover check and a batch of three; a cleanup step is at most [`STEP_MAX_DELETES`] deletes
/// and a checkpoint, the table drop a guarded batch of three), then recording its failure.
pub const STEP_MAX_STATEMENTS: u64 = 6;
/// The most cleanup statements one step issues (a probe of one row, a statement sized from it,
/// and the next kind's first).
pub const STEP_MAX_DELETES: usize = 3;
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

/// How many rows a cleanup statement deletes.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum CleanupBatch {
    /// Always this many (`MEDIA_USAGE_CLEANUP_BATCH_ROWS`, 1..=[`MAX_BATCH_ROWS`], e.g. 50 for
    /// small, even steps).
    Fixed(u32),
    /// Start at 50; double while statements take under half the target
    /// (`MEDIA_USAGE_STATEMENT_TARGET_MS`), halve above it.
    Adaptive { target_ms: f64 },
}

impl CleanupBatch {
    /// How the rows per statement are sized: a fixed batch never changes; the adaptive one
    /// starts at [`START_BATCH_ROWS`] and stays within [`MIN_BATCH_ROWS`]..=[`MAX_BATCH_ROWS`].
    pub fn sizer(self) -> AdaptiveBatch {
        match self {
            CleanupBatch::Fixed(n) => AdaptiveBatch::fixed(n),
            CleanupBatch::Adaptive { target_ms } => {
                AdaptiveBatch { start: START_BATCH_ROWS, min: MIN_BATCH_ROWS, max: MAX_BATCH_ROWS, target_ms }
            }
        }
    }

    /// The batch a new deletion starts with.
    pub fn start(self) -> u32 {
        self.sizer().start
    }
}

/// The rows each cleanup phase deletes, in order.
fn phase_rows(phase: DeletionPhase) -> &'static [Rows] {
    match phase {
        DeletionPhase::Work => &[Rows::Work, Rows::Revisions],
        DeletionPhase::Sources => &[Rows::Occurrences, Rows::Sources],
        _ => &[],
    }
}

// ---------------------------------------------------------------------------------------------
// The DELETE request.

/// How a DELETE of a collection ended.
#[derive(Debug, Clone, PartialEq)]
pub enum RequestOutcome {
    /// The front phases ran (or had run): the collection is gone from the API, cleanup is left to
    /// the cron ticks.
    Deleted { collection_id: String },
    /// No collection and no deletion with this slug.
    NotFound,
    /// Not forced, and the collection has entries outside the trash; it is untouched.
    HasContent,
    /// A deletion of this slug is at a front phase and someone else holds it (or it waits for
    /// a retry, or failed): nothing changed.
    InProgress { tombstone: Box<Tombstone>, lease_live: bool },
    /// A collection registered under the slug is not the one being deleted.
    IdentityConflict,
    /// The collection's capture is not active with its exact trigger set, so it cannot be fenced.
    CaptureInactive,
    /// The request lost its lease or a guard mid-way; the deletion stays leased and a tick
    /// resumes it from its phase once the lease expires.
    Interrupted { phase: DeletionPhase },
}

/// Deletes a collection: creates or takes over its tombstone and runs the front phases under
/// its lease.
pub async fn request<E: Executor>(
    exec: &E,
    slug: &Ident,
    force: bool,
    batch: CleanupBatch,
) -> Result<RequestOutcome, Error> {
    let target = repo::target(exec, slug).await?;
    let token = ids::new_id();
    let claimed = match (&target.tombstone, &target.registry_id) {
        (None, None) => return Ok(RequestOutcome::NotFound),
        (None, Some(id)) => {
            if !force && schema::has_live_content(exec, slug).await? {
                return Ok(RequestOutcome::HasContent);
            }
            let names = capture::trigger_names(id, slug);
            match repo::insert_leased(exec, id, slug, force, &token, batch.start(), &names).await? {
                Some(row) => row,
                // Refused: say why from what is there now.
                None => return Ok(unclaimed(repo::target(exec, slug).await?, Some(id))),
            }
        }
        (Some(t), _)
            if !t.row.phase.is_front() || target.registry_id.as_ref().is_some_and(|id| *id != t.row.collection_id) =>
        {
            return Ok(unclaimed(target, None));
        }
        (Some(t), _) => match repo::claim_front(exec, &t.row.collection_id, force, &token).await? {
            Some(row) => row,
            None => return Ok(unclaimed(repo::target(exec, slug).await?, None)),
        },
    };
    let Some(mut lease) = Lease::of(&claimed) else {
        return Err(Error::Decode(format!("tombstone slug {:?} is not an identifier", claimed.collection_slug)));
    };
    let rows = u32::try_from(claimed.cleanup_batch_rows).unwrap_or(START_BATCH_ROWS);
    while lease.phase.is_front() {
        match front_step(exec, &mut lease, rows, true).await? {
            Front::Advanced => {}
            Front::HasContent => return Ok(RequestOutcome::HasContent),
            Front::Lost => return Ok(RequestOutcome::Interrupted { phase: lease.phase }),
        }
    }
    Ok(RequestOutcome::Deleted { collection_id: lease.collection_id })
}

/// What a request that holds no lease answers, from what it found: `tried` is the registry id
/// it tried to create a tombstone for, if it did.
fn unclaimed(found: repo::Target, tried: Option<&String>) -> RequestOutcome {
    match (found.tombstone, found.registry_id) {
        (Some(t), Some(id)) if id != t.row.collection_id => RequestOutcome::IdentityConflict,
        // Past the front phases (perhaps just now, by a tick): the collection is gone.
        (Some(t), _) if !t.row.phase.is_front() => RequestOutcome::Deleted { collection_id: t.row.collection_id },
        (Some(t), _) => {
            let lease_live = t.lease_is_live();
            RequestOutcome::InProgress { tombstone: Box::new(t.row), lease_live }
        }
        (None, None) => RequestOutcome::NotFound,
        // Another collection took the slug meanwhile.
        (None, Some(id)) if tried.is_some_and(|t| *t != id) => RequestOutcome::IdentityConflict,
        (None, Some(_)) => RequestOutcome::CaptureInactive,
    }
}

/// How one front phase ended.
enum Front {
    /// The phase is done; the lease is at the next one.
    Advanced,
    /// The fence found entries outside the trash (not forced): the tombstone was cancelled.
    HasContent,
    /// A guard or the lease was lost; nothing changed.
    Lost,
}

/// Runs the lease's front phase. The table drop releases the lease at `work` when `release`
/// (the request), or keeps it for the next step (the lane).
async fn front_step<E: Executor>(exec: &E, lease: &mut Lease, rows: u32, release: bool) -> Result<Front, Error> {
    let next = match lease.phase {
        DeletionPhase::Fence => match repo::fence(exec, lease, rows).await? {
            Fence::Fenced => DeletionPhase::Registry,
            Fence::HasContent => return Ok(Front::HasContent),
            Fence::Stale => return Ok(Front::Lost),
        },
        DeletionPhase::Registry => {
            if !repo::delete_registry(exec, lease, rows).await? {
                return Ok(Front::Lost);
            }
            DeletionPhase::Table
        }
        DeletionPhase::Table => match repo::drop_table(exec, lease, rows, release).await {
            Ok(()) => DeletionPhase::Work,
            Err(Error::Stale) => return Ok(Front::Lost),
            Err(e) => return Err(e),
        },
        other => return Err(Error::Decode(format!("{other} is not a front phase"))),
    };
    lease.phase = next;
    Ok(Front::Advanced)
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
        matches!(self, StepOutcome::Advanced { .. } | StepOutcome::Deleted { .. })
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
    step_within(exec, clock, batch, held, RowCount::new(u64::MAX, u64::MAX), &RowCount::default).await
}

/// [`step`] within `rows`: its cleanup statements delete no more rows than fit, at what a row of
/// their kind costs (measured through `spent`, the rows read and written so far).
pub async fn step_within<E: Executor, K: Clock>(
    exec: &E,
    clock: &K,
    batch: CleanupBatch,
    held: &mut Option<Held>,
    rows: RowCount,
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
        let mut h = Held { lease, attempts, batch_rows, rows_idx, row_cost, measured: false };
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
    let room = Room { rows, spent, from: spent(), probes };
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
    rows: RowCount,
    spent: &'a dyn Fn() -> RowCount,
    /// What was spent before the step.
    from: RowCount,
    /// A kind's first statement in a tick deletes one row, to measure what a row costs.
    probes: bool,
}

impl Room<'_> {
    /// How many rows of `cost` each the next statement may delete (at most `cap`), leaving room
    /// for the step's fixed statements.
    fn items(&self, cost: RowCount, cap: u32) -> u32 {
        let used = (self.spent)().minus(self.from);
        self.rows.minus(used).minus(STEP_FIXED_ROWS).items(cost, cap)
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
                if issued == STEP_MAX_DELETES {
                    return Ok(StepOutcome::Deleted { deleted, advanced_to: None });
                }
                let probe = room.probes && probed(rows) && !h.measured;
                let cap = if probe { 1 } else { h.batch_rows.saturating_sub(probed_rows).max(1) };
                let limit = room.items(h.row_cost, cap);
                if limit == 0 {
                    // The rows left do not fit one more row of this kind.
                    return Ok(StepOutcome::Deleted { deleted, advanced_to: None });
                }
                issued += 1;
                let started = clock.now_ms();
                let before = (room.spent)();
                let n = repo::delete_rows(exec, &h.lease, rows, limit).await?;
                let cost = (room.spent)().minus(before);
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

/// Deletion steps run (claims that found a deletion included).
pub const DELETION_STEPS: Counter = Counter::new("deletionSteps");
/// Rows the cleanup statements deleted.
pub const DELETED_ROWS: Counter = Counter::new("deletedRows");
/// Deletions finished (tombstone gone, slug free).
pub const DELETIONS_FINALIZED: Counter = Counter::new("deletionsFinalized");
/// Steps that failed and were recorded for retry.
pub const DELETION_FAILURES: Counter = Counter::new("deletionFailures");

/// The deletion lane in a tick: collection deletions past their front phases, several bounded
/// steps per tick. The deletion being worked on is held between steps and released when the
/// tick ends ([`DeletionLane::finish`]).
#[derive(Debug, Clone)]
pub struct DeletionLane {
    batch: CleanupBatch,
    held: Option<Held>,
}

impl DeletionLane {
    /// The lane's name in the tick log.
    pub const NAME: &'static str = "deletion";
    /// Its tick-log counters.
    pub const COUNTERS: &'static [Counter] = &[DELETION_STEPS, DELETED_ROWS, DELETIONS_FINALIZED, DELETION_FAILURES];

    /// The lane at the start of a tick, holding nothing, cleaning up in `batch`es.
    pub fn new(batch: CleanupBatch) -> DeletionLane {
        DeletionLane { batch, held: None }
    }

    /// The most statements one step issues.
    pub fn reserve(&self) -> u64 {
        STEP_MAX_STATEMENTS
    }

    /// The most rows one step reads and writes at its smallest: its fixed statements and one
    /// row of the kind being deleted (its cleanup statements are sized to the rows it is given).
    pub fn reserve_rows(&self) -> RowCount {
        STEP_FIXED_ROWS.plus(self.held.as_ref().map_or(MAX_DECLARED_ROW_COST, |h| h.row_cost))
    }

    /// Rows [`DeletionLane::finish`] will cost.
    pub fn release_rows(&self) -> RowCount {
        if self.held.is_some() {
            RELEASE_ROWS
        } else {
            RowCount::default()
        }
    }

    /// Statements [`DeletionLane::finish`] will cost: releasing the deletion it holds.
    pub fn release_cost(&self) -> u64 {
        if self.held.is_some() {
            RELEASE_STATEMENTS
        } else {
            0
        }
    }

    /// Advances the held deletion, or the next due one, by one step ([`step`]); `None` when
    /// nothing is held and nothing is due. A failure recorded on the tombstone is the step's
    /// `failure`.
    pub async fn step<E: Executor, K: Clock>(&mut self, ctx: &mut Ctx<'_, E, K>) -> Result<Option<LaneStep>, Error> {
        let Some(outcome) = step_within(ctx.exec, ctx.clock, self.batch, &mut self.held, ctx.rows, ctx.spent).await?
        else {
            return Ok(None);
        };
        if matches!(&outcome, StepOutcome::Deleted { deleted, advanced_to: None } if deleted.is_empty()) {
            return Ok(Some(LaneStep::out_of_room()));
        }
        ctx.count(DELETION_STEPS, 1);
        let mut failure = None;
        match outcome {
            StepOutcome::Deleted { deleted, .. } => ctx.count(DELETED_ROWS, deleted.iter().map(|(_, n)| n).sum()),
            StepOutcome::Finalized => ctx.count(DELETIONS_FINALIZED, 1),
            StepOutcome::Failed { reason, .. } => {
                ctx.count(DELETION_FAILURES, 1);
                failure = Some(reason);
            }
            StepOutcome::Advanced { .. } | StepOutcome::Cancelled | StepOutcome::LeaseLost => {}
        }
        Ok(Some(LaneStep { failure, ..LaneStep::progress() }))
    }

    /// Releases the deletion it holds (the tick is over).
    pub async fn finish<E: Executor>(&mut self, exec: &E) -> Result<(), Error> {
        if let Some(h) = self.held.take() {
            release(exec, &h).await?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_adaptive_batch_grows_when_full_and_fast_and_shrinks_when_slow() {
        let b = CleanupBatch::Adaptive { target_ms: 200.0 }.sizer();
        assert_eq!(b.start, 50);
        assert_eq!(b.next(50, 10.0, 50), 100, "full and fast: doubles");
        assert_eq!(b.next(50, 10.0, 49), 50, "short: says nothing about larger batches");
        assert_eq!(b.next(800, 150.0, 800), 800, "between half the target and the target: kept");
        assert_eq!(b.next(800, 100.0, 800), 800, "exactly half the target: kept");
        assert_eq!(b.next(800, 99.9, 800), 1_600, "just under half the target: doubles");
        assert_eq!(b.next(800, 200.0, 800), 800, "exactly the target: kept");
        assert_eq!(b.next(800, 200.1, 800), 400, "just over the target: halves");
        assert_eq!(b.next(800, 250.0, 800), 400, "over the target: halves");
        assert_eq!(b.next(60, 900.0, 60), 50, "never below 50");
        assert_eq!(b.next(8_000, 1.0, 8_000), 10_000, "never above 10,000");
        assert_eq!(CleanupBatch::Fixed(50).sizer().next(50, 0.0, 50), 50);
        assert_eq!(CleanupBatch::Fixed(7).start(), 7);
    }
}
