//! Relinks of media items (`_emdash_media_relinks`): start one, read them, and the leased
//! statements of the relink lane: claim, the item's keys, the next entries, their guarded
//! write, advance, conflict, finish, fail and release.

use serde::Deserialize;

use super::content::{self, Update};
use super::lease::{self, Failure, LeaseState, Queue};
use crate::exec::guard::{guarded_batch_all, Guard};
use crate::exec::{Error, Executor, Statement, Value};
use crate::ids;
use crate::model::collection::Collection;
use crate::model::ident::Ident;
use crate::sql::{render, Fragment};

const START: &str = include_str!("../sql/relink/start.sql");
const LATEST: &str = include_str!("../sql/relink/latest.sql");
const IN_PROGRESS: &str = include_str!("../sql/relink/in_progress.sql");
const CLAIM: &str = include_str!("../sql/relink/claim.sql");
const KEYS: &str = include_str!("../sql/relink/keys.sql");
const NEXT_ENTRIES: &str = include_str!("../sql/relink/next_entries.sql");
const ENTRIES_AFTER: &str = include_str!("../sql/relink/entries_after.sql");
const GUARD_RELINK: &str = include_str!("../sql/relink/guard_relink.sql");
const GUARD_ENTRIES: &str = include_str!("../sql/relink/guard_entries.sql");
const INSERT_REVISION: &str = include_str!("../sql/relink/insert_revision.sql");
const PRUNE_REVISIONS: &str = include_str!("../sql/relink/prune_revisions.sql");
const ADVANCE: &str = include_str!("../sql/relink/advance.sql");
const CONFLICT: &str = include_str!("../sql/relink/conflict.sql");
const FINISH: &str = include_str!("../sql/relink/finish.sql");
const FAIL: &str = include_str!("../sql/relink/fail.sql");
const RELEASE: &str = include_str!("../sql/relink/release.sql");

/// Relinks: a tick's steps per claim, handed back when the tick ends.
pub const RELINK: Queue = Queue { table: "_emdash_media_relinks", lease_seconds: 60 };

/// A relink as stored.
#[derive(Debug, Clone, Deserialize)]
pub struct Relink {
    pub id: String,
    pub media_id: String,
    pub requested_by: Option<String>,
    /// The source key of the last entry done (`''`: none yet).
    pub cursor: String,
    pub conflict_attempts: i64,
    pub entries_done: i64,
    pub entries_changed: i64,
    pub entries_unsettled: i64,
    pub conflicts: i64,
    pub entries_left: i64,
    pub entries_left_capped: i64,
    pub started_at: String,
    pub finished_at: Option<String>,
    #[serde(flatten)]
    pub lease: LeaseState,
}

/// Starts a relink of `media_id` for `requested_by` (see `start.sql`): `None` when the item is
/// missing or in the trash, or a relink of it is in progress.
pub async fn start<E: Executor>(
    exec: &E,
    media_id: &str,
    requested_by: Option<&str>,
    count_cap: u32,
) -> Result<Option<Relink>, Error> {
    let stmt = Statement::new(render(START, &[("entries_after", &entries_after())]))
        .bind(ids::new_id())
        .bind(media_id)
        .bind("")
        .bind(i64::from(count_cap))
        .bind(requested_by);
    exec.query_first(stmt).await
}

/// The latest relink of `media_id`.
pub async fn latest<E: Executor>(exec: &E, media_id: &str) -> Result<Option<Relink>, Error> {
    exec.query_first(Statement::new(LATEST).bind(media_id)).await
}

/// Relinks in progress, oldest first (at most `limit`).
pub async fn in_progress<E: Executor>(exec: &E, limit: u32) -> Result<Vec<Relink>, Error> {
    exec.query(Statement::new(IN_PROGRESS).bind(i64::from(limit))).await
}

/// Claims the relink due the longest with a fresh lease of [`RELINK`]'s length.
pub async fn claim<E: Executor>(exec: &E) -> Result<Option<Relink>, Error> {
    exec.query_first(RELINK.claim(CLAIM, &ids::new_id())).await
}

/// A media item's storage keys, as a relink reads them.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Keys {
    /// Its current key; `None` when the item is gone.
    pub current: Option<String>,
    /// It is in the trash.
    pub trashed: bool,
    /// Its earlier keys, newest first.
    pub earlier: Vec<String>,
}

/// The storage keys of `media_id`: its current one and its `limit` newest earlier ones.
pub async fn keys<E: Executor>(exec: &E, media_id: &str, limit: u32) -> Result<Keys, Error> {
    #[derive(Deserialize)]
    struct Row {
        storage_key: String,
        current: i64,
        trashed: i64,
    }
    let rows: Vec<Row> = exec.query(Statement::new(KEYS).bind(media_id).bind(i64::from(limit))).await?;
    let mut keys = Keys::default();
    for r in rows {
        if r.current != 0 {
            keys.current = Some(r.storage_key);
            keys.trashed = r.trashed != 0;
        } else {
            keys.earlier.push(r.storage_key);
        }
    }
    Ok(keys)
}

