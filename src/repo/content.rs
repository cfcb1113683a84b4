//! Content entries in `ec_<slug>`: create, read, list, update, draft revisions, publish,
//! trash, restore and permanent delete. Every write bumps `version` and `updated_at`.

use serde::Deserialize;

use crate::exec::guard::{guarded_batch, Guard};
use crate::exec::{Error, Executor, Row, Statement, Value};
use crate::ids;
use crate::model::collection::Collection;
use crate::model::ident::Ident;
use crate::sql::{render, Fragment};

const INSERT: &str = include_str!("../sql/content/insert.sql");
const SELECT_ONE: &str = include_str!("../sql/content/select_one.sql");
const LIST: &str = include_str!("../sql/content/list.sql");
const UPDATE: &str = include_str!("../sql/content/update.sql");
const PUBLISH: &str = include_str!("../sql/content/publish.sql");
const UNPUBLISH: &str = include_str!("../sql/content/unpublish.sql");
const TRASH: &str = include_str!("../sql/content/trash.sql");
const RESTORE: &str = include_str!("../sql/content/restore.sql");
const DELETE: &str = include_str!("../sql/content/delete.sql");
const GUARD_VERSION: &str = include_str!("../sql/content/guard_version.sql");
const INSERT_REVISION: &str = include_str!("../sql/content/insert_revision.sql");
const SET_DRAFT_REVISION: &str = include_str!("../sql/content/set_draft_revision.sql");
const SELECT_REVISION: &str = include_str!("../sql/content/select_revision.sql");

/// A new entry; `columns` are the field columns being set.
#[derive(Debug, Clone)]
pub struct NewEntry {
    pub slug: String,
    pub status: &'static str,
    pub locale: String,
    pub translation_group: Option<String>,
    pub columns: Vec<(Ident, Value)>,
}

/// Inserts an entry and returns the stored row.
pub async fn insert<E: Executor>(exec: &E, c: &Collection, new: NewEntry) -> Result<Row, Error> {
    let id = ids::new_id();
    let sql = render(
        INSERT,
        &[
            ("table", &c.table()),
            ("columns", &Fragment::trailing_columns(new.columns.iter().map(|(k, _)| k))),
            ("placeholders", &Fragment::trailing_placeholders(6, new.columns.len())),
        ],
    );
    let group = new.translation_group.unwrap_or_else(|| id.clone());
    let mut stmt = Statement::new(sql).bind(id).bind(new.slug).bind(new.status).bind(new.locale).bind(group);
    for (_, v) in new.columns {
        stmt = stmt.bind(v);
    }
    one_row(exec.run(stmt).await?.rows)
}

fn one_row(rows: Vec<Row>) -> Result<Row, Error> {
    rows.into_iter().next().ok_or_else(|| Error::Backend("RETURNING produced no row".into()))
}

/// One entry by id (trashed entries included).
pub async fn get<E: Executor>(exec: &E, c: &Collection, id: &str) -> Result<Option<Row>, Error> {
    let sql = render(SELECT_ONE, &[("table", &c.table())]);
    Ok(exec.run(Statement::new(sql).bind(id)).await?.rows.into_iter().next())
}

/// List filters and the keyset position after which to continue.
#[derive(Debug, Clone, Default)]
pub struct ListQuery {
    pub status: Option<String>,
    pub locale: Option<String>,
    /// `(created_at, id)` of the last entry of the previous page.
    pub after: Option<(String, String)>,
    pub limit: u32,
}

/// Non-trashed entries, newest first; returns up to `limit + 1` rows so the caller can tell
/// whether another page exists.
pub async fn list<E: Executor>(exec: &E, c: &Collection, q: &ListQuery) -> Result<Vec<Row>, Error> {
    let sql = render(LIST, &[("table", &c.table())]);
    let (after_at, after_id) = q.after.clone().unzip();
    let stmt = Statement::new(sql)
        .bind(q.status.clone())
        .bind(q.locale.clone())
        .bind(after_at)
        .bind(after_id)
        .bind(i64::from(q.limit) + 1);
    Ok(exec.run(stmt).await?.rows)
}

