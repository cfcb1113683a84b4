//! The media library's metadata rows (`media`) — their writes guarded by the safe delete's rule
//! included ([`trash_if_unused`], [`delete_if_unused`], [`bulk_trash`], [`purge`]) — and the
//! storage sweep's cursor. Stored objects are reached through [`crate::storage`], never from here.

use serde::Deserialize;

use super::{lease, uses};
use crate::exec::guard::{guarded_batch, Guard};
use crate::exec::{Error, Executor, Outcome, Statement};
use crate::ids;
use crate::sql::Fragment;

const INSERT: &str = include_str!("../sql/media/insert.sql");
const SELECT_ONE: &str = include_str!("../sql/media/select_one.sql");
const LIST: &str = include_str!("../sql/media/list.sql");
const DELETE: &str = include_str!("../sql/media/delete.sql");
const DELETE_UNUSED: &str = include_str!("../sql/media/delete_unused.sql");
const SELECT_BY_HASH: &str = include_str!("../sql/media/select_by_hash.sql");
const ID_BY_STORAGE_KEY: &str = include_str!("../sql/media/id_by_storage_key.sql");
const REFERENCED_KEYS: &str = include_str!("../sql/media/referenced_keys.sql");
const KEY_SERVED: &str = include_str!("../sql/media/key_served.sql");
const TRASH: &str = include_str!("../sql/media/trash.sql");
const UPDATE_METADATA: &str = include_str!("../sql/media/update_metadata.sql");
const RESTORE: &str = include_str!("../sql/media/restore.sql");
const BULK_TRASH: &str = include_str!("../sql/media/bulk_trash.sql");
const BULK_STATUS: &str = include_str!("../sql/media/bulk_status.sql");
const PURGE_DUE: &str = include_str!("../sql/media/purge_due.sql");
const PURGE: &str = include_str!("../sql/media/purge.sql");
const UNUSED_AND_PROVEN: &str = include_str!("../sql/media/unused_and_proven.sql");
const COVERAGE_PROVEN: &str = include_str!("../sql/media/coverage_proven.sql");
const PURGE_STATE: &str = include_str!("../sql/media/purge_state.sql");
const SET_PURGE_CURSOR: &str = include_str!("../sql/media/set_purge_cursor.sql");
const SWEEP_CURSOR: &str = include_str!("../sql/media/sweep_cursor.sql");
const SET_SWEEP_CURSOR: &str = include_str!("../sql/media/set_sweep_cursor.sql");
const ENQUEUE_LINKING: &str = include_str!("../sql/media/enqueue_linking.sql");
const STALE_WHILE_QUEUED: &str = include_str!("../sql/media/stale_while_queued.sql");
const LOOKUP: &str = include_str!("../sql/media/lookup.sql");
const FORGET_VERSIONS: &str = include_str!("../sql/media/forget_versions.sql");
const GUARD_MEDIA_UNUSED: &str = include_str!("../sql/usage/guard_media_unused.sql");

/// `template` with the safe delete's rule (`{unused_and_proven}`: the item `media_id` is not in
/// use and coverage proves it, under the deployed reference rules bound as parameter `rules`)
/// filled in: the single delete's guard, the permanent delete, the bulk trash and the purge embed
/// the one text.
pub fn render_unused_and_proven(template: &'static str, media_id: &Fragment, rules: usize) -> String {
    let rule = Fragment::static_sql(UNUSED_AND_PROVEN);
    let coverage = coverage_proven();
    uses::render(
        template,
        media_id,
        &[("unused_and_proven", &rule), ("coverage_proven", &coverage), ("rules", &Fragment::parameter(rules))],
    )
}

/// The fragment that coverage proves the index complete (`{coverage_proven}`, whose `{rules}` the
/// embedding statement fills in).
pub fn coverage_proven() -> Fragment {
    Fragment::static_sql(COVERAGE_PROVEN)
}

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
    /// When it was moved to the trash (`None`: in the library).
    #[serde(default)]
    pub deleted_at: Option<String>,
    /// The token that registered or uploaded it (written once, on insert); `None` for items
    /// registered before authors were recorded: nobody's own.
    #[serde(default)]
    pub author_id: Option<String>,
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
    /// The token registering or uploading it (its id).
    pub author_id: Option<String>,
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
        .bind(new.author_id)
}

pub async fn get<E: Executor>(exec: &E, id: &str) -> Result<Option<Media>, Error> {
    exec.query_first(Statement::new(SELECT_ONE).bind(id)).await
}

/// Which part of the library a list reads.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Shelf {
    Library,
    Trash,
}

