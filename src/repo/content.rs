//! Content entries in `ec_<slug>`: create, read, list, update, draft revisions, publish,
//! trash, restore and permanent delete. Every write bumps `version` and `updated_at`.

use serde::Deserialize;

use crate::exec::guard::{guarded_batch, Guard};
use crate::exec::{Error, Executor, Row, Statement, Value};
use crate::ids;
use crate::model::collection::Collection;
use crate::model::ident::Ident;
use crate::sql::{render, Fragment};

use super::schedule;

const INSERT: &str = include_str!("../sql/content/insert.sql");
const SELECT_ONE: &str = include_str!("../sql/content/select_one.sql");
const ID_BY_SLUG: &str = include_str!("../sql/content/id_by_slug.sql");
const LIST: &str = include_str!("../sql/content/list.sql");
const UPDATE: &str = include_str!("../sql/content/update.sql");
const PUBLISH: &str = include_str!("../sql/content/publish.sql");
const UNPUBLISH: &str = include_str!("../sql/content/unpublish.sql");
const TRASH: &str = include_str!("../sql/content/trash.sql");
const RESTORE: &str = include_str!("../sql/content/restore.sql");
const DISCARD_DRAFT: &str = include_str!("../sql/content/discard_draft.sql");
const DELETE: &str = include_str!("../sql/content/delete.sql");
const GUARD_VERSION: &str = include_str!("../sql/content/guard_version.sql");
const INSERT_REVISION: &str = include_str!("../sql/content/insert_revision.sql");
const SET_DRAFT_REVISION: &str = include_str!("../sql/content/set_draft_revision.sql");
const SELECT_REVISION: &str = include_str!("../sql/content/select_revision.sql");
const PRUNE_REVISIONS: &str = include_str!("../sql/content/prune_revisions.sql");
const DELETE_REVISIONS: &str = include_str!("../sql/content/delete_revisions.sql");
const LIST_REVISIONS: &str = include_str!("../sql/content/list_revisions.sql");
const COUNT_REVISIONS: &str = include_str!("../sql/content/count_revisions.sql");
const LIST_TRANSLATIONS: &str = include_str!("../sql/content/list_translations.sql");

/// A new entry; `columns` are the field columns being set.
#[derive(Debug, Clone)]
pub struct NewEntry {
    /// The slug given; `None` to make one from [`NewEntry::slug_base`].
    pub slug: Option<String>,
    /// What a slug is made from when none is given (a slugified title): the base itself when
    /// its (slug, locale) is free, else `base-N`; `None` with no slug given: no slug.
    pub slug_base: Option<String>,
    pub status: &'static str,
    pub locale: String,
    pub translation_group: Option<String>,
    /// Who creates it (a token id): the entry's author.
    pub author: Option<String>,
    pub columns: Vec<(Ident, Value)>,
}

/// How many times a create whose made slug was taken tries the next suffix: the slug is chosen
/// by the inserting statement itself, so only a suffix of more than 18 digits taken in the
/// locale (which the choice does not look at) can make it collide.
pub const SLUG_ATTEMPTS: u32 = 3;

/// Inserts an entry and returns the stored row. `attempt` (from 0) offsets a made slug's
/// suffix: the retry of a create whose made slug was taken takes the next one.
pub async fn insert<E: Executor>(exec: &E, c: &Collection, new: &NewEntry, attempt: u32) -> Result<Row, Error> {
    let id = ids::new_id();
    let sql = render(
        INSERT,
        &[
            ("table", &Fragment::content_table(&c.slug)),
            ("columns", &Fragment::trailing_columns(new.columns.iter().map(|(k, _)| k))),
            ("placeholders", &Fragment::trailing_placeholders(9, new.columns.len())),
        ],
    );
    let group = new.translation_group.clone().unwrap_or_else(|| id.clone());
    let mut stmt = Statement::new(sql)
        .bind(id)
        .bind(new.slug.clone())
        .bind(new.status)
        .bind(new.locale.as_str())
        .bind(group)
        .bind(new.author.clone())
        .bind(new.slug_base.clone())
        .bind(i64::from(attempt));
    for (_, v) in &new.columns {
        stmt = stmt.bind(v.clone());
    }
    one_row(exec.run(stmt).await?.rows)
}

fn one_row(rows: Vec<Row>) -> Result<Row, Error> {
    rows.into_iter().next().ok_or_else(|| Error::Backend("RETURNING produced no row".into()))
}

/// One entry by id (trashed entries included).
pub async fn get<E: Executor>(exec: &E, c: &Collection, id: &str) -> Result<Option<Row>, Error> {
    let sql = render(SELECT_ONE, &[("table", &Fragment::content_table(&c.slug))]);
    Ok(exec.run(Statement::new(sql).bind(id)).await?.rows.into_iter().next())
}