/// A change to an entry's live columns.
#[derive(Debug, Clone, Default)]
pub struct Update {
    /// Only apply when the entry is still at this version (the `_rev` the client saw).
    pub expected_version: Option<i64>,
    pub slug: Option<String>,
    pub status: Option<&'static str>,
    pub columns: Vec<(Ident, Value)>,
}

/// Applies an update; `None` when the entry is missing or not at the expected version.
pub async fn update<E: Executor>(exec: &E, c: &Collection, id: &str, u: Update) -> Result<Option<Row>, Error> {
    let sql = render(
        UPDATE,
        &[("table", &c.table()), ("set", &Fragment::trailing_assignments(u.columns.iter().map(|(k, _)| k), 5))],
    );
    let mut stmt = Statement::new(sql).bind(id).bind(u.expected_version).bind(u.slug).bind(u.status);
    for (_, v) in u.columns {
        stmt = stmt.bind(v);
    }
    Ok(exec.run(stmt).await?.rows.into_iter().next())
}

/// Stores `data` as a new draft revision and points the entry at it, only if the entry is still
/// at `version`. `None` when it is not (the caller re-reads to tell 404 from 409).
pub async fn save_draft<E: Executor>(
    exec: &E,
    c: &Collection,
    id: &str,
    version: i64,
    data: &serde_json::Value,
) -> Result<Option<Row>, Error> {
    let table = c.table();
    let revision_id = ids::new_id();
    let guard = Guard::new(render(GUARD_VERSION, &[("table", &table)])).bind(id).bind(version);
    let stmts = vec![
        Statement::new(INSERT_REVISION)
            .bind(revision_id.as_str())
            .bind(c.slug.as_str())
            .bind(id)
            .bind(data.to_string()),
        Statement::new(render(SET_DRAFT_REVISION, &[("table", &table)])).bind(id).bind(revision_id.as_str()),
    ];
    match guarded_batch(exec, guard, stmts).await {
        Ok(outcomes) => Ok(outcomes.into_iter().nth(1).and_then(|o| o.rows.into_iter().next())),
        Err(Error::Stale) => Ok(None),
        Err(e) => Err(e),
    }
}

/// A stored revision.
#[derive(Debug, Clone, Deserialize)]
pub struct Revision {
    pub id: String,
    pub collection: String,
    pub entry_id: String,
    pub data: String,
}

pub async fn get_revision<E: Executor>(exec: &E, id: &str) -> Result<Option<Revision>, Error> {
    exec.query_first(Statement::new(SELECT_REVISION).bind(id)).await
}

/// Publishes: sets the given live columns (from the draft revision, if any), moves the draft
/// revision to live and marks the entry published, only if it is still at `version`.
pub async fn publish<E: Executor>(
    exec: &E,
    c: &Collection,
    id: &str,
    version: i64,
    slug: Option<String>,
    columns: Vec<(Ident, Value)>,
) -> Result<Option<Row>, Error> {
    let sql = render(
        PUBLISH,
        &[("table", &c.table()), ("set", &Fragment::trailing_assignments(columns.iter().map(|(k, _)| k), 4))],
    );
    let mut stmt = Statement::new(sql).bind(id).bind(version).bind(slug);
    for (_, v) in columns {
        stmt = stmt.bind(v);
    }
    Ok(exec.run(stmt).await?.rows.into_iter().next())
}

/// A single-row state change without parameters beyond the id.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Transition {
    Unpublish,
    Trash,
    Restore,
}

/// Applies a transition; `None` when the entry is missing or already in the target state.
pub async fn transition<E: Executor>(exec: &E, c: &Collection, id: &str, t: Transition) -> Result<Option<Row>, Error> {
    let template = match t {
        Transition::Unpublish => UNPUBLISH,
        Transition::Trash => TRASH,
        Transition::Restore => RESTORE,
    };
    let sql = render(template, &[("table", &c.table())]);
    Ok(exec.run(Statement::new(sql).bind(id)).await?.rows.into_iter().next())
}

/// Deletes an entry for good; false when it did not exist.
pub async fn delete<E: Executor>(exec: &E, c: &Collection, id: &str) -> Result<bool, Error> {
    let sql = render(DELETE, &[("table", &c.table())]);
    Ok(exec.execute(Statement::new(sql).bind(id)).await? > 0)
}
