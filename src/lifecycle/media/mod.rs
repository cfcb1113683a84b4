//! The media lifecycle: an item moved to the trash (by the safe delete's rule, or forced),
//! deleted for good (by the rule, or forced), many moved at once ([`bulk_trash`]), brought back
//! ([`restore`]), and purged from the trash by the tick ([`purge`]); and the one rule for the
//! stored objects of rows deleted for good ([`forget_objects`]).
//!
//! Each request returns an outcome from the domain (`api::media` says what it means in HTTP, in
//! one match). The rule itself — nothing uses the item and coverage proves it — is carried by the
//! one statement that moves or deletes (`repo::media`), so a retry, or a content write racing the
//! request, is judged at that instant; what is read here before or after only names the outcome.

pub mod purge;
pub mod relink;
pub mod replace;

use serde::Deserialize;

use crate::exec::{Error, Executor};
use crate::model::state::CoverageStatus;
use crate::repo::capture;
use crate::repo::media::{self as repo, Media, Purged, SafeTrash};
use crate::repo::reads::{self, UsingEntry};
use crate::storage::{Storage, StorageError};
use crate::usage::coverage::{aggregate, CollectionCoverage};
use crate::usage::extract::Rules;

/// The most entries a [`DeleteOutcome::InUse`] names.
pub const IN_USE_ENTRIES: u32 = 10;

/// How a single delete removes an item.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Removal<'a> {
    /// To the trash (row and object kept). Only an item of `only_own`'s (below editor: the
    /// caller's own; `None`: any). Unless `force`d, only by the safe delete's rule.
    Trash { force: bool, only_own: Option<&'a str> },
    /// For good, in the trash or not: the row, then (for an upload) its object. Unless `force`d,
    /// only by the safe delete's rule. Any item (an admin's request).
    Permanent { force: bool },
}

/// How a single delete ended.
#[derive(Debug)]
pub enum DeleteOutcome {
    /// In the trash: moved there now, or already (a retry whose first try committed unseen).
    Trashed,
    /// The row is deleted for good; `kept` is its object when the object's delete failed (the
    /// storage sweep reclaims it).
    Deleted { kept: Option<KeptObject> },
    /// No such item (or, for a permanent delete's retry, gone already).
    NotFound,
    /// The item is not the caller's, who may delete only its own: nothing changed.
    NotOwn,
    /// `count` entries use it (trashed entries and entries too large to index included); `entries`
    /// names up to [`IN_USE_ENTRIES`] of them. Nothing changed.
    InUse { count: i64, entries: Vec<UsingEntry> },
    /// Nothing the index knows of uses it, but coverage (`status`) cannot prove it unused; also
    /// when the rule refused twice while neither a use nor incomplete coverage was found after
    /// (`status` is then `complete`). Nothing changed.
    CoverageIncomplete { status: CoverageStatus },
    /// The move found the item neither movable nor in the trash (it changed in between): retry.
    Changed,
}

/// The object of a row deleted for good that stays in the store (its delete failed).
#[derive(Debug)]
pub struct KeptObject {
    pub key: String,
    pub error: StorageError,
}

/// Deletes the media `id` as `removal` says, under the deployed reference rules `rules`; for a
/// permanent delete, then its object from `store` (when bound) by [`forget_objects`]'s rule.
pub async fn delete<E: Executor>(
    exec: &E,
    store: Option<&dyn Storage>,
    rules: &Rules,
    id: &str,
    removal: Removal<'_>,
) -> Result<DeleteOutcome, Error> {
    match removal {
        Removal::Permanent { force } => {
            let deleted =
                if force { Ok(repo::delete(exec, id).await?) } else { delete_if_unused(exec, rules, id).await? };
            let deleted = match deleted {
                Ok(Some(row)) => row,
                Ok(None) => return Ok(DeleteOutcome::NotFound),
                Err(refused) => return Ok(refused),
            };
            let kept = match forget_objects(store, &deleted).await {
                Forget::Failed { error, .. } => {
                    let keys: Vec<&str> =
                        deleted.iter().filter(|p| p.uploaded()).map(|p| p.storage_key.as_str()).collect();
                    Some(KeptObject { key: keys.join(", "), error })
                }
                Forget::NoOperation | Forget::Deleted { .. } => None,
            };
            Ok(DeleteOutcome::Deleted { kept })
        }
        Removal::Trash { force, only_own } => {
            let Some(media) = repo::get(exec, id).await? else { return Ok(DeleteOutcome::NotFound) };
            // The ownership read here cannot be made stale by anything that happens before the
            // move: an item's author is written once, on insert, and never changed (a trigger
            // refuses it, migration 0019), and a media id is never reused, so this row is the
            // caller's for as long as it exists. The move itself carries the same condition all
            // the same (`media/trash.sql`), so it holds at the instant of the write whatever
            // came between.
            if !may_change(&media, only_own) {
                return Ok(DeleteOutcome::NotOwn);
            }
            if media.deleted_at.is_some() {
                return Ok(DeleteOutcome::Trashed);
            }
            if force {
                repo::trash(exec, id).await?;
                return Ok(DeleteOutcome::Trashed);
            }
            trash_if_unused(exec, rules, id, only_own).await
        }
    }
}