/// An entry a relink walks to.
#[derive(Debug, Clone, Deserialize, PartialEq, Eq)]
pub struct NextEntry {
    /// The last of its sources that links an earlier key.
    pub source_key: String,
    pub collection_id: String,
    pub collection_slug: String,
    pub content_id: String,
}

impl NextEntry {
    /// The cursor past this entry (both of its sources): its last possible source key.
    pub fn cursor_past(&self) -> String {
        crate::model::source::source_key(
            &self.collection_id,
            &self.content_id,
            crate::model::source::Variant::DraftOverlay,
        )
    }
}

/// The next entries after `cursor` (at most `limit`, in source-key order) with a file URL
/// occurrence naming one of `earlier` (an item's earlier keys).
pub async fn next_entries<E: Executor>(
    exec: &E,
    earlier: &[String],
    cursor: &str,
    limit: u32,
) -> Result<Vec<NextEntry>, Error> {
    let stmt =
        Statement::new(NEXT_ENTRIES).bind(serde_json::json!(earlier).to_string()).bind(cursor).bind(i64::from(limit));
    exec.query(stmt).await
}

fn entries_after() -> Fragment {
    Fragment::static_sql(ENTRIES_AFTER)
}

/// An entry as its relink loaded it: what its write is guarded on.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Loaded {
    pub id: String,
    pub version: i64,
    pub updated_at: String,
    pub draft_revision_id: Option<String>,
    pub live_revision_id: Option<String>,
}

/// What a relink writes to one entry.
#[derive(Debug, Clone, PartialEq)]
pub struct EntryWrite {
    /// Field columns whose stored text changed (the live data).
    pub columns: Vec<(Ident, Value)>,
    /// The live data after the change (JSON text, as the API reads the columns): the revision a
    /// live write adds, when columns change.
    pub live: String,
    /// The draft's new data (stored text) and its base version, when the draft is written.
    pub draft: Option<(String, DraftBase)>,
}

/// The live version a draft a relink writes is based on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DraftBase {
    /// The draft was current: it stays current, based on the version the write leaves.
    Current,
    /// The draft was stale (or older than base versions): it keeps its base.
    Kept(Option<i64>),
}

/// Who writes, and under which relink's lease.
#[derive(Debug, Clone, Copy)]
pub struct Writer<'a> {
    pub relink: &'a Relink,
    /// The item's current key the rewrite named.
    pub current_key: &'a str,
    pub max_revisions: u32,
    /// The walk's cursor past the entry, and the count cap of what is left.
    pub cursor: &'a str,
    pub count_cap: u32,
}

fn lease_token(r: &Relink) -> Option<String> {
    r.lease.lease_token.clone()
}

/// What an advance counts: the entries it passes, those of them written, and those passed over
/// unsettled.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Passed {
    pub done: u32,
    pub changed: u32,
    pub unsettled: u32,
}

fn advance_statement(w: &Writer<'_>, passed: Passed) -> Statement {
    Statement::new(render(ADVANCE, &[("entries_after", &entries_after())]))
        .bind(w.relink.id.as_str())
        .bind(w.relink.media_id.as_str())
        .bind(w.cursor)
        .bind(i64::from(w.count_cap))
        .bind(lease_token(w.relink))
        .bind(i64::from(passed.done))
        .bind(i64::from(passed.changed))
        .bind(i64::from(passed.unsettled))
}

/// An entry a relink writes: its collection, the entry as loaded, and what changes.
#[derive(Debug, Clone)]
pub struct EntryToWrite<'c> {
    pub collection: &'c Collection,
    pub loaded: Loaded,
    pub write: EntryWrite,
}

impl EntryToWrite<'_> {
    /// The statements its write takes: a live write's revision and update, and a draft's
    /// revision and pointer (its collection's guard and pruning are shared).
    pub fn statements(&self) -> u64 {
        2 * u64::from(!self.write.columns.is_empty()) + 2 * u64::from(self.write.draft.is_some())
    }
}

