//! A media item's file changed: replaced by a newly uploaded one ([`replace`]) or by one of its
//! versions ([`revert`]). Keys are immutable (the file route caches a key's bytes for a year), so
//! the item takes a new key and its current file becomes a version (`media_versions`), in one
//! guarded batch that takes the item only at the file the request read: of two racing changes one
//! wins and the other changes nothing, and neither's earlier file is lost. References by id show
//! the new file at once; a file URL naming an earlier key still resolves to the item.
//!
//! Storing the new bytes is the API's (an upload's streaming); what is decided here is whether the
//! item takes them, and, after an error that may hide a commit, whether it did.

use crate::exec::{Error, Executor};
use crate::repo::media::{self as repo, Media};
use crate::repo::versions::{self, NewFile};

use super::may_change;

/// How a change of an item's file ended.
#[derive(Debug, Clone, PartialEq)]
pub enum FileChange {
    /// The item has its new file now (the row as it is).
    Changed(Media),
    /// The item has that file already (a client's retry after a lost answer): nothing changed.
    Unchanged(Media),
    NotFound,
    /// The item is not the caller's, who may change only its own: nothing changed.
    NotOwn,
    /// The item is in the trash: restore it first. Nothing changed.
    InTrash,
    /// A revert names no version of this item. Nothing changed.
    NoSuchVersion,
    /// Another item's current file holds these bytes (`id`): nothing changed.
    HeldBy {
        id: String,
    },
    /// A racing replace or revert changed the item's file first: nothing changed; retry.
    Raced,
}

/// Why a replace did not settle.
#[derive(Debug)]
pub enum Failure {
    /// Nothing committed: nothing names the new file, whose object may go.
    NotCommitted(Error),
    /// The batch failed in a way that may hide a commit and the read-back failed too: nobody can
    /// tell whether the item names the new file, so its object must stay (the storage sweep
    /// takes it once no row names it).
    Unknown(Error),
}

/// The item `id` as a change of its file may take it: `Err` with the outcome when it is missing,
/// not the caller's (`only_own`: below editor, the caller's id) or in the trash.
pub async fn changeable<E: Executor>(
    exec: &E,
    id: &str,
    only_own: Option<&str>,
) -> Result<Result<Media, FileChange>, Error> {
    let Some(m) = repo::get(exec, id).await? else { return Ok(Err(FileChange::NotFound)) };
    // An item's author is written once and never changes (migration 0019): what is read here
    // holds at the write.
    if !may_change(&m, only_own) {
        return Ok(Err(FileChange::NotOwn));
    }
    if m.deleted_at.is_some() {
        return Ok(Err(FileChange::InTrash));
    }
    Ok(Ok(m))
}

/// Gives `item` (as read by [`changeable`]) the stored file `new`, replaced by the token
/// `replaced_by`, only while its current file is still the one read. An error that may hide a
/// commit is settled by reading the item back: it names the new key (as its file or a version)
/// exactly when the batch committed.
pub async fn replace<E: Executor>(
    exec: &E,
    item: &Media,
    new: NewFile,
    replaced_by: Option<&str>,
) -> Result<FileChange, Failure> {
    let (key, hash) = (new.storage_key.clone(), new.content_hash.clone());
    let e = match versions::replace(exec, &item.id, &item.storage_key, new, replaced_by).await {
        Ok(m) => return Ok(FileChange::Changed(m)),
        Err(e) => e,
    };
    // Refusals committed nothing: what the item is now only names the outcome.
    let refused = match e {
        Error::Unique(_) => repo::by_hash(exec, &hash)
            .await
            .map(|h| h.filter(|h| h.id != item.id).map_or(FileChange::Raced, |h| FileChange::HeldBy { id: h.id })),
        Error::Stale => after_stale(exec, &item.id, None).await,
        e if e.may_have_committed() => {
            // The new key is the item's (as its file, or as a version if a later change moved
            // on) exactly when the batch committed.
            return match repo::id_by_storage_key(exec, &key).await {
                Ok(Some(owner)) if owner == item.id => match repo::get(exec, &item.id).await {
                    Ok(Some(m)) => Ok(FileChange::Changed(m)),
                    Ok(None) => Ok(FileChange::NotFound),
                    Err(lookup) => Err(Failure::Unknown(lookup)),
                },
                Ok(_) => Err(Failure::NotCommitted(e)),
                Err(_) => Err(Failure::Unknown(e)),
            };
        }
        e => return Err(Failure::NotCommitted(e)),
    };
    refused.map_err(Failure::NotCommitted)
}

/// Makes the version `version` of the item `id` its current file again (the caller's current file
/// becomes a version, replaced by the token `replaced_by`). The item's current file being that
/// version already answers [`FileChange::Unchanged`]: a retry after a lost answer, or a racing
/// revert to the same version.
pub async fn revert<E: Executor>(
    exec: &E,
    id: &str,
    version: &str,
    only_own: Option<&str>,
    replaced_by: Option<&str>,
) -> Result<FileChange, Error> {
    let item = match changeable(exec, id, only_own).await? {
        Ok(m) => m,
        Err(refused) => return Ok(refused),
    };
    if item.storage_key == version {
        return Ok(FileChange::Unchanged(item));
    }
    let Some(target) = versions::one(exec, id, version).await? else { return Ok(FileChange::NoSuchVersion) };
    match versions::revert(exec, id, &item.storage_key, version, replaced_by).await {
        Ok(m) => Ok(FileChange::Changed(m)),
        Err(Error::Stale) => after_stale(exec, id, Some(version)).await,
        Err(Error::Unique(_)) => {
            let holder = match &target.content_hash {
                Some(h) => repo::by_hash(exec, h).await?,
                None => None,
            };
            Ok(holder.filter(|h| h.id != id).map_or(FileChange::Raced, |h| FileChange::HeldBy { id: h.id }))
        }
        Err(e) if e.may_have_committed() => match repo::get(exec, id).await? {
            Some(m) if m.storage_key == version => Ok(FileChange::Changed(m)),
            _ => Err(e),
        },
        Err(e) => Err(e),
    }
}

/// What a change refused by its guard meets: the item gone, in the trash, at the version asked
/// already (a racing revert to it), the version not this item's, or another change first.
async fn after_stale<E: Executor>(exec: &E, id: &str, version: Option<&str>) -> Result<FileChange, Error> {
    let Some(m) = repo::get(exec, id).await? else { return Ok(FileChange::NotFound) };
    if m.deleted_at.is_some() {
        return Ok(FileChange::InTrash);
    }
    let Some(version) = version else { return Ok(FileChange::Raced) };
    if m.storage_key == version {
        return Ok(FileChange::Unchanged(m));
    }
    match repo::id_by_storage_key(exec, version).await? {
        Some(owner) if owner == id => Ok(FileChange::Raced),
        _ => Ok(FileChange::NoSuchVersion),
    }
}