/// What a list keeps of the rows it examines.
#[derive(Debug, Clone, Default)]
pub struct ListFilter {
    /// Case-insensitive parts of the file name, all of which it must contain (none: any name).
    pub name_parts: Vec<String>,
    /// The MIME types to keep, lower case: each a whole type (`application/pdf`), or a prefix
    /// ending in `/` (`image/`); `None`: any type.
    pub mime_types: Option<Vec<String>>,
    /// `Some(true)`: only items in use; `Some(false)`: only items not in use.
    pub used: Option<bool>,
    /// Count the entries using each item, up to this many.
    pub count_usage_up_to: Option<u32>,
}

/// A row a list examined: the media, whether it passes the filter, and (when asked) how many
/// entries use it (up to the cap).
#[derive(Debug, Clone, Deserialize)]
pub struct Listed {
    #[serde(flatten)]
    pub media: Media,
    pub matches: i64,
    pub usage_count: Option<i64>,
}

/// Up to `window` rows of `shelf`, newest first after `(created_at, id)`, each marked with whether
/// it passes `filter` (one statement; what it reads is bounded by `window`).
pub async fn list<E: Executor>(
    exec: &E,
    shelf: Shelf,
    after: Option<(String, String)>,
    window: u32,
    filter: &ListFilter,
) -> Result<Vec<Listed>, Error> {
    let (at, id) = after.unzip();
    let json = |v: &Vec<String>| serde_json::to_string(v).map_err(|e| Error::Decode(e.to_string()));
    let name_parts = (!filter.name_parts.is_empty()).then(|| json(&filter.name_parts)).transpose()?;
    let mime_types = filter.mime_types.as_ref().map(json).transpose()?;
    let stmt = Statement::new(uses::render(LIST, &Fragment::row_column("e", "id"), &[]))
        .bind(at)
        .bind(id)
        .bind(i64::from(window))
        .bind(i64::from(shelf == Shelf::Trash))
        .bind(name_parts)
        .bind(filter.used.map(|u| if u { "used" } else { "unused" }))
        .bind(i64::from(filter.count_usage_up_to.is_some()))
        .bind(i64::from(filter.count_usage_up_to.unwrap_or(0)))
        .bind(mime_types);
    exec.query(stmt).await
}

/// Moves the media to the trash (its row and object kept) whatever uses it (an admin's forced
/// delete); an item missing or already in the trash is left as it is.
pub async fn trash<E: Executor>(exec: &E, id: &str) -> Result<(), Error> {
    exec.execute(trash_statement(id, None)).await.map(|_| ())
}

/// The statement that moves the media to the trash, for a guarded batch: only if it is
/// `only_own`'s (below editor: the caller's own items; `None`: any item).
pub fn trash_statement(id: &str, only_own: Option<&str>) -> Statement {
    Statement::new(TRASH).bind(id).bind(only_own)
}

/// How a safe move to the trash ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SafeTrash {
    /// Moved to the trash.
    Trashed,
    /// No such media row, it is in the trash already, or it is not the caller's to delete.
    Missing,
    /// A current occurrence references it, or coverage cannot prove it unused.
    Refused,
}

/// Moves a media item to the trash only if, at that instant, no current occurrence references it
/// and every collection's coverage is complete under the deployed reference rules (`rules_id`):
/// the check and the move are one guarded batch. The move takes only an item of `only_own`'s
/// (below editor: the caller's own; `None`: any), else it is [`SafeTrash::Missing`].
pub async fn trash_if_unused<E: Executor>(
    exec: &E,
    media_id: &str,
    rules_id: &str,
    only_own: Option<&str>,
) -> Result<SafeTrash, Error> {
    // ?1 is the guard's own row; the rule reads the item at ?2 and the rules at ?3.
    let sql = render_unused_and_proven(GUARD_MEDIA_UNUSED, &Fragment::parameter(2), 3);
    let guard = Guard::new(sql).bind(media_id).bind(rules_id);
    match guarded_batch(exec, guard, vec![trash_statement(media_id, only_own)]).await {
        Ok(outcomes) if outcomes.first().is_some_and(|o| o.changes > 0) => Ok(SafeTrash::Trashed),
        Ok(_) => Ok(SafeTrash::Missing),
        Err(Error::Stale) => Ok(SafeTrash::Refused),
        Err(e) => Err(e),
    }
}

/// What a metadata update sets (`None`: kept as it is).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct MetadataUpdate {
    pub alt: Option<String>,
    pub caption: Option<String>,
    pub width: Option<i64>,
    pub height: Option<i64>,
}

