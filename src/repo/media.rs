//! The media library's metadata rows (`media`), and the storage sweep's cursor. Stored objects
//! are reached through [`crate::storage`], never from here.

use serde::Deserialize;

use super::lease;
use crate::exec::{Error, Executor, Statement};
use crate::ids;

const INSERT: &str = include_str!("../sql/media/insert.sql");
const SELECT_ONE: &str = include_str!("../sql/media/select_one.sql");
const LIST: &str = include_str!("../sql/media/list.sql");
const DELETE: &str = include_str!("../sql/media/delete.sql");
const SELECT_BY_HASH: &str = include_str!("../sql/media/select_by_hash.sql");
const ID_BY_STORAGE_KEY: &str = include_str!("../sql/media/id_by_storage_key.sql");
const REFERENCED_KEYS: &str = include_str!("../sql/media/referenced_keys.sql");
const UPLOADED_KEY: &str = include_str!("../sql/media/uploaded_key.sql");
const SWEEP_CURSOR: &str = include_str!("../sql/media/sweep_cursor.sql");
const SET_SWEEP_CURSOR: &str = include_str!("../sql/media/set_sweep_cursor.sql");
const ENQUEUE_LINKING: &str = include_str!("../sql/media/enqueue_linking.sql");
const STALE_WHILE_QUEUED: &str = include_str!("../sql/media/stale_while_queued.sql");
const LOOKUP: &str = include_str!("../sql/media/lookup.sql");

/// A media row.
#[derive(Debug, Clone, Deserialize, PartialEq)]
pub struct Media {
    pub id: String,
    pub filename: String,
    pub mime_type: String,
    pub size: Option<i64>,
    pub width: Option<i64>,
    pub height: Option<i64>,
    pub alt: Option<String>,
    pub caption: Option<String>,
    pub storage_key: String,
    pub status: String,
    pub created_at: String,
    /// SHA-256 of the stored bytes (hex): set only for an upload, whose object this worker
    /// stored under a key it chose; `None` for media registered by JSON (stored elsewhere).
    pub content_hash: Option<String>,
}

impl Media {
    /// Whether this worker stored the row's object (an upload), rather than a client naming a key
    /// by JSON.
    pub fn uploaded(&self) -> bool {
        self.content_hash.is_some()
    }
}

/// Metadata of a newly registered media object.
#[derive(Debug, Clone)]
pub struct NewMedia {
    pub filename: String,
    pub mime_type: String,
    pub size: Option<i64>,
    pub width: Option<i64>,
    pub height: Option<i64>,
    pub alt: Option<String>,
    pub caption: Option<String>,
    pub storage_key: String,
    /// SHA-256 of the stored bytes (hex) for uploaded files; one row per hash.
    pub content_hash: Option<String>,
}

/// Registers media; a taken `storage_key` or `content_hash` is [`Error::Unique`].
pub async fn insert<E: Executor>(exec: &E, new: NewMedia) -> Result<Media, Error> {
    exec.query_first(insert_statement(new)).await?.ok_or_else(|| Error::Backend("RETURNING produced no row".into()))
}

/// Registers media stored elsewhere, whose storage key existing content may already link to:
/// in the same atomic batch, the entries whose file URLs named that key when no media item had
/// it are queued again (their collections read stale until that work has run), so they show in
/// its "Used in". A taken key is [`Error::Unique`].
pub async fn insert_linkable<E: Executor>(exec: &E, new: NewMedia) -> Result<Media, Error> {
    let key = new.storage_key.clone();
    let outcomes =
        exec.batch(vec![insert_statement(new), requeue_linking(Some(&key), None), stale_while_queued()]).await?;
    outcomes
        .first()
        .map(|o| o.first())
        .transpose()?
        .flatten()
        .ok_or_else(|| Error::Backend("RETURNING produced no row".into()))
}

fn insert_statement(new: NewMedia) -> Statement {
    Statement::new(INSERT)
        .bind(ids::new_id())
        .bind(new.filename)
        .bind(new.mime_type)
        .bind(new.size)
        .bind(new.width)
        .bind(new.height)
        .bind(new.alt)
        .bind(new.storage_key)
        .bind(new.caption)
        .bind(new.content_hash)
}

pub async fn get<E: Executor>(exec: &E, id: &str) -> Result<Option<Media>, Error> {
    exec.query_first(Statement::new(SELECT_ONE).bind(id)).await
}

