//! The storage sweep: the tick's `storage` lane reclaims objects this worker stored that no media
//! row references (left behind by a failure between a row delete and its object delete, or by an
//! upload whose row was never written), a page of the bucket listing per step, resuming across
//! ticks from a cursor kept in D1. Only objects carrying [`super::MARKER`] are candidates: the
//! bucket may hold other files, and those are never deleted (nor are objects uploaded before the
//! marker existed: such orphans stay). Objects younger than the grace period are left alone, so an
//! upload racing its own row insert is not swept; an object a row references is never deleted.

use super::{Storage, StorageError};
use crate::exec::{Error, Executor};
use crate::repo::media as repo;

/// Objects listed per step.
pub const PAGE: u32 = 100;
/// The most a step costs: reading the cursor, checking the page's keys against the media rows
/// and writing the cursor (statements), listing and deleting (storage operations).
pub const STEP_MAX_OPERATIONS: u64 = 5;
/// What a step did.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct SweepStep {
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

/// Sweeps one page of the bucket listing.
pub async fn step<E: Executor>(exec: &E, storage: &dyn Storage, grace_ms: f64) -> Result<SweepStep, Error> {
    let cursor = repo::sweep_cursor(exec).await?;
    let page = storage.list(cursor.as_deref(), PAGE).await.map_err(storage_error)?;
    let mut step = SweepStep { operations: 1, ..SweepStep::default() };
    let cutoff = storage.now_ms() - grace_ms;
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
    if page.cursor != cursor {
        repo::set_sweep_cursor(exec, page.cursor.as_deref()).await?;
    }
    step.pass_done = page.cursor.is_none();
    Ok(step)
}