/// Writes `entries` and advances the relink past `passed.done` entries (those written among
/// them), in one batch that holds only while every entry written is as loaded, the relink holds
/// its lease and the item's current key is the one written (else [`Error::Stale`], nothing
/// written). An entry's live columns are written as an update writes them, then its draft as a
/// draft save writes it (a revision by the relink's editor); the capture trigger queues it for
/// projection. The guards are one for the relink and one per collection written, and so is the
/// pruning of the entries' revisions, after their writes.
pub async fn write_entries<E: Executor>(
    exec: &E,
    entries: Vec<EntryToWrite<'_>>,
    w: &Writer<'_>,
    passed: Passed,
) -> Result<(), Error> {
    let mut guards = vec![Guard::new(GUARD_RELINK)
        .bind(w.relink.id.as_str())
        .bind(lease_token(w.relink))
        .bind(w.relink.media_id.as_str())
        .bind(w.current_key)];
    let mut collections: Vec<(&Collection, Vec<serde_json::Value>)> = Vec::new();
    for e in &entries {
        let observed = serde_json::json!({
            "id": e.loaded.id, "version": e.loaded.version, "updatedAt": e.loaded.updated_at,
            "draft": e.loaded.draft_revision_id, "live": e.loaded.live_revision_id,
        });
        match collections.iter_mut().find(|(c, _)| c.id == e.collection.id) {
            Some((_, list)) => list.push(observed),
            None => collections.push((e.collection, vec![observed])),
        }
    }
    for (c, observed) in collections {
        let table = Fragment::content_table(&c.slug);
        guards.push(
            Guard::new(render(GUARD_ENTRIES, &[("table", &table)])).bind(serde_json::Value::from(observed).to_string()),
        );
    }
    let mut stmts = Vec::new();
    let mut pruned: Vec<(&Collection, Vec<String>)> = Vec::new();
    for EntryToWrite { collection: c, loaded, write } in entries {
        match pruned.iter_mut().find(|(p, _)| p.id == c.id) {
            Some((_, ids)) => ids.push(loaded.id.clone()),
            None => pruned.push((c, vec![loaded.id.clone()])),
        }
        let mut version = loaded.version;
        if !write.columns.is_empty() {
            // A revision of the live data as written, by the editor who asked, made the entry's
            // live revision (as a publish makes the revision it publishes).
            let live_revision = ids::new_id();
            stmts.push(revision_statement(c, &loaded.id, &live_revision, write.live, Some(version + 1), w));
            let mut columns = write.columns;
            columns.push((live_revision_column(), Value::from(live_revision.as_str())));
            let update = Update { expected_version: Some(version), columns, ..Update::default() };
            stmts.push(content::update_statement(c, &loaded.id, update));
            version += 1;
        }
        if let Some((data, base)) = write.draft {
            let base = match base {
                DraftBase::Current => Some(version + 1),
                DraftBase::Kept(base) => base,
            };
            let revision_id = ids::new_id();
            stmts.push(revision_statement(c, &loaded.id, &revision_id, data, base, w));
            stmts.push(content::set_draft_statement(c, &loaded.id, &revision_id));
        }
    }
    // Each collection's entries pruned to the revisions an entry keeps, their live and draft
    // ones always.
    for (c, ids) in pruned {
        let table = Fragment::content_table(&c.slug);
        stmts.push(
            Statement::new(render(PRUNE_REVISIONS, &[("table", &table)]))
                .bind(c.slug.as_str())
                .bind(serde_json::json!(ids).to_string())
                .bind(content::revisions_besides(w.max_revisions)),
        );
    }
    stmts.push(advance_statement(w, passed));
    guarded_batch_all(exec, guards, stmts).await.map(drop)
}

/// A revision of the entry `id` a relink writes, by the editor who asked for it.
fn revision_statement(
    c: &Collection,
    id: &str,
    revision_id: &str,
    data: String,
    base: Option<i64>,
    w: &Writer<'_>,
) -> Statement {
    Statement::new(INSERT_REVISION)
        .bind(revision_id)
        .bind(c.slug.as_str())
        .bind(id)
        .bind(data)
        .bind(base)
        .bind(w.relink.requested_by.as_deref())
}

/// The system column of an entry's live revision, set beside the field columns an update writes.
fn live_revision_column() -> Ident {
    Ident::parse("live_revision_id").expect("a valid identifier")
}

/// Advances the relink past entries it does not write (nothing to rewrite, gone, or passed over
/// unsettled: every attempt lost to a concurrent edit); false when the lease was lost.
pub async fn pass<E: Executor>(exec: &E, w: &Writer<'_>, passed: Passed) -> Result<bool, Error> {
    Ok(exec.execute(advance_statement(w, passed)).await? > 0)
}

/// Counts a lost write of the entry at the relink's cursor; the conflicts in a row, or `None`
/// when the lease was lost.
pub async fn conflict<E: Executor>(exec: &E, r: &Relink) -> Result<Option<i64>, Error> {
    #[derive(Deserialize)]
    struct Row {
        conflict_attempts: i64,
    }
    let stmt = Statement::new(CONFLICT).bind(r.id.as_str()).bind(lease_token(r));
    Ok(exec.query_first::<Row>(stmt).await?.map(|r| r.conflict_attempts))
}

/// The walk ended: the relink is done; false when the lease was lost.
pub async fn finish<E: Executor>(exec: &E, r: &Relink) -> Result<bool, Error> {
    let stmt = Statement::new(lease::render(FINISH, &[])).bind(r.id.as_str()).bind(lease_token(r));
    Ok(exec.execute(stmt).await? > 0)
}

/// The relink fails for good with `code`.
pub async fn fail<E: Executor>(exec: &E, r: &Relink, code: &str) -> Result<bool, Error> {
    let stmt = Failure::FINAL.statement(FAIL, code).bind(r.id.as_str()).bind(lease_token(r));
    Ok(exec.execute(stmt).await? > 0)
}

/// Hands the relink back at the end of a tick.
pub async fn release<E: Executor>(exec: &E, r: &Relink) -> Result<(), Error> {
    let stmt = Statement::new(lease::render(RELEASE, &[])).bind(r.id.as_str()).bind(lease_token(r));
    exec.execute(stmt).await.map(drop)
}
