//! Deleting and updating a collection's field, with the usage index kept exact.
//!
//! **Delete.** The DELETE request is one guarded batch: the field leaves the registry, its
//! column is renamed out of reach (a name no field can have), so from that instant no content
//! write can store data in it (a write that read the field before fails with no such column),
//! a deletion row is written, coverage turns `stale`, and the collection's jobs under way are
//! queued afresh (a job that read the field can no longer publish). A crash at any statement
//! leaves the field either fully there or gone from the registry with its column out of reach
//! and its deletion row due. Cron ticks then run the deletion as a lane ([`FieldLane`]), in
//! bounded steps:
//!
//! - `occurrences`: walks the collection's occurrences in key order, a window at a time, and
//!   deletes those of the field (its `field_slug`, written before the deletion). A targeted
//!   deletion rather than a re-projection: it reads the collection's occurrences once and writes
//!   only the rows that go, where re-projecting every entry reads every entry's data and rewrites
//!   every occurrence of the collection. While a deletion walks, no statement marks the
//!   collection's coverage complete (so the safe media delete refuses); the window that ends the
//!   walk completes it when nothing else keeps it stale.
//! - `column`: drops the renamed column (after any index on it), then the row.
//!
//! What the walk cannot do — an entry's display title read from the deleted field — is asked
//! of a re-projection instead: deleting a title field (`title`, `name`) marks the collection for
//! a repair run, which the repair lane starts.
//!
//! **Update.** A change that could change what counts as a use (the type, a repeater's media
//! sub-fields, or the type of a title field) marks the collection for a repair run in the same
//! batch; any other change (label, required, sort order, options) needs none.

use crate::clock::Clock;
use crate::exec::guard::guarded_batch;
use crate::exec::{Error, Executor};
use crate::ids;
use crate::lane::{Counter, Ctx, Lane, LaneStep, RowCount};
use crate::model::collection::Collection;
use crate::model::field::{deleted_column_name, Field};
use crate::model::ident::Ident;
use crate::model::source::TITLE_FIELDS;
use crate::model::state::{CaptureState, FieldDeletionPhase};
use crate::repo::capture;
use crate::repo::field_deletion::{self as repo, ColumnState, Cursor, Lease};
use crate::repo::lease::Failure;
use crate::sql::Fragment;
use crate::usage::backoff::Attempts;
use crate::usage::extract::extraction_fields;

use super::deletion::batch::CleanupBatch;

/// The error code recorded on a field deletion whose step failed.
pub const FAILURE_CODE: &str = "MEDIA_USAGE_FIELD_DELETION_FAILED";

/// Whether the field feeds an entry's display title, which the index stores per source.
fn feeds_title(field: &Field) -> bool {
    TITLE_FIELDS.contains(&field.slug.as_str())
}

// ---------------------------------------------------------------------------------------------
// The DELETE request.

/// How a DELETE of a field ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum DeleteOutcome {
    /// The field is gone from the registry, its column out of reach; the ticks do the rest.
    Deleted,
    /// The collection has no such field, and no deletion of one is under way.
    NotFound,
    /// The collection has no such field, but a deletion of one is under way: a retry of a
    /// DELETE whose first try committed.
    AlreadyDeleted,
    /// The collection's capture is not active (it is being deleted, say): nothing changed.
    CaptureInactive,
    /// The collection or the field changed while the request ran: nothing changed.
    Conflict,
}

/// Deletes `collection`'s field `slug` (see the module documentation) in one guarded batch.
/// `batch` sizes the walk's first windows.
pub async fn delete<E: Executor>(
    exec: &E,
    collection: &Collection,
    slug: &Ident,
    batch: CleanupBatch,
) -> Result<DeleteOutcome, Error> {
    let Some(field) = collection.field(slug.as_str()) else {
        return Ok(if repo::deleting(exec, &collection.id, slug).await? {
            DeleteOutcome::AlreadyDeleted
        } else {
            DeleteOutcome::NotFound
        });
    };
    let name =
        deleted_column_name(&ids::new_id()).ok_or_else(|| Error::Backend("a generated id was not hex".into()))?;
    let column =
        Fragment::deleted_column(&name).ok_or_else(|| Error::Backend("a deleted column name was refused".into()))?;
    let stmts = repo::delete_statements(collection, field, &column, &name, batch.start(), feeds_title(field));
    match guarded_batch(exec, repo::delete_guard(collection, field), stmts).await {
        Ok(_) => Ok(DeleteOutcome::Deleted),
        Err(Error::Stale) => why_not(exec, collection, slug).await,
        Err(e) => Err(e),
    }
}