/// Newest first; up to `limit + 1` rows after `(created_at, id)`.
pub async fn list<E: Executor>(exec: &E, after: Option<(String, String)>, limit: u32) -> Result<Vec<Media>, Error> {
    let (at, id) = after.unzip();
    exec.query(Statement::new(LIST).bind(at).bind(id).bind(i64::from(limit) + 1)).await
}

/// Deletes the metadata row; false when it did not exist. In the same atomic batch, the entries
/// whose file URLs named it are queued again, so that a later registration under its storage key
/// finds them.
pub async fn delete<E: Executor>(exec: &E, id: &str) -> Result<bool, Error> {
    let outcomes = exec
        .batch(vec![requeue_linking(None, Some(id)), Statement::new(DELETE).bind(id), stale_while_queued()])
        .await?;
    Ok(outcomes.get(1).is_some_and(|o| o.changes > 0))
}

/// Queues the entries whose file URLs named `key` unresolved, or named the media item `id`.
fn requeue_linking(key: Option<&str>, id: Option<&str>) -> Statement {
    Statement::new(lease::render(ENQUEUE_LINKING, &[])).bind(key).bind(id)
}

fn stale_while_queued() -> Statement {
    Statement::new(STALE_WHILE_QUEUED)
}

/// The id of the media row registered under `storage_key`, if any.
pub async fn id_by_storage_key<E: Executor>(exec: &E, storage_key: &str) -> Result<Option<String>, Error> {
    Ok(exec.query_first::<IdRow>(Statement::new(ID_BY_STORAGE_KEY).bind(storage_key)).await?.map(|r| r.id))
}

#[derive(Deserialize)]
struct IdRow {
    id: String,
}

/// The media row holding these bytes (by SHA-256, hex).
pub async fn by_hash<E: Executor>(exec: &E, content_hash: &str) -> Result<Option<Media>, Error> {
    exec.query_first(Statement::new(SELECT_BY_HASH).bind(content_hash)).await
}

#[derive(Deserialize)]
struct KeyRow {
    storage_key: String,
}

/// Which of `keys` a media row references (one statement).
pub async fn referenced_keys<E: Executor>(exec: &E, keys: &[String]) -> Result<Vec<String>, Error> {
    let json = serde_json::to_string(keys).map_err(|e| Error::Decode(e.to_string()))?;
    let rows: Vec<KeyRow> = exec.query(Statement::new(REFERENCED_KEYS).bind(json)).await?;
    Ok(rows.into_iter().map(|r| r.storage_key).collect())
}

/// Whether a media row that was uploaded (not registered by JSON) has `key` (one statement).
pub async fn uploaded_key<E: Executor>(exec: &E, key: &str) -> Result<bool, Error> {
    #[derive(Deserialize)]
    struct Row {
        uploaded: i64,
    }
    let row: Option<Row> = exec.query_first(Statement::new(UPLOADED_KEY).bind(key)).await?;
    Ok(row.is_some_and(|r| r.uploaded != 0))
}

#[derive(Deserialize)]
struct CursorRow {
    cursor: Option<String>,
}

/// Where the storage sweep's pass stands (`None`: at the start).
pub async fn sweep_cursor<E: Executor>(exec: &E) -> Result<Option<String>, Error> {
    Ok(exec.query_first::<CursorRow>(Statement::new(SWEEP_CURSOR)).await?.and_then(|r| r.cursor))
}

pub async fn set_sweep_cursor<E: Executor>(exec: &E, cursor: Option<&str>) -> Result<(), Error> {
    exec.execute(Statement::new(SET_SWEEP_CURSOR).bind(cursor)).await.map(|_| ())
}

/// How many bound JSON arrays of each kind (ids, storage keys) a lookup takes.
pub const LOOKUP_ARRAYS: usize = 2;

/// The media items named by `ids` (JSON arrays of ids) and `keys` (JSON arrays of storage keys),
/// in one statement, as `(id, storage_key, mime_type)`: what candidate strings of content refer
/// to.
pub async fn lookup<E: Executor>(
    exec: &E,
    ids: &[Option<String>; LOOKUP_ARRAYS],
    keys: &[Option<String>; LOOKUP_ARRAYS],
) -> Result<Vec<(String, String, Option<String>)>, Error> {
    #[derive(Deserialize)]
    struct Row {
        id: String,
        storage_key: String,
        mime_type: Option<String>,
    }
    let stmt = ids.iter().chain(keys).fold(Statement::new(LOOKUP), |s, v| s.bind(v.clone()));
    let rows: Vec<Row> = exec.query(stmt).await?;
    Ok(rows.into_iter().map(|r| (r.id, r.storage_key, r.mime_type)).collect())
}
