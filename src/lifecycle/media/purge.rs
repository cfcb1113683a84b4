//! The media trash's purge: the tick's `purge` lane deletes media items that have been in the
//! trash for `MEDIA_TRASH_DAYS`, a batch per step: the rows first (one guarded statement: an item
//! restored meanwhile, or in use by the safe delete's rule, stays), then the objects this worker
//! stored for them (one object-store operation). A failure between the two leaves objects no row
//! names, which the storage sweep reclaims once they are past its grace period; a row is never
//! deleted after its object. Which objects go is [`forget_objects`]'s rule.
//!
//! The lane walks the trash in passes, from a cursor kept in D1 (written in the batch that
//! purges), so items still in use are passed over once per pass and never keep the ones behind
//! them from their turn, whatever the tick budget. A pass that reaches the end of the due items
//! rests [`PASS_PERIOD_S`] before the next starts at the oldest; while it rests, and while
//! coverage is not complete (nothing could be proved unused), a tick's purge costs one read of
//! one row, however large the trash.

use super::{forget_objects, Forget};
use crate::exec::{Error, Executor};
use crate::lane::{Counter, Ctx, Lane, LaneStep, RowCount};
use crate::repo::media::{self as repo, Purged, Trashed};
use crate::repo::versions::{self, Due};
use crate::storage::Storage;

/// Trashed items examined per step.
pub const BATCH: u32 = 50;
/// How long the purge rests once a pass has reached the end of the due items, in seconds: a day,
/// the unit `MEDIA_TRASH_DAYS` counts in (an item is purged at most this long after its days, or
/// after what used it stopped using it).
pub const PASS_PERIOD_S: f64 = 86_400.0;
/// The most a step costs: the due items, their guarded delete and the cursor (statements, one
/// batch), and the delete of their objects (a storage operation).
pub const STEP_MAX_OPERATIONS: u64 = 4;
/// The most the first step of a tick costs: the read of where the purge stands.
pub const FIRST_STEP_OPERATIONS: u64 = 1;
/// The most rows a step reads and writes: each item read from the trash's index and checked
/// against the index of uses, each deleted row written with its index entries, and the cursor.
pub const STEP_MAX_ROWS: RowCount = RowCount::new(8 * BATCH as u64 + 2, 20 * BATCH as u64 + 1);

/// Media rows the purge deleted.
pub const MEDIA_PURGED: Counter = Counter::new("mediaPurged");
/// Media versions the purge deleted (unlinked, `MEDIA_TRASH_DAYS` after they were replaced).
pub const VERSIONS_PURGED: Counter = Counter::new("versionsPurged");
/// Object-store operations of the purge: they count against the statement budget.
pub const PURGE_OPERATIONS: Counter = Counter::operations("purgeOperations");

/// The purge lane in a tick: where it stands read first, then a batch of due items per step
/// from there, until the pass ends (at most once through the trash per tick).
#[derive(Clone)]
pub struct PurgeLane<'a> {
    store: Option<&'a dyn Storage>,
    days: f64,
    rules: &'a str,
    /// Where the pass stood at the tick's start has been read.
    started: bool,
    /// The last item examined (items in use stay and are passed over).
    after: Option<Trashed>,
    /// The trash's pass is over for this tick (or was not due).
    trash_done: bool,
    /// The versions' pass is due in this tick.
    versions_due: bool,
    /// The last version examined (linked versions stay and are passed over).
    versions_after: Option<Due>,
    done: bool,
}

impl std::fmt::Debug for PurgeLane<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PurgeLane").field("days", &self.days).field("after", &self.after).finish()
    }
}

impl<'a> PurgeLane<'a> {
    /// The lane's name in the tick log.
    pub const NAME: &'static str = "purge";
    /// Its tick-log counters.
    pub const COUNTERS: &'static [Counter] = &[MEDIA_PURGED, VERSIONS_PURGED, PURGE_OPERATIONS];