/// The id of the entry holding `(slug, locale)` (trashed entries included), if any.
pub async fn id_by_slug<E: Executor>(
    exec: &E,
    c: &Collection,
    slug: &str,
    locale: &str,
) -> Result<Option<String>, Error> {
    let sql = render(ID_BY_SLUG, &[("table", &Fragment::content_table(&c.slug))]);
    Ok(exec.query_first::<IdRow>(Statement::new(sql).bind(slug).bind(locale)).await?.map(|r| r.id))
}

#[derive(Deserialize)]
struct IdRow {
    id: String,
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

/// Field bytes a list page holds at most before it stops (plus the one row that crosses it,
/// at most D1's 2 MB): well within what D1 returns from one query.
pub const LIST_PAGE_BYTES: i64 = 4_000_000;

/// A page of entries.
#[derive(Debug, Clone)]
pub struct Page {
    /// Up to `limit + 1` rows (the extra one says another page exists).
    pub rows: Vec<Row>,
    /// The page stopped early at [`LIST_PAGE_BYTES`]: more rows may follow its last one.
    pub cut_by_size: bool,
}

/// Non-trashed entries, newest first: up to `limit + 1` rows, fewer when they reach
/// [`LIST_PAGE_BYTES`].
pub async fn list<E: Executor>(exec: &E, c: &Collection, q: &ListQuery) -> Result<Page, Error> {
    let row_bytes = Fragment::byte_sum(c.fields.iter().map(|f| &f.slug));
    let sql = render(LIST, &[("table", &Fragment::content_table(&c.slug)), ("row_bytes", &row_bytes)]);
    let (after_at, after_id) = q.after.clone().unzip();
    let stmt = Statement::new(sql)
        .bind(q.status.clone())
        .bind(q.locale.clone())
        .bind(after_at)
        .bind(after_id)
        .bind(i64::from(q.limit) + 1)
        .bind(LIST_PAGE_BYTES);
    let rows = exec.run(stmt).await?.rows;
    let through = rows.last().and_then(|r| r.get("__bytes_through")).and_then(serde_json::Value::as_i64);
    let cut_by_size = rows.len() <= q.limit as usize && through.is_some_and(|b| b >= LIST_PAGE_BYTES);
    Ok(Page { rows, cut_by_size })
}

/// A change to an entry's live columns.
#[derive(Debug, Clone, Default)]
pub struct Update {
    /// Only apply when the entry is still at this version (the `_rev` the client saw).
    pub expected_version: Option<i64>,
    pub slug: Option<String>,
    pub status: Option<&'static str>,
    /// Only apply when the entry was authored by this principal (see [`Principal::only_own`]).
    ///
    /// [`Principal::only_own`]: crate::model::auth::Principal::only_own
    pub only_own: Option<String>,
    pub columns: Vec<(Ident, Value)>,
}

/// Applies an update; `None` when the entry is missing, not at the expected version or not the
/// principal's to change.
pub async fn update<E: Executor>(exec: &E, c: &Collection, id: &str, u: Update) -> Result<Option<Row>, Error> {
    Ok(exec.run(update_statement(c, id, u)).await?.rows.into_iter().next())
}

/// The statement of an [`update`] (it returns the row).
pub fn update_statement(c: &Collection, id: &str, u: Update) -> Statement {
    let sql = render(
        UPDATE,
        &[
            ("table", &Fragment::content_table(&c.slug)),
            ("set", &Fragment::trailing_assignments(u.columns.iter().map(|(k, _)| k), 6)),
        ],
    );
    let mut stmt = Statement::new(sql).bind(id).bind(u.expected_version).bind(u.slug).bind(u.status).bind(u.only_own);
    for (_, v) in u.columns {
        stmt = stmt.bind(v);
    }
    stmt
}

/// The fewest revisions an entry may be configured to keep
/// (`MEDIA_USAGE_MAX_REVISIONS_PER_ENTRY`): its live and its draft revision.
pub const MIN_MAX_REVISIONS: u32 = 2;

/// Stores `data` as a new draft revision based on the version this save writes
/// (`version + 1`) and points the entry at it, only if the entry is still at `version` (and,
/// with `only_own`, authored by that principal); then
/// prunes the entry's revisions to `max_revisions` (its live and draft ones always kept).
/// `None` when the entry moved on (the caller re-reads to tell 404 from 409).
pub async fn save_draft<E: Executor>(
    exec: &E,
    c: &Collection,
    id: &str,
    version: i64,
    only_own: Option<&str>,
    data: &serde_json::Value,
    max_revisions: u32,
) -> Result<Option<Row>, Error> {
    let table = Fragment::content_table(&c.slug);
    let revision_id = ids::new_id();
    let guard = Guard::new(render(GUARD_VERSION, &[("table", &table)])).bind(id).bind(version).bind(only_own);
    let insert = Statement::new(INSERT_REVISION)
        .bind(revision_id.as_str())
        .bind(c.slug.as_str())
        .bind(id)
        .bind(data.to_string())
        .bind(version + 1);
    let stmts = draft_statements(c, id, insert, &revision_id, max_revisions);
    match guarded_batch(exec, guard, stmts).await {
        Ok(outcomes) => Ok(outcomes.into_iter().nth(1).and_then(|o| o.rows.into_iter().next())),
        Err(Error::Stale) => Ok(None),
        Err(e) => Err(e),
    }
}

/// What a draft save writes after inserting its revision (`insert`, of id `revision_id`): the
/// entry pointed at it (a new version), and its revisions pruned to `max_revisions` (its live
/// and draft ones always kept). The entry's row is the second statement's.
pub fn draft_statements(
    c: &Collection,
    id: &str,
    insert: Statement,
    revision_id: &str,
    max_revisions: u32,
) -> Vec<Statement> {
    vec![insert, set_draft_statement(c, id, revision_id), prune_statement(c, id, revision_id, max_revisions)]
}

/// Points the entry `id` at the draft revision `revision_id` (a new version); returns the row.
pub fn set_draft_statement(c: &Collection, id: &str, revision_id: &str) -> Statement {
    let table = Fragment::content_table(&c.slug);
    Statement::new(render(SET_DRAFT_REVISION, &[("table", &table)])).bind(id).bind(revision_id)
}

/// Prunes the entry `id`'s revisions to `max_revisions`: its live and draft ones, and `keep`
/// (the one just written), always kept.
fn prune_statement(c: &Collection, id: &str, keep: &str, max_revisions: u32) -> Statement {
    let table = Fragment::content_table(&c.slug);
    Statement::new(render(PRUNE_REVISIONS, &[("table", &table)]))
        .bind(c.slug.as_str())
        .bind(id)
        .bind(keep)
        .bind(revisions_besides(max_revisions))
}

/// How many revisions an entry keeps besides its live and draft ones, at `max_revisions`.
pub fn revisions_besides(max_revisions: u32) -> i64 {
    i64::from(max_revisions.max(MIN_MAX_REVISIONS) - MIN_MAX_REVISIONS)
}

/// A stored revision.
#[derive(Debug, Clone, Deserialize)]
pub struct Revision {
    pub id: String,
    pub collection: String,
    pub entry_id: String,
    pub data: String,
    /// The live version the draft was saved over (`None` for revisions older than this field).
    pub base_version: Option<i64>,
}

impl Revision {
    /// A draft is stale when the live row was written after the draft's own save.
    pub fn is_stale(&self, live_version: i64) -> bool {
        self.base_version.is_some_and(|base| base < live_version)
    }
}

pub async fn get_revision<E: Executor>(exec: &E, id: &str) -> Result<Option<Revision>, Error> {
    exec.query_first(Statement::new(SELECT_REVISION).bind(id)).await
}

/// What a publish writes: the live columns from the draft revision (if any) and the draft's slug.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Publication {
    pub slug: Option<String>,
    pub columns: Vec<(Ident, Value)>,
}

