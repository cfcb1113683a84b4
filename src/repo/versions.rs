//! A media item's earlier files (`media_versions`): listed with what links to them, and the two
//! guarded batches that change an item's file, a replace and a revert. A version's rows go with
//! their item ([`super::media`]'s deletes); the versions' purge is this module's too.

use serde::Deserialize;

use super::media::Media;
use crate::exec::guard::{guarded_batch, Guard};
use crate::exec::{Error, Executor, Outcome, Statement};

const GUARD_CURRENT_FILE: &str = include_str!("../sql/versions/guard_current_file.sql");
const VERSION_CURRENT_FILE: &str = include_str!("../sql/versions/version_current_file.sql");
const REPLACE_FILE: &str = include_str!("../sql/versions/replace_file.sql");
const REVERT_FILE: &str = include_str!("../sql/versions/revert_file.sql");
const DROP_VERSION: &str = include_str!("../sql/versions/drop_version.sql");
const LIST: &str = include_str!("../sql/versions/list.sql");
const SELECT_ONE: &str = include_str!("../sql/versions/select_one.sql");

/// An earlier file of a media item (a row of `media_versions`), with how many entries link to it.
#[derive(Debug, Clone, Deserialize, PartialEq)]
pub struct Version {
    pub storage_key: String,
    pub filename: String,
    pub mime_type: String,
    pub size: Option<i64>,
    pub width: Option<i64>,
    pub height: Option<i64>,
    /// Set when the worker uploaded the version's bytes: only then does it serve and delete them.
    pub content_hash: Option<String>,
    /// When it stopped being the item's current file (the database's clock), and by whom.
    pub replaced_at: String,
    pub replaced_by: Option<String>,
    /// Entries with a current occurrence naming its key, counted up to the cap asked.
    pub linked: i64,
}

/// Up to `limit` versions of the media `id`, newest first, each with the entries linking to it
/// counted up to `linked_cap` (one statement).
pub async fn list<E: Executor>(exec: &E, id: &str, limit: u32, linked_cap: u32) -> Result<Vec<Version>, Error> {
    exec.query(Statement::new(LIST).bind(id).bind(i64::from(limit)).bind(i64::from(linked_cap))).await
}

/// The version `key` of the media `id` (its `linked` left 0).
pub async fn one<E: Executor>(exec: &E, id: &str, key: &str) -> Result<Option<Version>, Error> {
    exec.query_first(Statement::new(SELECT_ONE).bind(id).bind(key)).await
}

/// A newly stored file that is to become a media item's current one.
#[derive(Debug, Clone)]
pub struct NewFile {
    pub storage_key: String,
    pub mime_type: String,
    pub size: Option<i64>,
    pub width: Option<i64>,
    pub height: Option<i64>,
    /// SHA-256 of the bytes (hex): the worker uploaded them.
    pub content_hash: String,
    /// The item's new file name (`None`: kept).
    pub filename: Option<String>,
}

/// The guard of a replace or a revert: the item `id` outside the trash, its current file still
/// `current_key`, and (a revert) `version` one of its versions.
fn current_file_guard(id: &str, current_key: &str, version: Option<&str>) -> Guard {
    Guard::new(GUARD_CURRENT_FILE).bind(id).bind(current_key).bind(version)
}

/// Gives the media `id` the file `new`, in one guarded batch, only while it is outside the trash
/// and its current file is still `current_key` (else [`Error::Stale`]): that file becomes a
/// version replaced now by `replaced_by`. The row as it is now. Bytes another item holds are
/// [`Error::Unique`].
pub async fn replace<E: Executor>(
    exec: &E,
    id: &str,
    current_key: &str,
    new: NewFile,
    replaced_by: Option<&str>,
) -> Result<Media, Error> {
    let update = Statement::new(REPLACE_FILE)
        .bind(id)
        .bind(new.storage_key)
        .bind(new.mime_type)
        .bind(new.size)
        .bind(new.width)
        .bind(new.height)
        .bind(new.content_hash)
        .bind(new.filename);
    let outcomes = guarded_batch(
        exec,
        current_file_guard(id, current_key, None),
        vec![Statement::new(VERSION_CURRENT_FILE).bind(id).bind(replaced_by), update],
    )
    .await?;
    outcomes
        .get(1)
        .map(Outcome::first)
        .transpose()?
        .flatten()
        .ok_or_else(|| Error::Backend("RETURNING produced no row".into()))
}

/// Makes the version `version` of the media `id` its current file again, in one guarded batch,
/// only while the item is outside the trash, its current file is still `current_key` and
/// `version` is one of its versions (else [`Error::Stale`]): the current file becomes a version
/// replaced now by `replaced_by`, and the version's row goes. The row as it is now. Bytes another
/// item holds are [`Error::Unique`].
pub async fn revert<E: Executor>(
    exec: &E,
    id: &str,
    current_key: &str,
    version: &str,
    replaced_by: Option<&str>,
) -> Result<Media, Error> {
    let outcomes = guarded_batch(
        exec,
        current_file_guard(id, current_key, Some(version)),
        vec![
            Statement::new(VERSION_CURRENT_FILE).bind(id).bind(replaced_by),
            Statement::new(REVERT_FILE).bind(id).bind(version),
            Statement::new(DROP_VERSION).bind(id).bind(version),
        ],
    )
    .await?;
    outcomes
        .get(1)
        .map(Outcome::first)
        .transpose()?
        .flatten()
        .ok_or_else(|| Error::Backend("RETURNING produced no row".into()))
}