/// Why a field's guarded batch did not run, from what is there now.
async fn why_not<E: Executor>(exec: &E, collection: &Collection, slug: &Ident) -> Result<DeleteOutcome, Error> {
    let row = capture::coverage_rows(exec).await?.into_iter().find(|r| r.collection_id == collection.id);
    if row.is_some_and(|r| r.capture_state != Some(CaptureState::Active)) {
        return Ok(DeleteOutcome::CaptureInactive);
    }
    let now = crate::repo::schema::find(exec, &collection.slug).await?;
    match now {
        Some(c) if c.id == collection.id && c.field(slug.as_str()).is_none() => {
            Ok(if repo::deleting(exec, &collection.id, slug).await? {
                DeleteOutcome::AlreadyDeleted
            } else {
                DeleteOutcome::NotFound
            })
        }
        _ => Ok(DeleteOutcome::Conflict),
    }
}

// ---------------------------------------------------------------------------------------------
// The PUT request.

/// How an update of a field ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum UpdateOutcome {
    /// Stored; `reprojected`: the collection was marked for a repair run.
    Updated { reprojected: bool },
    /// The collection's capture is not active: nothing changed.
    CaptureInactive,
    /// The collection or the field changed while the request ran: nothing changed.
    Conflict,
}

/// Whether changing `read` into `updated` could change what counts as a use, so that every
/// entry must be projected again: what extraction reads of it (its type, a repeater's media
/// sub-fields), or the type of a field a display title is read from.
pub fn changes_extraction(read: &Field, updated: &Field) -> bool {
    extraction_fields(std::slice::from_ref(read)) != extraction_fields(std::slice::from_ref(updated))
        || (feeds_title(read) && read.field_type != updated.field_type)
}

/// Stores `updated` over `read` (the field as the request read it), in one guarded batch that
/// also marks the collection for a repair run when the change could change extraction.
pub async fn update<E: Executor>(
    exec: &E,
    collection: &Collection,
    read: &Field,
    updated: &Field,
) -> Result<UpdateOutcome, Error> {
    let reproject = changes_extraction(read, updated);
    let mut stmts = vec![repo::update_statement(updated)];
    if reproject {
        stmts.push(repo::invalidate(collection, true));
    }
    stmts.push(repo::touch(collection));
    match guarded_batch(exec, repo::update_guard(collection, read), stmts).await {
        Ok(_) => Ok(UpdateOutcome::Updated { reprojected: reproject }),
        Err(Error::Stale) => {
            let row = capture::coverage_rows(exec).await?.into_iter().find(|r| r.collection_id == collection.id);
            Ok(if row.is_some_and(|r| r.capture_state != Some(CaptureState::Active)) {
                UpdateOutcome::CaptureInactive
            } else {
                UpdateOutcome::Conflict
            })
        }
        Err(e) => Err(e),
    }
}

// ---------------------------------------------------------------------------------------------
// The cron lane.

/// The most statements one lane step issues: a claim, then the largest phase step (`column`:
/// the column's state and a guarded batch of four — guard, an index, the drop, the row's delete;
/// `occurrences`: the window's end and a batch of three), then recording its failure.
pub const STEP_MAX_STATEMENTS: u64 = 7;
/// Statements releasing a held deletion costs at the end of a tick.
pub const RELEASE_STATEMENTS: u64 = 1;
/// The rows releasing a held deletion costs (its row written with its index entries).
pub const RELEASE_ROWS: RowCount = RowCount::new(6, 10);
/// The rows of a step that do not grow with its window: the claim, the checkpoint, the coverage
/// completion (a few index probes) and a failure record, or the column's state (the schema).
pub const STEP_FIXED_ROWS: RowCount = RowCount::new(30, 300);
/// What one occurrence of the walk's window may cost: read by the window's end and by the
/// delete, and, if it is the field's, deleted (one row written; its row and index entries read).
pub const WINDOW_ROW_COST: RowCount = RowCount::new(1, 8);

