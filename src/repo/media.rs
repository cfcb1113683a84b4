//! The media library's metadata rows (`media`). Stored objects live elsewhere and are never
//! touched here.

use serde::Deserialize;

use crate::exec::{Error, Executor, Statement};
use crate::ids;

const INSERT: &str = include_str!("../sql/media/insert.sql");
const SELECT_ONE: &str = include_str!("../sql/media/select_one.sql");
const LIST: &str = include_str!("../sql/media/list.sql");
const DELETE: &str = include_str!("../sql/media/delete.sql");

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
    pub storage_key: String,
}

/// Registers media; a taken `storage_key` is [`Error::Unique`].
pub async fn insert<E: Executor>(exec: &E, new: NewMedia) -> Result<Media, Error> {
    let stmt = Statement::new(INSERT)
        .bind(ids::new_id())
        .bind(new.filename)
        .bind(new.mime_type)
        .bind(new.size)
        .bind(new.width)
        .bind(new.height)
        .bind(new.alt)
        .bind(new.storage_key);
    exec.query_first(stmt).await?.ok_or_else(|| Error::Backend("RETURNING produced no row".into()))
}

pub async fn get<E: Executor>(exec: &E, id: &str) -> Result<Option<Media>, Error> {
    exec.query_first(Statement::new(SELECT_ONE).bind(id)).await
}

/// Newest first; up to `limit + 1` rows after `(created_at, id)`.
pub async fn list<E: Executor>(exec: &E, after: Option<(String, String)>, limit: u32) -> Result<Vec<Media>, Error> {
    let (at, id) = after.unzip();
    exec.query(Statement::new(LIST).bind(at).bind(id).bind(i64::from(limit) + 1)).await
}

/// Deletes the metadata row; false when it did not exist.
pub async fn delete<E: Executor>(exec: &E, id: &str) -> Result<bool, Error> {
    Ok(exec.execute(Statement::new(DELETE).bind(id)).await? > 0)
}