/// Updates the media's metadata, only if it is `only_own`'s (below editor: the caller's own
/// items; `None`: any item), in one statement that carries that condition: the row as it is now,
/// `None` when there is no such item or it is someone else's (nothing changed).
pub async fn update_metadata<E: Executor>(
    exec: &E,
    id: &str,
    update: MetadataUpdate,
    only_own: Option<&str>,
) -> Result<Option<Media>, Error> {
    let stmt = Statement::new(UPDATE_METADATA)
        .bind(id)
        .bind(update.alt)
        .bind(update.caption)
        .bind(update.width)
        .bind(update.height)
        .bind(only_own);
    exec.query_first(stmt).await
}

/// Brings the media back from the trash: the row restored; `None` when it is missing or not in
/// the trash (then nothing changes).
pub async fn restore<E: Executor>(exec: &E, id: &str) -> Result<Option<Media>, Error> {
    exec.query_first(Statement::new(RESTORE).bind(id)).await
}

/// Moves to the trash each of `ids` that nothing uses while coverage proves it (one statement,
/// under the deployed reference rules `rules_id`); the ids moved.
pub async fn bulk_trash<E: Executor>(exec: &E, ids: &[String], rules_id: &str) -> Result<Vec<String>, Error> {
    let json = serde_json::to_string(ids).map_err(|e| Error::Decode(e.to_string()))?;
    let sql = render_unused_and_proven(BULK_TRASH, &Fragment::row_column("media", "id"), 2);
    let rows: Vec<IdRow> = exec.query(Statement::new(sql).bind(json).bind(rules_id)).await?;
    Ok(rows.into_iter().map(|r| r.id).collect())
}

/// What a bulk delete answers for an id it did not move.
#[derive(Debug, Clone, Deserialize)]
pub struct BulkStatus {
    pub id: String,
    pub found: i64,
    pub trashed: i64,
    /// A JSON array of `[collection, content id, slug]`.
    pub entries: String,
    pub unindexed_use: i64,
}

/// For each of `ids`: whether it exists, whether it is in the trash, and up to `entries` of the
/// entries that use it (one statement).
pub async fn bulk_status<E: Executor>(exec: &E, ids: &[String], entries: u32) -> Result<Vec<BulkStatus>, Error> {
    let json = serde_json::to_string(ids).map_err(|e| Error::Decode(e.to_string()))?;
    let sql = uses::render(BULK_STATUS, &Fragment::row_column("j", "value"), &[]);
    exec.query(Statement::new(sql).bind(json).bind(i64::from(entries))).await
}

/// A media item in the trash, as the purge orders them.
#[derive(Debug, Clone, Deserialize, PartialEq)]
pub struct Trashed {
    pub id: String,
    pub deleted_at: String,
}

/// Up to `limit` media trashed more than `days` ago (by the database clock), oldest first, after
/// `after`.
pub async fn purge_due<E: Executor>(
    exec: &E,
    days: f64,
    after: Option<&Trashed>,
    limit: u32,
) -> Result<Vec<Trashed>, Error> {
    let stmt = Statement::new(PURGE_DUE)
        .bind(days)
        .bind(i64::from(limit))
        .bind(after.map(|t| t.deleted_at.clone()))
        .bind(after.map(|t| t.id.clone()));
    exec.query(stmt).await
}

/// A row deleted for good (purged, or deleted permanently): its storage key, and whether this
/// worker stored its object.
#[derive(Debug, Clone, Deserialize)]
pub struct Purged {
    pub id: String,
    pub storage_key: String,
    pub content_hash: Option<String>,
}

impl Purged {
    /// Whether this worker stored the row's object (an upload: `content_hash` set), rather than a
    /// client naming a key by JSON.
    pub fn uploaded(&self) -> bool {
        self.content_hash.is_some()
    }
}

/// Deletes those of `ids` in the trash for more than `days` and used by nothing (under the rules
/// `rules_id`, coverage complete), in one statement; the rows deleted.
pub async fn purge<E: Executor>(exec: &E, ids: &[String], days: f64, rules_id: &str) -> Result<Vec<Purged>, Error> {
    exec.query(purge_statement(ids, days, rules_id)?).await
}

fn purge_statement(ids: &[String], days: f64, rules_id: &str) -> Result<Statement, Error> {
    let json = serde_json::to_string(ids).map_err(|e| Error::Decode(e.to_string()))?;
    let sql = render_unused_and_proven(PURGE, &Fragment::row_column("media", "id"), 3);
    Ok(Statement::new(sql).bind(json).bind(days).bind(rules_id))
}