/// What dropping the column of a table of at most `rows` rows may cost: the table is rewritten,
/// each row read and written once.
pub fn column_drop_cost(rows: u64) -> RowCount {
    RowCount::new(rows.saturating_add(10), rows.saturating_mul(2).saturating_add(20))
}

/// A field deletion the lane holds between steps of one tick.
#[derive(Debug, Clone)]
pub struct Held {
    lease: Lease,
    attempts: Attempts,
    batch_rows: u32,
    /// The last occurrence the walk passed (`None` before the first).
    cursor: Option<Cursor>,
}

impl Held {
    /// Progress was made: the attempt under way is now the only one.
    fn progressed(&mut self) {
        self.attempts = Attempts::new(1);
    }
}

/// What one lane step did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum StepOutcome {
    /// A window of the walk: the field's occurrences it deleted; `walked_to_end` when it ended
    /// the walk (the deletion is now at `column`).
    Walked { deleted: u64, walked_to_end: bool },
    /// An index on the deleted column was dropped (the column is next).
    IndexDropped,
    /// The column is gone and the deletion row deleted.
    Finalized,
    /// The rows the tick has left do not fit the next unit: nothing was done.
    OutOfRoom,
    /// The step failed and the failure was recorded (`retry`, or `failed` when terminal).
    Failed { terminal: bool, reason: String },
    /// Someone else holds the deletion now; this holder's statements changed nothing.
    LeaseLost,
}

impl StepOutcome {
    /// Whether the lane still holds the deletion after this step.
    fn keeps_hold(&self) -> bool {
        matches!(self, StepOutcome::Walked { .. } | StepOutcome::IndexDropped | StepOutcome::OutOfRoom)
    }
}

/// Why a step did not complete.
enum StepFailure {
    /// A checkpoint or guard changed nothing: the lease was lost.
    Stale(&'static str),
    Error(Error),
}

impl From<Error> for StepFailure {
    fn from(e: Error) -> Self {
        match e {
            Error::Stale => StepFailure::Stale("a guard failed"),
            e => StepFailure::Error(e),
        }
    }
}

/// The rows a step may spend, and how it measures what it spent.
struct Room<'a> {
    rows: RowCount,
    spent: &'a dyn Fn() -> RowCount,
    /// What was spent before the step.
    from: RowCount,
}

impl Room<'_> {
    /// What the step has left beyond its fixed statements.
    fn left(&self) -> RowCount {
        self.rows.minus((self.spent)().minus(self.from)).minus(STEP_FIXED_ROWS)
    }
}

/// Runs one step of the lane without a rows budget (see [`step_within`]).
pub async fn step<E: Executor, K: Clock>(
    exec: &E,
    clock: &K,
    batch: CleanupBatch,
    held: &mut Option<Held>,
) -> Result<Option<StepOutcome>, Error> {
    step_within(exec, clock, batch, held, RowCount::new(u64::MAX, u64::MAX), &RowCount::default).await
}

