//! The DELETE request of a collection: it creates (or takes over) the tombstone and runs the
//! front phases under its lease (`fence`, `registry`, `table`), then releases the tombstone at
//! `work` for the deletion lane ([`super::lane`]). The lane runs the same front phases
//! ([`front_step`]) when it takes over a tombstone a request left leased.

use super::batch::{CleanupBatch, START_BATCH_ROWS};
use crate::exec::{Error, Executor};
use crate::ids;
use crate::model::ident::Ident;
use crate::model::state::DeletionPhase;
use crate::repo::capture;
use crate::repo::deletion::{self as repo, Fence, Lease, Tombstone};
use crate::repo::schema;

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
pub(super) enum Front {
    /// The phase is done; the lease is at the next one.
    Advanced,
    /// The fence found entries outside the trash (not forced): the tombstone was cancelled.
    HasContent,
    /// A guard or the lease was lost; nothing changed.
    Lost,
}

/// Runs the lease's front phase. The table drop releases the lease at `work` when `release`
/// (the request), or keeps it for the next step (the lane).
pub(super) async fn front_step<E: Executor>(
    exec: &E,
    lease: &mut Lease,
    rows: u32,
    release: bool,
) -> Result<Front, Error> {
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