/// A scheduled publish: the schedule it fires, and the tick's time (`None`: the database clock's).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Firing<'a> {
    pub scheduled_at: &'a str,
    pub now: Option<&'a str>,
}

/// The publish statement: sets the publication's live columns, moves the draft revision to live,
/// marks the entry published and ends its schedule, only if it is still at `version` (and, with
/// `only_own`, authored by that principal; and, for a scheduled publish, outside the trash, still
/// scheduled for exactly the time it fires, and that time has come). Returns the row.
pub fn publish_statement(
    c: &Collection,
    id: &str,
    version: i64,
    only_own: Option<&str>,
    firing: Option<Firing<'_>>,
    publication: Publication,
) -> Statement {
    let sql = render(
        PUBLISH,
        &[
            ("table", &Fragment::content_table(&c.slug)),
            ("set", &Fragment::trailing_assignments(publication.columns.iter().map(|(k, _)| k), 7)),
        ],
    );
    let mut stmt = Statement::new(sql)
        .bind(id)
        .bind(version)
        .bind(publication.slug)
        .bind(only_own)
        .bind(firing.map(|f| f.scheduled_at))
        .bind(firing.and_then(|f| f.now));
    for (_, v) in publication.columns {
        stmt = stmt.bind(v);
    }
    stmt
}

/// Publishes ([`publish_statement`]) at the request of a principal; `None` when the entry moved
/// on or is not the principal's to change.
pub async fn publish<E: Executor>(
    exec: &E,
    c: &Collection,
    id: &str,
    version: i64,
    only_own: Option<&str>,
    publication: Publication,
) -> Result<Option<Row>, Error> {
    let stmt = publish_statement(c, id, version, only_own, None, publication);
    Ok(exec.run(stmt).await?.rows.into_iter().next())
}