/// Claims the next due field deletion unless one is held, then advances it by one bounded step
/// within `rows` (what the tick's statements spent is read through `spent`). `None` when nothing
/// is held and nothing is due.
pub async fn step_within<E: Executor, K: Clock>(
    exec: &E,
    clock: &K,
    batch: CleanupBatch,
    held: &mut Option<Held>,
    rows: RowCount,
    spent: &dyn Fn() -> RowCount,
) -> Result<Option<StepOutcome>, Error> {
    // What the tick had spent before this step (its claim included in the step).
    let from = spent();
    if held.is_none() {
        let token = ids::new_id();
        let Some(row) = repo::claim_next(exec, &token).await? else { return Ok(None) };
        let Some(lease) = Lease::of(&row) else {
            repo::record_failure(
                exec,
                (row.field_id.as_str(), token.as_str(), row.phase),
                (Failure::FINAL, row.lease.attempt_count),
                batch.start(),
                FAILURE_CODE,
            )
            .await?;
            let reason = format!(
                "stored slug {:?} or column {:?} is not one this code writes",
                row.collection_slug, row.column_name
            );
            return Ok(Some(StepOutcome::Failed { terminal: true, reason }));
        };
        let batch_rows = match batch {
            CleanupBatch::Fixed(n) => n,
            CleanupBatch::Adaptive { .. } => u32::try_from(row.batch_rows).unwrap_or(batch.start()),
        };
        let cursor = match (row.cursor_key, row.cursor_id) {
            (Some(source_key), Some(id)) => Some(Cursor { source_key, id }),
            _ => None,
        };
        let h = Held { lease, attempts: Attempts::new(row.lease.attempt_count), batch_rows, cursor };
        // Claimed more often than it may be attempted: earlier holders died without recording
        // anything. Stop here, visibly.
        if h.attempts.over_claimed() {
            return fail(exec, batch, &h, StepFailure::Stale("its holders kept dying")).await.map(Some);
        }
        *held = Some(h);
    }
    let Some(h) = held.as_mut() else { return Ok(None) };
    let room = Room { rows, spent, from };
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
/// halved for the next holder.
async fn fail<E: Executor>(
    exec: &E,
    batch: CleanupBatch,
    h: &Held,
    failure: StepFailure,
) -> Result<StepOutcome, Error> {
    let at = format!("{}.{} at {}", h.lease.slug, h.lease.field_slug, h.lease.phase);
    let reason = match failure {
        StepFailure::Stale(what) => format!("{at}: {what}"),
        StepFailure::Error(e) => format!("{at}: {e}"),
    };
    let failure = h.attempts.failure();
    let recorded = repo::record_failure(
        exec,
        (h.lease.field_id.as_str(), h.lease.token.as_str(), h.lease.phase),
        (failure, h.attempts.count()),
        batch.sizer().after_failure(h.batch_rows),
        FAILURE_CODE,
    )
    .await?;
    Ok(if recorded { StepOutcome::Failed { terminal: failure.terminal, reason } } else { StepOutcome::LeaseLost })
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
        FieldDeletionPhase::Occurrences => {
            let cap = h.batch_rows.max(1);
            let limit = room.left().items(WINDOW_ROW_COST, cap);
            if limit == 0 {
                return Ok(StepOutcome::OutOfRoom);
            }
            let from = h.cursor.clone().unwrap_or_else(|| repo::walk_start(&h.lease.collection_id));
            let started = clock.now_ms();
            let end = repo::window_end(exec, &h.lease, &from, limit).await?;
            let last = end.is_none();
            let to = end.unwrap_or_else(|| repo::walk_end(&h.lease.collection_id));
            let walked = repo::walk(exec, &h.lease, (&from, &to), last, h.batch_rows).await?;
            if !walked.held {
                return Err(StepFailure::Stale("the walk's checkpoint changed nothing"));
            }
            h.progressed();
            // A window cut short by the rows left says nothing about larger ones.
            if limit == cap {
                let done = if last { 0 } else { u64::from(limit) };
                h.batch_rows = batch.sizer().next(limit, clock.now_ms() - started, done);
            }
            if last {
                h.lease.phase = FieldDeletionPhase::Column;
                h.cursor = None;
            } else {
                h.cursor = Some(to);
            }
            Ok(StepOutcome::Walked { deleted: walked.deleted, walked_to_end: last })
        }
        FieldDeletionPhase::Column => match repo::column_state(exec, &h.lease).await? {
            ColumnState::Gone => {
                if repo::finalize(exec, &h.lease).await? {
                    Ok(StepOutcome::Finalized)
                } else {
                    Err(StepFailure::Stale("the finalisation changed nothing"))
                }
            }
            ColumnState::Present { indexes, rows_bound } => {
                let cost = column_drop_cost(rows_bound);
                // A table too large for any tick's rows budget goes in a tick that had written
                // nothing before this step: the one step that may pass the budget, once per field.
                if !cost.fits(room.left()) && room.from.written > 0 {
                    return Ok(StepOutcome::OutOfRoom);
                }
                let column_too = indexes.len() <= 1;
                if repo::drop_column(exec, &h.lease, indexes.first().map(String::as_str), column_too).await? {
                    Ok(StepOutcome::Finalized)
                } else {
                    h.progressed();
                    Ok(StepOutcome::IndexDropped)
                }
            }
        },
    }
}

/// Releases a held deletion at the end of a tick: `pending` and due now, at its phase, with its
/// cursor and the batch size learned so far. False when the lease was lost meanwhile.
pub async fn release<E: Executor>(exec: &E, h: &Held) -> Result<bool, Error> {
    repo::release(exec, &h.lease, h.cursor.as_ref(), h.batch_rows).await
}