/// Where the purge stands at the start of a tick ([`purge_state`]).
#[derive(Debug, Clone, PartialEq)]
pub struct PurgeState {
    /// The last trashed item the pass in progress examined (`None`: the pass starts at the
    /// oldest).
    pub after: Option<Trashed>,
    /// A pass may run now: one is in progress, or the rest after the last one is over.
    pub due: bool,
    /// The same of the versions' purge: the last version its pass examined, and whether a pass
    /// may run now.
    pub versions_after: Option<super::versions::Due>,
    pub versions_due: bool,
    /// No coverage row says its collection is incomplete (under the rules asked about): without
    /// it, no item can be purged. Looser than the safe delete's rule, which the purge embeds.
    pub ready: bool,
}

/// Where the purge stands, whether a pass is due and whether coverage looks complete under the
/// rules `rules_id` (one statement: one row, and the coverage rows, one per collection).
pub async fn purge_state<E: Executor>(exec: &E, rules_id: &str) -> Result<PurgeState, Error> {
    #[derive(Deserialize)]
    struct Row {
        cursor_deleted_at: Option<String>,
        cursor_id: Option<String>,
        due: i64,
        version_cursor_at: Option<String>,
        version_cursor_key: Option<String>,
        versions_due: i64,
        ready: i64,
    }
    let row: Option<Row> = exec.query_first(Statement::new(PURGE_STATE).bind(rules_id)).await?;
    let row = row.ok_or_else(|| Error::Decode("the purge's state row is missing".into()))?;
    let after = match (row.cursor_deleted_at, row.cursor_id) {
        (Some(deleted_at), Some(id)) => Some(Trashed { id, deleted_at }),
        _ => None,
    };
    let versions_after = match (row.version_cursor_at, row.version_cursor_key) {
        (Some(replaced_at), Some(storage_key)) => Some(super::versions::Due { storage_key, replaced_at }),
        _ => None,
    };
    Ok(PurgeState {
        after,
        due: row.due != 0,
        versions_after,
        versions_due: row.versions_due != 0,
        ready: row.ready != 0,
    })
}

/// Purges the due items `ids` as [`purge`] does and, in the same atomic batch, records where the
/// pass stands: after `last` (the last item examined), or, with `None`, that the pass ended and
/// the next starts no earlier than `rest_s` seconds from now; the versions of the items purged go
/// too. The rows deleted, and the versions'. `ids` empty: only the record.
pub async fn purge_and_advance<E: Executor>(
    exec: &E,
    ids: &[String],
    days: f64,
    rules_id: &str,
    last: Option<&Trashed>,
    rest_s: f64,
) -> Result<(Vec<Purged>, Vec<Purged>), Error> {
    let advance = Statement::new(SET_PURGE_CURSOR)
        .bind(last.map(|t| t.deleted_at.clone()))
        .bind(last.map(|t| t.id.clone()))
        .bind(rest_s);
    if ids.is_empty() {
        exec.execute(advance).await?;
        return Ok((Vec::new(), Vec::new()));
    }
    let outcomes =
        exec.batch(vec![purge_statement(ids, days, rules_id)?, forget_versions(ids_json(ids)?), advance]).await?;
    let purged: Vec<Purged> = outcomes.first().map_or(Ok(Vec::new()), |o| o.decode())?;
    let versions: Vec<Purged> = outcomes.get(1).map_or(Ok(Vec::new()), |o| o.decode())?;
    Ok((purged, versions))
}

/// Deletes the metadata row and its versions whatever uses it (an admin's forced delete): the rows
/// deleted, the item's first; `None` when it did not exist. In the same atomic batch, the entries whose file URLs named it are queued again, so that
/// a later registration under its storage key finds them.
pub async fn delete<E: Executor>(exec: &E, id: &str) -> Result<Option<Vec<Purged>>, Error> {
    let ids = ids_json(&[id.to_owned()])?;
    let outcomes = exec
        .batch(vec![
            requeue_linking(None, Some(id)),
            Statement::new(DELETE).bind(id),
            forget_versions(ids),
            stale_while_queued(),
        ])
        .await?;
    with_versions(outcomes.get(1), outcomes.get(2))
}

/// The rows a batch deleted for good: the media row (`row`'s first), then its versions
/// (`versions`'); `None` when no media row was deleted.
fn with_versions(row: Option<&Outcome>, versions: Option<&Outcome>) -> Result<Option<Vec<Purged>>, Error> {
    let Some(first) = row.map(Outcome::first::<Purged>).transpose()?.flatten() else { return Ok(None) };
    let mut all = vec![first];
    all.extend(versions.map(Outcome::decode::<Purged>).transpose()?.unwrap_or_default());
    Ok(Some(all))
}