/// Whether a caller who may change only `only_own`'s items (`None`: any) may change `m` (an item
/// without an author is nobody's own).
pub fn may_change(m: &Media, only_own: Option<&str>) -> bool {
    only_own.is_none_or(|me| m.author_id.as_deref() == Some(me))
}

/// Two tries of the rule: if it refused but the re-check finds neither a use nor incomplete
/// coverage, what blocked it went away in between; it is tried once more rather than a reason
/// guessed.
const TRIES: usize = 2;

/// The permanent delete by the safe delete's rule: the row deleted (`Ok(Some)`), no such row
/// (`Ok(None)`: perhaps a retry whose first try committed unseen), or why not (`Err`).
async fn delete_if_unused<E: Executor>(
    exec: &E,
    rules: &Rules,
    id: &str,
) -> Result<Result<Option<Vec<Purged>>, DeleteOutcome>, Error> {
    for _ in 0..TRIES {
        if let Some(deleted) = repo::delete_if_unused(exec, id, rules.id()).await? {
            return Ok(Ok(Some(deleted)));
        }
        // Refused, or gone.
        if repo::get(exec, id).await?.is_none() {
            return Ok(Ok(None));
        }
        if let Some(refused) = refusal(exec, rules, id).await? {
            return Ok(Err(refused));
        }
    }
    Ok(Err(DeleteOutcome::CoverageIncomplete { status: CoverageStatus::Complete }))
}

/// The move to the trash by the safe delete's rule (one guarded batch per try).
async fn trash_if_unused<E: Executor>(
    exec: &E,
    rules: &Rules,
    id: &str,
    only_own: Option<&str>,
) -> Result<DeleteOutcome, Error> {
    for _ in 0..TRIES {
        match repo::trash_if_unused(exec, id, rules.id(), only_own).await? {
            SafeTrash::Trashed => return Ok(DeleteOutcome::Trashed),
            // Gone, in the trash already (a retry whose first try committed unseen), or not the
            // caller's.
            SafeTrash::Missing => {
                return Ok(match repo::get(exec, id).await? {
                    None => DeleteOutcome::NotFound,
                    Some(m) if !may_change(&m, only_own) => DeleteOutcome::NotOwn,
                    Some(m) if m.deleted_at.is_some() => DeleteOutcome::Trashed,
                    Some(_) => DeleteOutcome::Changed,
                });
            }
            SafeTrash::Refused => {}
        }
        if let Some(refused) = refusal(exec, rules, id).await? {
            return Ok(refused);
        }
    }
    Ok(DeleteOutcome::CoverageIncomplete { status: CoverageStatus::Complete })
}

/// Why the safe delete's rule refused the media: [`DeleteOutcome::InUse`] naming the entries that
/// use it, else [`DeleteOutcome::CoverageIncomplete`]; `None` when neither holds any longer.
async fn refusal<E: Executor>(exec: &E, rules: &Rules, id: &str) -> Result<Option<DeleteOutcome>, Error> {
    let entries = reads::entries_using_media(exec, id, IN_USE_ENTRIES).await?;
    if let Some(count) = entries.first().map(|e| e.total).filter(|n| *n > 0) {
        return Ok(Some(DeleteOutcome::InUse { count, entries }));
    }
    let status = coverage(exec, rules).await?;
    Ok((status != CoverageStatus::Complete).then_some(DeleteOutcome::CoverageIncomplete { status }))
}

/// The overall coverage of the registered collections under the deployed reference rules.
async fn coverage<E: Executor>(exec: &E, rules: &Rules) -> Result<CoverageStatus, Error> {
    let rows = capture::coverage_rows(exec).await?;
    Ok(aggregate(&rows.iter().map(|r| CollectionCoverage::of(r, rules)).collect::<Vec<_>>()))
}