/// Field deletion steps run (claims that found a deletion included).
pub const FIELD_DELETION_STEPS: Counter = Counter::new("fieldDeletionSteps");
/// Occurrences of deleted fields removed.
pub const FIELD_OCCURRENCES_DELETED: Counter = Counter::new("fieldOccurrencesDeleted");
/// Field deletions finished (column dropped, row deleted).
pub const FIELD_DELETIONS_FINALIZED: Counter = Counter::new("fieldDeletionsFinalized");
/// Steps that failed and were recorded for retry.
pub const FIELD_DELETION_FAILURES: Counter = Counter::new("fieldDeletionFailures");

/// The `fields` lane in a tick: field deletions, several bounded steps per tick. The deletion
/// being worked on is held between steps and released when the tick ends
/// ([`FieldLane::finish`]).
#[derive(Debug, Clone)]
pub struct FieldLane {
    batch: CleanupBatch,
    held: Option<Held>,
}

impl FieldLane {
    /// The lane's name in the tick log.
    pub const NAME: &'static str = "fields";
    /// Its tick-log counters.
    pub const COUNTERS: &'static [Counter] =
        &[FIELD_DELETION_STEPS, FIELD_OCCURRENCES_DELETED, FIELD_DELETIONS_FINALIZED, FIELD_DELETION_FAILURES];

    /// The lane at the start of a tick, holding nothing, walking in `batch`es.
    pub fn new(batch: CleanupBatch) -> FieldLane {
        FieldLane { batch, held: None }
    }
}

impl<E: Executor, K: Clock> Lane<E, K> for FieldLane {
    type Error = Error;

    fn name(&self) -> &'static str {
        Self::NAME
    }

    /// The most statements one step issues.
    fn reserve(&self) -> u64 {
        STEP_MAX_STATEMENTS
    }

    /// The most rows one step reads and writes at its smallest: its fixed statements and one
    /// occurrence of a window (its windows are sized to the rows it is given; a column's drop
    /// waits for a tick with room for it).
    fn reserve_rows(&self) -> RowCount {
        STEP_FIXED_ROWS.plus(WINDOW_ROW_COST)
    }

    /// Statements [`FieldLane::finish`] will cost: releasing the deletion it holds.
    fn release_cost(&self) -> u64 {
        if self.held.is_some() {
            RELEASE_STATEMENTS
        } else {
            0
        }
    }

    /// Rows [`FieldLane::finish`] will cost.
    fn release_rows(&self) -> RowCount {
        if self.held.is_some() {
            RELEASE_ROWS
        } else {
            RowCount::default()
        }
    }

    /// Advances the held deletion, or the next due one, by one step ([`step_within`]); `None`
    /// when nothing is held and nothing is due.
    async fn step(&mut self, ctx: &mut Ctx<'_, E, K>) -> Result<Option<LaneStep>, Error> {
        let Some(outcome) = step_within(ctx.exec, ctx.clock, self.batch, &mut self.held, ctx.rows, ctx.spent).await?
        else {
            return Ok(None);
        };
        if outcome == StepOutcome::OutOfRoom {
            return Ok(Some(LaneStep::out_of_room()));
        }
        ctx.count(FIELD_DELETION_STEPS, 1);
        let mut failure = None;
        match outcome {
            StepOutcome::Walked { deleted, .. } => ctx.count(FIELD_OCCURRENCES_DELETED, deleted),
            StepOutcome::Finalized => ctx.count(FIELD_DELETIONS_FINALIZED, 1),
            StepOutcome::Failed { reason, .. } => {
                ctx.count(FIELD_DELETION_FAILURES, 1);
                failure = Some(reason);
            }
            StepOutcome::IndexDropped | StepOutcome::OutOfRoom | StepOutcome::LeaseLost => {}
        }
        Ok(Some(LaneStep { failure, ..LaneStep::progress() }))
    }

    /// Releases the deletion it holds (the tick is over).
    async fn finish(&mut self, exec: &E) -> Result<(), Error> {
        if let Some(h) = self.held.take() {
            release(exec, &h).await?;
        }
        Ok(())
    }
}