fn ids_json(ids: &[String]) -> Result<String, Error> {
    serde_json::to_string(ids).map_err(|e| Error::Decode(e.to_string()))
}

/// Deletes the versions of those of the items `ids_json` (a JSON array) whose row the statement
/// before deleted, in the same batch.
fn forget_versions(ids_json: String) -> Statement {
    Statement::new(FORGET_VERSIONS).bind(ids_json)
}

/// Deletes the metadata row only if nothing uses it and coverage proves it (under the rules
/// `rules_id`), in the trash or not: the rule and the delete are one statement, and the item's
/// versions go in the same batch (the rows deleted, the item's first). `None` when it was
/// refused or did not exist. No entry's file URL names an item the rule passes (it would be a
/// current occurrence), so there is nothing to queue again.
pub async fn delete_if_unused<E: Executor>(exec: &E, id: &str, rules_id: &str) -> Result<Option<Vec<Purged>>, Error> {
    let sql = render_unused_and_proven(DELETE_UNUSED, &Fragment::parameter(1), 2);
    let ids = ids_json(&[id.to_owned()])?;
    let outcomes = exec.batch(vec![Statement::new(sql).bind(id).bind(rules_id), forget_versions(ids)]).await?;
    with_versions(outcomes.first(), outcomes.get(1))
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

/// Which of `keys` an uploaded media row (in the trash or not) names, one statement: the objects
/// the storage sweep keeps. A JSON registration's key is not among them.
pub async fn referenced_keys<E: Executor>(exec: &E, keys: &[String]) -> Result<Vec<String>, Error> {
    let json = serde_json::to_string(keys).map_err(|e| Error::Decode(e.to_string()))?;
    let rows: Vec<KeyRow> = exec.query(Statement::new(REFERENCED_KEYS).bind(json)).await?;
    Ok(rows.into_iter().map(|r| r.storage_key).collect())
}

/// Whether the file route serves the object under `key`: an uploaded row outside the trash names
/// it (one statement, from the unique index on storage keys).
pub async fn key_served<E: Executor>(exec: &E, key: &str) -> Result<bool, Error> {
    #[derive(Deserialize)]
    struct Served {
        served: i64,
    }
    let row: Option<Served> = exec.query_first(Statement::new(KEY_SERVED).bind(key)).await?;
    Ok(row.is_some_and(|r| r.served != 0))
}

/// Where the storage sweep stands.
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
pub struct SweepState {
    /// The listing cursor of the pass in progress (`None`: no pass is in progress).
    pub cursor: Option<String>,
    /// When the next pass may start, in milliseconds on the object store's clock (`None`: at
    /// once).
    pub next_pass_ms: Option<f64>,
}

/// Where the storage sweep stands (one statement of one row).
pub async fn sweep_cursor<E: Executor>(exec: &E) -> Result<SweepState, Error> {
    Ok(exec.query_first::<SweepState>(Statement::new(SWEEP_CURSOR)).await?.unwrap_or_default())
}

/// Records the listing cursor of the pass in progress, or (`cursor` `None`) that the pass ended
/// and the next starts no earlier than `next_pass_ms`.
pub async fn set_sweep_cursor<E: Executor>(
    exec: &E,
    cursor: Option<&str>,
    next_pass_ms: Option<f64>,
) -> Result<(), Error> {
    exec.execute(Statement::new(SET_SWEEP_CURSOR).bind(cursor).bind(next_pass_ms)).await.map(|_| ())
}

/// How many bound JSON arrays of each kind (ids, storage keys) a lookup takes.
pub const LOOKUP_ARRAYS: usize = 2;

/// The media items named by `ids` (JSON arrays of ids) and `keys` (JSON arrays of storage keys),
/// in one statement, as `(id, storage_key, mime_type, version)`: what candidate strings of content
/// refer to. A key may name an item's earlier file (`version`: its type is the version's; such a
/// row names the item by that key only).
pub async fn lookup<E: Executor>(
    exec: &E,
    ids: &[Option<String>; LOOKUP_ARRAYS],
    keys: &[Option<String>; LOOKUP_ARRAYS],
) -> Result<Vec<(String, String, Option<String>, bool)>, Error> {
    #[derive(Deserialize)]
    struct Row {
        id: String,
        storage_key: String,
        mime_type: Option<String>,
        version: i64,
    }
    let stmt = ids.iter().chain(keys).fold(Statement::new(LOOKUP), |s, v| s.bind(v.clone()));
    let rows: Vec<Row> = exec.query(stmt).await?;
    Ok(rows.into_iter().map(|r| (r.id, r.storage_key, r.mime_type, r.version != 0)).collect())
}