    /// The lane at the start of a tick: items trashed more than `days` ago, used by nothing under
    /// the reference rules `rules`, their objects deleted from `store` (when bound).
    pub fn new(store: Option<&'a dyn Storage>, days: f64, rules: &'a str) -> PurgeLane<'a> {
        PurgeLane {
            store,
            days,
            rules,
            started: false,
            after: None,
            trash_done: false,
            versions_due: false,
            versions_after: None,
            done: false,
        }
    }
}

impl<E: Executor, K> Lane<E, K> for PurgeLane<'_> {
    type Error = Error;

    fn name(&self) -> &'static str {
        Self::NAME
    }

    /// The most statements and storage operations one step issues.
    fn reserve(&self) -> u64 {
        if self.started {
            STEP_MAX_OPERATIONS
        } else {
            FIRST_STEP_OPERATIONS
        }
    }

    /// The most rows one step reads and writes.
    fn reserve_rows(&self) -> RowCount {
        STEP_MAX_ROWS
    }

    /// The first step reads where the purge stands: `None` (rest) while the pass rests or coverage
    /// is not complete. Each later step purges the next batch of due items from the cursor and
    /// moves the cursor past it in the same batch (to the pass's end when fewer than a batch were
    /// due); `None` once the pass ended. A batch whose items are all in use (or were restored)
    /// only looked.
    async fn step(&mut self, ctx: &mut Ctx<'_, E, K>) -> Result<Option<LaneStep>, Error> {
        if self.done {
            return Ok(None);
        }
        if !self.started {
            let state = repo::purge_state(ctx.exec, self.rules).await?;
            self.started = true;
            if !(state.due || state.versions_due) || !state.ready {
                self.done = true;
                return Ok(None);
            }
            self.after = state.after;
            self.trash_done = !state.due;
            self.versions_after = state.versions_after;
            self.done = false;
            if !state.versions_due {
                // Only the trash's pass: the versions' rests.
                self.versions_after = None;
            }
            self.versions_due = state.versions_due;
            return Ok(Some(LaneStep::looked()));
        }
        let (purged, versions) = if self.trash_done {
            let due = versions::purge_due(ctx.exec, self.days, self.versions_after.as_ref(), BATCH).await?;
            let ended = due.len() < BATCH as usize;
            let last = if ended { None } else { due.last().cloned() };
            let keys: Vec<String> = due.into_iter().map(|d| d.storage_key).collect();
            let purged =
                versions::purge_and_advance(ctx.exec, &keys, self.days, self.rules, last.as_ref(), PASS_PERIOD_S)
                    .await?;
            self.done = ended;
            self.versions_after = last;
            ctx.count(VERSIONS_PURGED, purged.len() as u64);
            (Vec::new(), purged)
        } else {
            let due = repo::purge_due(ctx.exec, self.days, self.after.as_ref(), BATCH).await?;
            let ended = due.len() < BATCH as usize;
            let last = if ended { None } else { due.last().cloned() };
            let ids: Vec<String> = due.into_iter().map(|t| t.id).collect();
            let (purged, versions) =
                repo::purge_and_advance(ctx.exec, &ids, self.days, self.rules, last.as_ref(), PASS_PERIOD_S).await?;
            // The trash's pass ended: the versions' follows in this tick when it is due.
            self.trash_done = ended;
            self.done = ended && !self.versions_due;
            self.after = last;
            ctx.count(MEDIA_PURGED, purged.len() as u64);
            (purged, versions)
        };
        let rows: Vec<Purged> = purged.iter().chain(&versions).cloned().collect();
        let failure = match forget_objects(self.store, &rows).await {
            Forget::NoOperation => None,
            Forget::Deleted { .. } => {
                ctx.count(PURGE_OPERATIONS, 1);
                None
            }
            Forget::Failed { objects, error } => {
                ctx.count(PURGE_OPERATIONS, 1);
                Some(format!("the objects of {objects} purged media or versions stay until the storage sweep: {error}"))
            }
        };
        Ok(Some(LaneStep { progressed: !rows.is_empty(), failure, ..LaneStep::progress() }))
    }
}