/// How a restore ended.
#[derive(Debug, Clone, PartialEq)]
pub enum RestoreOutcome {
    /// Brought back from the trash (the same id and URL; its file is served again).
    Restored(Media),
    /// Not in the trash: left as it is.
    NotInTrash(Media),
    NotFound,
}

/// Brings the media `id` back from the trash.
pub async fn restore<E: Executor>(exec: &E, id: &str) -> Result<RestoreOutcome, Error> {
    if let Some(m) = repo::restore(exec, id).await? {
        return Ok(RestoreOutcome::Restored(m));
    }
    Ok(repo::get(exec, id).await?.map_or(RestoreOutcome::NotFound, RestoreOutcome::NotInTrash))
}

/// What a bulk trash did with one id.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum BulkOutcome {
    /// In the trash: moved there now, or already.
    Trashed,
    /// Entries use it (up to the number asked of them named; none named when only entries too
    /// large to index do).
    InUse {
        entries: Vec<EntryRef>,
    },
    /// Nothing the index knows of uses it, but coverage cannot prove it.
    CoverageIncomplete,
    NotFound,
}

/// An entry that uses a media item, as a bulk trash names it.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
pub struct EntryRef {
    pub collection: String,
    pub content_id: String,
    pub slug: Option<String>,
}

/// Moves to the trash, in one statement, each of `ids` that the safe delete's rule passes (under
/// the deployed reference rules `rules_id`), and says for each id what became of it, naming up to
/// `entries` of the entries that use an item left in place.
pub async fn bulk_trash<E: Executor>(
    exec: &E,
    rules_id: &str,
    ids: &[String],
    entries: u32,
) -> Result<Vec<(String, BulkOutcome)>, Error> {
    let moved = repo::bulk_trash(exec, ids, rules_id).await?;
    let rest: Vec<String> = ids.iter().filter(|id| !moved.contains(id)).cloned().collect();
    let statuses = if rest.is_empty() { Vec::new() } else { repo::bulk_status(exec, &rest, entries).await? };
    let outcome = |id: &String| {
        if moved.contains(id) {
            return BulkOutcome::Trashed;
        }
        let Some(s) = statuses.iter().find(|s| &s.id == id) else { return BulkOutcome::NotFound };
        let named: Vec<EntryRef> = serde_json::from_str::<Vec<(String, String, Option<String>)>>(&s.entries)
            .unwrap_or_default()
            .into_iter()
            .map(|(collection, content_id, slug)| EntryRef { collection, content_id, slug })
            .collect();
        match (s.found != 0, s.trashed != 0) {
            (false, _) => BulkOutcome::NotFound,
            (true, true) => BulkOutcome::Trashed,
            (true, false) if !named.is_empty() || s.unindexed_use != 0 => BulkOutcome::InUse { entries: named },
            (true, false) => BulkOutcome::CoverageIncomplete,
        }
    };
    Ok(ids.iter().map(|id| (id.clone(), outcome(id))).collect())
}

/// What [`forget_objects`] did.
#[derive(Debug)]
pub enum Forget {
    /// No storage operation: no object store is bound, or no row deleted was an upload.
    NoOperation,
    /// One storage operation deleted the `objects`.
    Deleted { objects: usize },
    /// One storage operation failed: the `objects` stay until the storage sweep.
    Failed { objects: usize, error: StorageError },
}

/// The one rule for the stored objects of media rows deleted for good (by a permanent delete or
/// the purge): only the objects this worker stored are deleted, in one storage operation, after
/// their rows. Whether this worker stored an object is read from the row the delete returned, not
/// from the object: only an upload sets `content_hash`, and an upload's key is one the worker
/// made up (a new random id) and stored the object under itself, while a JSON registration names
/// a key of the client's choosing (perhaps another application's file in the same bucket). So
/// the row alone is sound, and it costs no storage operation, where checking the object's marker
/// would cost a head (and the head and the delete would still not be atomic). A marked object a
/// JSON row happens to name is not deleted here either: the storage sweep takes it (no uploaded
/// row names it), as it takes an object whose delete failed here.
pub async fn forget_objects(store: Option<&dyn Storage>, deleted: &[Purged]) -> Forget {
    let keys: Vec<String> = deleted.iter().filter(|p| p.uploaded()).map(|p| p.storage_key.clone()).collect();
    let Some(store) = store.filter(|_| !keys.is_empty()) else { return Forget::NoOperation };
    match store.delete(&keys).await {
        Ok(()) => Forget::Deleted { objects: keys.len() },
        Err(error) => Forget::Failed { objects: keys.len(), error },
    }
}
