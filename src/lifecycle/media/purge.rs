//! The media trash's purge: the tick's `purge` lane deletes media items that have been in the
//! trash for `MEDIA_TRASH_DAYS`, a batch per step: the rows first (one guarded statement: an item
//! restored meanwhile, or in use by the safe delete's rule, stays), then the objects this worker
//! stored for them (one object-store operation). A failure between the two leaves objects no row
//! names, which the storage sweep reclaims once they are past its grace period; a row is never
//! deleted after its object. Which objects go is [`forget_objects`]'s rule.

use super::{forget_objects, Forget};
use crate::exec::{Error, Executor};
use crate::lane::{Counter, Ctx, Lane, LaneStep, RowCount};
use crate::repo::media::{self as repo, Trashed};
use crate::storage::Storage;

/// Trashed items examined per step.
pub const BATCH: u32 = 50;
/// The most a step costs: the due items, their guarded delete (statements), and the delete of
/// their objects (a storage operation).
pub const STEP_MAX_OPERATIONS: u64 = 3;
/// The most rows a step reads and writes: each item read from the trash's index and checked
/// against the index of uses, and each deleted row written with its index entries.
pub const STEP_MAX_ROWS: RowCount = RowCount::new(8 * BATCH as u64, 20 * BATCH as u64);

/// Media rows the purge deleted.
pub const MEDIA_PURGED: Counter = Counter::new("mediaPurged");
/// Object-store operations of the purge: they count against the statement budget.
pub const PURGE_OPERATIONS: Counter = Counter::operations("purgeOperations");

/// The purge lane in a tick: a batch of due items per step, once through the trash per tick.
#[derive(Clone)]
pub struct PurgeLane<'a> {
    store: Option<&'a dyn Storage>,
    days: f64,
    rules: &'a str,
    /// The last item examined in this tick (items in use stay and are passed over).
    after: Option<Trashed>,
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
    pub const COUNTERS: &'static [Counter] = &[MEDIA_PURGED, PURGE_OPERATIONS];

    /// The lane at the start of a tick: items trashed more than `days` ago, used by nothing under
    /// the reference rules `rules`, their objects deleted from `store` (when bound).
    pub fn new(store: Option<&'a dyn Storage>, days: f64, rules: &'a str) -> PurgeLane<'a> {
        PurgeLane { store, days, rules, after: None, done: false }
    }
}

impl<E: Executor, K> Lane<E, K> for PurgeLane<'_> {
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

    /// Purges the next batch of due items; `None` once none is left in this tick. A batch whose
    /// items are all in use (or were restored) only looked.
    async fn step(&mut self, ctx: &mut Ctx<'_, E, K>) -> Result<Option<LaneStep>, Error> {
        if self.done {
            return Ok(None);
        }
        let due = repo::purge_due(ctx.exec, self.days, self.after.as_ref(), BATCH).await?;
        let Some(last) = due.last().cloned() else {
            self.done = true;
            return Ok(None);
        };
        self.done = due.len() < BATCH as usize;
        self.after = Some(last);
        let ids: Vec<String> = due.into_iter().map(|t| t.id).collect();
        let purged = repo::purge(ctx.exec, &ids, self.days, self.rules).await?;
        ctx.count(MEDIA_PURGED, purged.len() as u64);
        let failure = match forget_objects(self.store, &purged).await {
            Forget::NoOperation => None,
            Forget::Deleted { .. } => {
                ctx.count(PURGE_OPERATIONS, 1);
                None
            }
            Forget::Failed { objects, error } => {
                ctx.count(PURGE_OPERATIONS, 1);
                Some(format!("the objects of {objects} purged media stay until the storage sweep: {error}"))
            }
        };
        Ok(Some(LaneStep { progressed: !purged.is_empty(), failure, ..LaneStep::progress() }))
    }
}
