//! A media item's earlier files (`media_versions`): listed with what links to them, and the two
//! guarded batches that change an item's file, a replace and a revert. A version's rows go with
//! their item ([`super::media`]'s deletes); the versions' purge is this module's too.

use serde::Deserialize;

use super::media::{Media, Purged};
use super::uses;
use crate::exec::guard::{guarded_batch, Guard};
use crate::exec::{Error, Executor, Outcome, Statement};
use crate::sql::Fragment;

const GUARD_CURRENT_FILE: &str = include_str!("../sql/versions/guard_current_file.sql");
const VERSION_CURRENT_FILE: &str = include_str!("../sql/versions/version_current_file.sql");
const REPLACE_FILE: &str = include_str!("../sql/versions/replace_file.sql");
const REVERT_FILE: &str = include_str!("../sql/versions/revert_file.sql");
const DROP_VERSION: &str = include_str!("../sql/versions/drop_version.sql");
const LIST: &str = include_str!("../sql/versions/list.sql");
const SELECT_ONE: &str = include_str!("../sql/versions/select_one.sql");
const PURGE_DUE: &str = include_str!("../sql/versions/purge_due.sql");
const PURGE: &str = include_str!("../sql/versions/purge.sql");
const SET_PURGE_CURSOR: &str = include_str!("../sql/versions/set_purge_cursor.sql");

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
    moved_item(&outcomes)
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
    moved_item(&outcomes)
}

/// The item as the batch that moved it to another file returned it (its second statement's row).
fn moved_item(outcomes: &[Outcome]) -> Result<Media, Error> {
    outcomes
        .get(1)
        .map(Outcome::first)
        .transpose()?
        .flatten()
        .ok_or_else(|| Error::Backend("RETURNING produced no row".into()))
}

/// A version as the purge orders them.
#[derive(Debug, Clone, Deserialize, PartialEq)]
pub struct Due {
    pub storage_key: String,
    pub replaced_at: String,
}

/// Up to `limit` versions replaced more than `days` ago (by the database clock), oldest first,
/// after `after`.
pub async fn purge_due<E: Executor>(exec: &E, days: f64, after: Option<&Due>, limit: u32) -> Result<Vec<Due>, Error> {
    let stmt = Statement::new(PURGE_DUE)
        .bind(days)
        .bind(i64::from(limit))
        .bind(after.map(|d| d.replaced_at.clone()))
        .bind(after.map(|d| d.storage_key.clone()));
    exec.query(stmt).await
}

/// Purges those of the versions `keys` replaced more than `days` ago that nothing links while
/// coverage proves it under the rules `rules_id` (the statement carries the rule), and in the same
/// atomic batch records where the pass stands: after `last`, or (`None`) that it ended and the next
/// starts no earlier than `rest_s` seconds from now. The rows deleted, for their objects.
pub async fn purge_and_advance<E: Executor>(
    exec: &E,
    keys: &[String],
    days: f64,
    rules_id: &str,
    last: Option<&Due>,
    rest_s: f64,
) -> Result<Vec<Purged>, Error> {
    let advance = Statement::new(SET_PURGE_CURSOR)
        .bind(last.map(|d| d.replaced_at.clone()))
        .bind(last.map(|d| d.storage_key.clone()))
        .bind(rest_s);
    if keys.is_empty() {
        exec.execute(advance).await?;
        return Ok(Vec::new());
    }
    let json = serde_json::to_string(keys).map_err(|e| Error::Decode(e.to_string()))?;
    let coverage = super::media::coverage_proven();
    let sql = uses::render(
        PURGE,
        &Fragment::row_column("media_versions", "media_id"),
        &[("coverage_proven", &coverage), ("rules", &Fragment::parameter(3))],
    );
    let purge = Statement::new(sql).bind(json).bind(days).bind(rules_id);
    let outcomes = exec.batch(vec![purge, advance]).await?;
    outcomes.first().map_or(Ok(Vec::new()), Outcome::decode)
}
