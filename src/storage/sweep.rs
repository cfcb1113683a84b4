//! The storage sweep: the tick's `storage` lane reclaims objects this worker stored that no
//! uploaded media row names (left behind by a failure between a row delete and its object delete,
//! or by an upload whose row was never written), a page of the bucket listing per step, resuming
//! across ticks from a cursor kept in D1. Once a pass ends, the sweep rests for the grace period
//! (at most one pass per `MEDIA_STORAGE_GRACE_HOURS`, on the object store's clock): while it
//! rests, a tick's sweep costs one read of one row, and no listing. Only objects carrying [`super::MARKER`] are candidates:
//! the bucket may hold other files, and those are never deleted (nor are objects uploaded before
//! the marker existed: such orphans stay). Objects younger than the grace period are left alone,
//! so an upload racing its own row insert is not swept; an object an uploaded row names, in the
//! trash or not, is never deleted. A JSON registration of a key keeps nothing: the worker did not
//! store an object for it.

use super::{Storage, StorageError};
use crate::exec::{Error, Executor};
use crate::lane::{Counter, Ctx, Lane, LaneStep, RowCount};
use crate::repo::media as repo;

/// Objects listed per step.
pub const PAGE: u32 = 100;
/// The most a step costs: reading where the sweep stands, checking the page's keys against the
/// media rows and writing the cursor (statements), listing and deleting (storage operations).
pub const STEP_MAX_OPERATIONS: u64 = 5;
/// The most rows a step reads and writes: the cursor, and each listed key looked up in the media
/// table's unique index.
pub const STEP_MAX_ROWS: RowCount = RowCount::new(4, 4 * PAGE as u64 + 10);
/// What a step did.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct SweepStep {
    /// No pass was in progress and the next was not due yet: the step only read where the sweep
    /// stands.
    pub resting: bool,
    /// The objects deleted: marked, unreferenced and older than the grace period.
    pub deleted: Vec<String>,
    /// The listing reached its end: the next step starts a new pass.
    pub pass_done: bool,
    /// Storage operations issued (statements are metered by the executor).
    pub operations: u64,
}

fn storage_error(e: StorageError) -> Error {
    Error::Backend(e.to_string())
}

/// Sweeps one page of the bucket listing, or rests (a pass ended less than `grace_ms` ago). The
/// page that ends a pass records when the next may start: `grace_ms` later.
pub async fn step<E: Executor>(exec: &E, storage: &dyn Storage, grace_ms: f64) -> Result<SweepStep, Error> {
    let state = repo::sweep_cursor(exec).await?;
    let now = storage.now_ms();
    if state.cursor.is_none() && state.next_pass_ms.is_some_and(|next| now < next) {
        return Ok(SweepStep { resting: true, pass_done: true, ..SweepStep::default() });
    }
    let cursor = state.cursor;
    let page = storage.list(cursor.as_deref(), PAGE).await.map_err(storage_error)?;
    let mut step = SweepStep { operations: 1, ..SweepStep::default() };
    let cutoff = now - grace_ms;
    // Only this worker's own objects, and only old ones, are candidates.
    let old: Vec<String> =
        page.objects.iter().filter(|o| o.marked && o.uploaded_ms <= cutoff).map(|o| o.key.clone()).collect();
    if !old.is_empty() {
        let referenced = repo::referenced_keys(exec, &old).await?;
        let orphans: Vec<String> = old.into_iter().filter(|k| !referenced.contains(k)).collect();
        if !orphans.is_empty() {
            step.operations += 1;
            storage.delete(&orphans).await.map_err(storage_error)?;
            step.deleted = orphans;
        }
    }
    // The cursor moves with each page; the page that ends the pass sets the next pass's time.
    let next_pass = page.cursor.is_none().then_some(now + grace_ms);
    repo::set_sweep_cursor(exec, page.cursor.as_deref(), next_pass).await?;
    step.pass_done = page.cursor.is_none();
    Ok(step)
}

/// Stored objects the storage lane deleted.
pub const OBJECTS_DELETED: Counter = Counter::new("objectsDeleted");
/// Object-store operations (listings, deletes): they count against the statement budget.
pub const STORAGE_OPERATIONS: Counter = Counter::operations("storageOperations");

/// The storage lane in a tick (only with an object store): a page of the bucket listing per
/// step, at most one pass per tick.
#[derive(Clone)]
pub struct StorageLane<'a> {
    store: &'a dyn Storage,
    grace_ms: f64,
    /// The listing reached its end in this tick.
    pass_done: bool,
}

impl std::fmt::Debug for StorageLane<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("StorageLane").field("grace_ms", &self.grace_ms).field("pass_done", &self.pass_done).finish()
    }
}

impl<'a> StorageLane<'a> {
    /// The lane's name in the tick log.
    pub const NAME: &'static str = "storage";
    /// Its tick-log counters.
    pub const COUNTERS: &'static [Counter] = &[OBJECTS_DELETED, STORAGE_OPERATIONS];

    /// The lane at the start of a tick: sweeping `store` of objects older than `grace_ms`.
    pub fn new(store: &'a dyn Storage, grace_ms: f64) -> StorageLane<'a> {
        StorageLane { store, grace_ms, pass_done: false }
    }
}

impl<E: Executor, K> Lane<E, K> for StorageLane<'_> {
    type Error = Error;

    fn name(&self) -> &'static str {
        Self::NAME
    }

    /// The most statements and storage operations one step issues.
    fn reserve(&self) -> u64 {
        STEP_MAX_OPERATIONS
    }

    /// The most rows one step reads and writes.
    fn reserve_rows(&self) -> RowCount {
        STEP_MAX_ROWS
    }

    /// Sweeps the next page ([`step`]); `None` once the pass is done, or while the sweep rests
    /// between passes. A page that deleted nothing only looked (not progress); the lane goes on
    /// until the pass ends.
    async fn step(&mut self, ctx: &mut Ctx<'_, E, K>) -> Result<Option<LaneStep>, Error> {
        if self.pass_done {
            return Ok(None);
        }
        let swept = step(ctx.exec, self.store, self.grace_ms).await;
        ctx.count(
            STORAGE_OPERATIONS,
            match &swept {
                Ok(s) => s.operations,
                // A failed step may have issued its list and its delete.
                Err(_) => 2,
            },
        );
        let swept = swept?;
        if swept.resting {
            self.pass_done = true;
            return Ok(None);
        }
        ctx.count(OBJECTS_DELETED, swept.deleted.len() as u64);
        self.pass_done = swept.pass_done;
        // A page that deleted nothing only looked; the lane goes on until the pass ends.
        let progressed = !swept.deleted.is_empty();
        Ok((progressed || !swept.pass_done).then_some(LaneStep { progressed, ..LaneStep::progress() }))
    }
}