/// A single-row state change without parameters beyond the id.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Transition {
    Unpublish,
    Trash,
    Restore,
    /// Drops the draft revision of an entry outside the trash.
    DiscardDraft,
}

/// Applies a transition; `None` when the entry is missing, already in the target state or (with
/// `only_own`) not authored by that principal.
pub async fn transition<E: Executor>(
    exec: &E,
    c: &Collection,
    id: &str,
    t: Transition,
    only_own: Option<&str>,
) -> Result<Option<Row>, Error> {
    let template = match t {
        Transition::Unpublish => UNPUBLISH,
        Transition::Trash => TRASH,
        Transition::Restore => RESTORE,
        Transition::DiscardDraft => DISCARD_DRAFT,
    };
    let sql = render(template, &[("table", &Fragment::content_table(&c.slug))]);
    let stmt = Statement::new(sql).bind(id).bind(only_own);
    if t != Transition::Restore {
        return Ok(exec.run(stmt).await?.rows.into_iter().next());
    }
    // A restored entry's schedule is back in the schedule index (the schedule lane drops the
    // row of an entry it finds in the trash), in the same batch.
    let outcomes = exec.batch(vec![stmt, schedule::upsert(c, id)]).await?;
    Ok(outcomes.into_iter().next().and_then(|o| o.rows.into_iter().next()))
}

/// Deletes an entry and its revisions for good, atomically; false when it did not exist.
pub async fn delete<E: Executor>(exec: &E, c: &Collection, id: &str) -> Result<bool, Error> {
    let sql = render(DELETE, &[("table", &Fragment::content_table(&c.slug))]);
    let outcomes = exec
        .batch(vec![Statement::new(sql).bind(id), Statement::new(DELETE_REVISIONS).bind(c.slug.as_str()).bind(id)])
        .await?;
    Ok(outcomes.first().is_some_and(|o| o.changes > 0))
}

/// A revision as an entry's history lists it.
#[derive(Debug, Clone, Deserialize)]
pub struct HistoryRevision {
    /// Its place in insertion order (the rowid): the page's keyset.
    pub seq: i64,
    pub id: String,
    pub collection: String,
    pub entry_id: String,
    pub data: String,
    pub author_id: Option<String>,
    pub created_at: String,
    /// The revision data bytes of the page through this one.
    #[serde(rename = "__bytes_through")]
    pub bytes_through: i64,
}

/// Revision data bytes a page of an entry's history holds at most before it stops (plus the
/// one revision that crosses it).
pub const HISTORY_PAGE_BYTES: i64 = LIST_PAGE_BYTES;

/// A page of an entry's revisions, newest first: up to `limit + 1` after the revision `after`
/// (its `seq`), fewer when they reach [`HISTORY_PAGE_BYTES`].
pub async fn revisions_page<E: Executor>(
    exec: &E,
    c: &Collection,
    entry_id: &str,
    after: Option<i64>,
    limit: u32,
) -> Result<Vec<HistoryRevision>, Error> {
    let stmt = Statement::new(LIST_REVISIONS)
        .bind(c.slug.as_str())
        .bind(entry_id)
        .bind(after)
        .bind(i64::from(limit) + 1)
        .bind(HISTORY_PAGE_BYTES);
    exec.query(stmt).await
}

/// How many revisions an entry has.
pub async fn count_revisions<E: Executor>(exec: &E, c: &Collection, entry_id: &str) -> Result<i64, Error> {
    #[derive(Deserialize)]
    struct Count {
        n: i64,
    }
    let stmt = Statement::new(COUNT_REVISIONS).bind(c.slug.as_str()).bind(entry_id);
    Ok(exec.query_first::<Count>(stmt).await?.map_or(0, |r| r.n))
}

/// An entry of a translation group, as the group's list shows it.
#[derive(Debug, Clone, Deserialize)]
pub struct Translation {
    pub id: String,
    pub locale: Option<String>,
    pub slug: Option<String>,
    pub status: String,
    pub updated_at: String,
}

/// A page of the translation group `group`'s entries outside the trash, by locale then id: up
/// to `limit + 1` after `(locale, id)`.
pub async fn translations_page<E: Executor>(
    exec: &E,
    c: &Collection,
    group: &str,
    after: Option<(String, String)>,
    limit: u32,
) -> Result<Vec<Translation>, Error> {
    let sql = render(LIST_TRANSLATIONS, &[("table", &Fragment::content_table(&c.slug))]);
    let (after_locale, after_id) = after.unzip();
    let stmt = Statement::new(sql).bind(group).bind(after_locale).bind(after_id).bind(i64::from(limit) + 1);
    exec.query(stmt).await
}
