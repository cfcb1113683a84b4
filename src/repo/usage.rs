//! The media usage index tables: capture triggers and coverage rows, the work queue, the
//! projection publish batch, read queries and the tick log.

use serde::Deserialize;
use serde_json::{json, Value as Json};
use sha2::{Digest, Sha256};

use super::schema::Collection;
use crate::exec::guard::{guarded_batch, Guard};
use crate::exec::{Error, Executor, Row, Statement};
use crate::ids;
use crate::model::ident::Ident;
use crate::sql::{render, Fragment};

const CAPTURE_TRIGGER: &str = include_str!("../sql/usage/capture_trigger.sql");
const INSERT_STATUS: &str = include_str!("../sql/usage/insert_status.sql");
const INVALIDATE_FOR_SCHEMA_CHANGE: &str = include_str!("../sql/usage/invalidate_for_schema_change.sql");
const DELETE_COLLECTION_STATUS: &str = include_str!("../sql/usage/delete_collection_status.sql");
const DELETE_COLLECTION_WORK: &str = include_str!("../sql/usage/delete_collection_work.sql");
const DELETE_COLLECTION_RUNS: &str = include_str!("../sql/usage/delete_collection_runs.sql");
const CLAIM_WORK: &str = include_str!("../sql/usage/claim_work.sql");
const CLAIM_ENTRY_WORK: &str = include_str!("../sql/usage/claim_entry_work.sql");
const LOAD_ENTRY: &str = include_str!("../sql/usage/load_entry.sql");
const GUARD_PUBLISH: &str = include_str!("../sql/usage/guard_publish.sql");
const INSERT_OCCURRENCES: &str = include_str!("../sql/usage/insert_occurrences.sql");
const UPSERT_SOURCES: &str = include_str!("../sql/usage/upsert_sources.sql");
const DELETE_SOURCES: &str = include_str!("../sql/usage/delete_sources.sql");
const COMPLETE_WORK: &str = include_str!("../sql/usage/complete_work.sql");
const RECORD_SUCCESS: &str = include_str!("../sql/usage/record_success.sql");
const FAIL_WORK: &str = include_str!("../sql/usage/fail_work.sql");
const RECORD_FAILURE: &str = include_str!("../sql/usage/record_failure.sql");
const DELETE_OBSOLETE_WORK: &str = include_str!("../sql/usage/delete_obsolete_work.sql");
const COVERAGE_ROWS: &str = include_str!("../sql/usage/coverage_rows.sql");
const USAGE_PAGE: &str = include_str!("../sql/usage/usage_page.sql");
const COUNT_ENTRIES: &str = include_str!("../sql/usage/count_entries.sql");
const LIST_WORK: &str = include_str!("../sql/usage/list_work.sql");
const GET_WORK: &str = include_str!("../sql/usage/get_work.sql");
const GUARD_RETRY_WORK: &str = include_str!("../sql/usage/guard_retry_work.sql");
const BUMP_EPOCH: &str = include_str!("../sql/usage/bump_epoch.sql");
const ENQUEUE_WORK: &str = include_str!("../sql/usage/enqueue_work.sql");
const GUARD_MEDIA_UNUSED: &str = include_str!("../sql/usage/guard_media_unused.sql");
const MEDIA_USAGE_ENTRIES: &str = include_str!("../sql/usage/media_usage_entries.sql");
const DELETE_MEDIA: &str = include_str!("../sql/media/delete.sql");
const INSERT_TICK: &str = include_str!("../sql/usage/insert_tick.sql");
const LIST_TICKS: &str = include_str!("../sql/usage/list_ticks.sql");

/// Name of one of a collection's capture triggers, bound to its exact identity:
/// `emdash_mu_<first 16 bytes of sha256("1:<id>:<slug>"), hex>_<suffix>`.
pub fn trigger_name(collection_id: &str, slug: &Ident, suffix: &'static str) -> Fragment {
    let digest = Sha256::digest(format!("1:{collection_id}:{slug}").as_bytes());
    Fragment::digest_name("emdash_mu_", &digest[..16], suffix)
}

/// The statements that start capture for a new collection: its `active` status row and its
/// three triggers. They go into the collection's creation batch.
pub fn capture_statements(collection_id: &str, slug: &Ident) -> Result<Vec<Statement>, Error> {
    let id_literal = Fragment::id_literal(collection_id)
        .ok_or_else(|| Error::Backend(format!("collection id {collection_id:?} is not a generated id")))?;
    let table = Fragment::content_table(slug);
    let slug_literal = Fragment::literal(slug);
    let mut stmts = vec![Statement::new(INSERT_STATUS).bind(slug.as_str()).bind(collection_id)];
    for (suffix, event, row) in [("_ai", "INSERT", "NEW"), ("_au", "UPDATE", "NEW"), ("_ad", "DELETE", "OLD")] {
        let sql = render(
            CAPTURE_TRIGGER,
            &[
                ("trigger", &trigger_name(collection_id, slug, suffix)),
                ("event", &Fragment::keyword(event)),
                ("table", &table),
                ("row", &Fragment::keyword(row)),
                ("slug", &slug_literal),
                ("collection_id", &id_literal),
            ],
        );
        stmts.push(Statement::new(sql));
    }
    Ok(stmts)
}

/// Invalidates coverage after a schema change that matters for extraction: stale with
/// reconciliation required when the collection has entries.
pub fn invalidate_for_schema_change(c: &Collection) -> Statement {
    Statement::new(render(INVALIDATE_FOR_SCHEMA_CHANGE, &[("table", &c.table())]))
        .bind(c.id.as_str())
        .bind(c.slug.as_str())
}

/// Removes a deleted collection's coverage row, queued work and repair run.
pub fn forget_collection(collection_id: &str) -> Vec<Statement> {
    vec![
        Statement::new(DELETE_COLLECTION_STATUS).bind(collection_id),
        Statement::new(DELETE_COLLECTION_WORK).bind(collection_id),
        Statement::new(DELETE_COLLECTION_RUNS).bind(collection_id),
    ]
}

/// A work queue row.
#[derive(Debug, Clone, Deserialize, PartialEq)]
pub struct WorkRow {
    pub collection_id: String,
    pub content_id: String,
    pub collection_slug: String,
    pub change_epoch: i64,
    pub work_version: i64,
    pub state: String,
    pub attempt_count: i64,
    pub next_attempt_at: String,
    pub lease_token: Option<String>,
    pub lease_expires_at: Option<String>,
    pub last_attempted_at: Option<String>,
    pub last_error_code: Option<String>,
    pub created_at: String,
    pub updated_at: String,
}

/// Claims the next due work row (or the given entry's, if due) with a fresh 60 s lease. An
/// expired lease counts as a due row: its holder died.
pub async fn claim<E: Executor>(exec: &E, key: Option<(&str, &str)>) -> Result<Option<WorkRow>, Error> {
    let stmt = match key {
        Some((cid, content)) => Statement::new(CLAIM_ENTRY_WORK).bind(ids::new_id()).bind(cid).bind(content),
        None => Statement::new(CLAIM_WORK).bind(ids::new_id()),
    };
    exec.query_first(stmt).await
}

/// A stored source as observed before projecting.
#[derive(Debug, Clone, Deserialize, PartialEq)]
pub struct ObservedSource {
    pub source_key: String,
    pub current_generation: Option<String>,
    pub source_fingerprint: Option<String>,
    pub source_completeness: String,
    pub last_error_code: Option<String>,
    /// Occurrences of the current generation, counted up to 13.
    pub occurrence_count: i64,
}

/// Everything a projection job reads, in one statement.
#[derive(Debug, Clone)]
pub struct LoadedEntry {
    /// The content row, or `None` when the entry no longer exists.
    pub row: Option<Row>,
    pub revision_id: Option<String>,
    pub revision_collection: Option<String>,
    pub revision_entry_id: Option<String>,
    pub revision_data: Option<String>,
    /// The registry slug of the collection id, `None` when the collection is gone.
    pub registry_slug: Option<String>,
    pub fields: Vec<FieldRow>,
    pub observed: Vec<ObservedSource>,
    /// An opaque signature of the observed source rows, compared again at publish time.
    pub sources_signature: String,
}

/// A field row as loaded with the entry.
#[derive(Debug, Clone, Deserialize)]
pub struct FieldRow {
    pub id: String,
    pub slug: String,
    pub label: String,
    #[serde(rename = "type")]
    pub field_type: String,
    pub required: i64,
    pub validation: Option<String>,
    pub sort_order: i64,
}

fn take_str(row: &mut Row, key: &str) -> Option<String> {
    match row.remove(key) {
        Some(Json::String(s)) => Some(s),
        _ => None,
    }
}

fn take_json<T: serde::de::DeserializeOwned>(row: &mut Row, key: &str) -> Result<T, Error> {
    let raw = take_str(row, key).unwrap_or_else(|| "[]".into());
    serde_json::from_str(&raw).map_err(|e| Error::Decode(format!("{key}: {e}")))
}

/// Loads an entry, its draft revision, its collection's fields and its observed sources.
pub async fn load_entry<E: Executor>(
    exec: &E,
    table_slug: &Ident,
    collection_id: &str,
    content_id: &str,
    source_keys: [&str; 2],
) -> Result<LoadedEntry, Error> {
    let sql = render(LOAD_ENTRY, &[("table", &Fragment::content_table(table_slug))]);
    let stmt = Statement::new(sql).bind(collection_id).bind(content_id).bind(source_keys[0]).bind(source_keys[1]);
    let mut row = exec
        .run(stmt)
        .await?
        .rows
        .into_iter()
        .next()
        .ok_or_else(|| Error::Decode("the entry load returned no row".into()))?;
    let revision_id = take_str(&mut row, "__rev_id");
    let revision_collection = take_str(&mut row, "__rev_collection");
    let revision_entry_id = take_str(&mut row, "__rev_entry_id");
    let revision_data = take_str(&mut row, "__rev_data");
    let registry_slug = take_str(&mut row, "__registry_slug");
    let fields = take_json(&mut row, "__fields")?;
    let observed = take_json(&mut row, "__sources")?;
    let sources_signature = take_str(&mut row, "__sources_sig").unwrap_or_else(|| "[]".into());
    let present = row.get("id").is_some_and(|v| !v.is_null());
    Ok(LoadedEntry {
        row: present.then_some(row),
        revision_id,
        revision_collection,
        revision_entry_id,
        revision_data,
        registry_slug,
        fields,
        observed,
        sources_signature,
    })
}

/// What a publish batch writes.
#[derive(Debug, Clone, Default)]
pub struct Publish {
    /// Occurrence objects for `insert_occurrences.sql`.
    pub occurrences: Vec<Json>,
    /// Source objects for `upsert_sources.sql`.
    pub sources: Vec<Json>,
    /// Source keys to delete (their occurrences go with them).
    pub delete_keys: Vec<String>,
    /// A draft-revision error to record on coverage.
    pub draft_error: Option<&'static str>,
}

/// The CAS inputs of a publish: what the job observed.
#[derive(Debug, Clone)]
pub struct Observed<'a> {
    pub work: &'a WorkRow,
    pub table_slug: &'a Ident,
    pub content_version: Option<i64>,
    pub content_updated_at: Option<String>,
    pub draft_revision_id: Option<String>,
    pub live_revision_id: Option<String>,
    pub source_keys: [&'a str; 2],
    pub sources_signature: &'a str,
}

fn completion(work: &WorkRow, draft_error: Option<&'static str>) -> [Statement; 2] {
    [
        Statement::new(COMPLETE_WORK)
            .bind(work.collection_id.as_str())
            .bind(work.content_id.as_str())
            .bind(work.lease_token.clone())
            .bind(work.work_version),
        Statement::new(RECORD_SUCCESS).bind(work.collection_id.as_str()).bind(draft_error),
    ]
}

/// Publishes a projection in one guarded batch: new occurrences, source rows (superseded
/// generations go with them), deleted sources, the work row and coverage; or nothing, with
/// [`Error::Stale`], when anything observed changed.
pub async fn publish<E: Executor>(exec: &E, o: &Observed<'_>, p: &Publish) -> Result<(), Error> {
    let table = Fragment::content_table(o.table_slug);
    let guard = Guard::new(render(GUARD_PUBLISH, &[("table", &table)]))
        .bind(o.work.collection_id.as_str())
        .bind(o.work.content_id.as_str())
        .bind(o.work.lease_token.clone())
        .bind(o.work.work_version)
        .bind(o.work.collection_slug.as_str())
        .bind(o.content_version)
        .bind(o.content_updated_at.clone())
        .bind(o.draft_revision_id.clone())
        .bind(o.live_revision_id.clone())
        .bind(o.source_keys[0])
        .bind(o.source_keys[1])
        .bind(o.sources_signature);
    let mut stmts = Vec::new();
    if !p.occurrences.is_empty() {
        stmts.push(Statement::new(INSERT_OCCURRENCES).bind(Json::Array(p.occurrences.clone()).to_string()));
    }
    if !p.sources.is_empty() {
        stmts.push(Statement::new(UPSERT_SOURCES).bind(Json::Array(p.sources.clone()).to_string()));
    }
    if !p.delete_keys.is_empty() {
        stmts.push(Statement::new(DELETE_SOURCES).bind(json!(p.delete_keys).to_string()));
    }
    stmts.extend(completion(o.work, p.draft_error));
    guarded_batch(exec, guard, stmts).await.map(drop)
}

/// Completes a job that changes nothing in the index (the projection is unchanged).
pub async fn complete_unchanged<E: Executor>(exec: &E, work: &WorkRow) -> Result<(), Error> {
    exec.batch(completion(work, None).into()).await.map(drop)
}

/// Records a failed attempt: `retry` after `delay_seconds`, or `failed` when terminal (then
/// coverage turns `partial`).
pub async fn fail<E: Executor>(
    exec: &E,
    work: &WorkRow,
    terminal: bool,
    delay_seconds: i64,
    code: &str,
) -> Result<(), Error> {
    let mut stmts = vec![Statement::new(FAIL_WORK)
        .bind(work.collection_id.as_str())
        .bind(work.content_id.as_str())
        .bind(work.lease_token.clone())
        .bind(work.work_version)
        .bind(terminal)
        .bind(delay_seconds)
        .bind(code)];
    if terminal {
        stmts.push(
            Statement::new(RECORD_FAILURE)
                .bind(work.collection_id.as_str())
                .bind(work.content_id.as_str())
                .bind(work.work_version)
                .bind(code),
        );
    }
    exec.batch(stmts).await.map(drop)
}

/// Drops a work row whose collection no longer exists with that identity.
pub async fn delete_obsolete<E: Executor>(exec: &E, work: &WorkRow) -> Result<bool, Error> {
    let stmt = Statement::new(DELETE_OBSOLETE_WORK)
        .bind(work.collection_id.as_str())
        .bind(work.content_id.as_str())
        .bind(work.lease_token.clone())
        .bind(work.collection_slug.as_str());
    Ok(exec.execute(stmt).await? > 0)
}

/// One registered collection's coverage row.
#[derive(Debug, Clone, Deserialize)]
pub struct CoverageRow {
    pub collection_id: String,
    pub collection: String,
    pub status: Option<String>,
    pub capture_state: Option<String>,
    pub change_epoch: Option<i64>,
    pub reconciliation_required: Option<i64>,
    pub last_error_code: Option<String>,
    pub schema_version: Option<i64>,
    pub indexed_source_count: Option<i64>,
    pub failed_source_count: Option<i64>,
    pub started_at: Option<String>,
    pub completed_at: Option<String>,
}

impl CoverageRow {
    /// The coverage this row states, for aggregation.
    pub fn coverage(&self) -> crate::usage::coverage::CollectionCoverage {
        crate::usage::coverage::CollectionCoverage {
            status: self.status.clone(),
            reconciliation_required: self.reconciliation_required.unwrap_or(0) != 0,
            schema_version: self.schema_version,
        }
    }
}

pub async fn coverage_rows<E: Executor>(exec: &E) -> Result<Vec<CoverageRow>, Error> {
    exec.query(Statement::new(COVERAGE_ROWS)).await
}

/// One eligible occurrence of a media item, with its entry's display metadata.
#[derive(Debug, Clone, Deserialize)]
pub struct UsageRow {
    pub collection_slug: String,
    pub content_id: String,
    pub source_variant: String,
    pub content_slug: Option<String>,
    pub content_title: Option<String>,
    pub content_status: Option<String>,
    pub locale: Option<String>,
    pub content_deleted_at: Option<String>,
    pub field_slug: String,
    pub field_path: String,
    pub occurrence_index: i64,
    pub reference_type: String,
}

/// The occurrences of up to `limit` entries that use `media_id`, after `(collection, content)`.
pub async fn usage_page<E: Executor>(
    exec: &E,
    media_id: &str,
    after: Option<(String, String)>,
    limit: u32,
) -> Result<Vec<UsageRow>, Error> {
    let (c, id) = after.unzip();
    exec.query(Statement::new(USAGE_PAGE).bind(media_id).bind(c).bind(id).bind(i64::from(limit))).await
}

/// Distinct non-trashed entries whose current projection uses `media_id`.
pub async fn count_entries<E: Executor>(exec: &E, media_id: &str) -> Result<i64, Error> {
    #[derive(Deserialize)]
    struct N {
        n: i64,
    }
    let n: Option<N> = exec.query_first(Statement::new(COUNT_ENTRIES).bind(media_id)).await?;
    Ok(n.map_or(0, |n| n.n))
}

/// Work rows of a collection, newest first.
pub async fn list_work<E: Executor>(
    exec: &E,
    collection_id: &str,
    state: Option<&str>,
    after: Option<(String, String)>,
    limit: u32,
) -> Result<Vec<WorkRow>, Error> {
    let (at, id) = after.unzip();
    exec.query(Statement::new(LIST_WORK).bind(collection_id).bind(state).bind(at).bind(id).bind(i64::from(limit) + 1))
        .await
}

/// A work row with whether its lease is live by the database clock.
#[derive(Debug, Clone, Deserialize)]
pub struct WorkWithLease {
    #[serde(flatten)]
    pub row: WorkRow,
    pub lease_live: Option<i64>,
}

pub async fn get_work<E: Executor>(
    exec: &E,
    collection_id: &str,
    content_id: &str,
) -> Result<Option<WorkWithLease>, Error> {
    exec.query_first(Statement::new(GET_WORK).bind(collection_id).bind(content_id)).await
}

/// Reopens (or creates) an entry's work row as `pending` and bumps the coverage epoch, only if
/// the row is still as observed; `None` when it changed meanwhile.
pub async fn retry_work<E: Executor>(
    exec: &E,
    c: &Collection,
    content_id: &str,
    observed: Option<&WorkRow>,
) -> Result<Option<WorkRow>, Error> {
    let guard = Guard::new(GUARD_RETRY_WORK)
        .bind(c.id.as_str())
        .bind(c.slug.as_str())
        .bind(content_id)
        .bind(observed.map(|w| w.work_version))
        .bind(observed.map(|w| w.state.clone()));
    let stmts = vec![
        Statement::new(BUMP_EPOCH).bind(c.id.as_str()),
        Statement::new(ENQUEUE_WORK).bind(c.id.as_str()).bind(c.slug.as_str()).bind(json!([content_id]).to_string()),
    ];
    match guarded_batch(exec, guard, stmts).await {
        Ok(_) => Ok(get_work(exec, &c.id, content_id).await?.map(|w| w.row)),
        Err(Error::Stale) => Ok(None),
        Err(e) => Err(e),
    }
}

/// One tick log row.
#[derive(Debug, Clone, Deserialize)]
pub struct TickRow {
    pub id: i64,
    pub started_at: String,
    pub lane: String,
    pub outcome: String,
    pub statements: i64,
    pub rows_written: i64,
    pub duration_ms: i64,
    pub details: Option<String>,
}

/// What a tick reports about itself.
#[derive(Debug, Clone)]
pub struct TickLog {
    pub lane: String,
    pub outcome: String,
    pub statements: u64,
    pub rows_written: u64,
    pub duration_ms: u64,
    pub details: Option<String>,
}

/// Writes a tick row; `started_at` is the database clock minus the tick's duration.
pub async fn insert_tick<E: Executor>(exec: &E, log: &TickLog) -> Result<(), Error> {
    let offset = format!("-{:.3} seconds", log.duration_ms as f64 / 1000.0);
    let stmt = Statement::new(INSERT_TICK)
        .bind(offset)
        .bind(log.lane.as_str())
        .bind(log.outcome.as_str())
        .bind(log.statements as i64)
        .bind(log.rows_written as i64)
        .bind(log.duration_ms as i64)
        .bind(log.details.clone());
    exec.execute(stmt).await.map(drop)
}

/// Tick rows, newest first, before id `before`.
pub async fn list_ticks<E: Executor>(exec: &E, before: Option<i64>, limit: u32) -> Result<Vec<TickRow>, Error> {
    exec.query(Statement::new(LIST_TICKS).bind(before).bind(i64::from(limit) + 1)).await
}

/// How a safe media delete ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SafeDelete {
    Deleted,
    /// No such media row.
    Missing,
    /// A current occurrence references it, or coverage cannot prove it unused.
    Refused,
}

/// Deletes a media row only if, at that instant, no current occurrence references it and every
/// collection's coverage is complete: the check and the delete are one guarded batch.
pub async fn delete_media_if_unused<E: Executor>(exec: &E, media_id: &str) -> Result<SafeDelete, Error> {
    let guard = Guard::new(GUARD_MEDIA_UNUSED).bind(media_id);
    match guarded_batch(exec, guard, vec![Statement::new(DELETE_MEDIA).bind(media_id)]).await {
        Ok(outcomes) if outcomes.first().is_some_and(|o| o.changes > 0) => Ok(SafeDelete::Deleted),
        Ok(_) => Ok(SafeDelete::Missing),
        Err(Error::Stale) => Ok(SafeDelete::Refused),
        Err(e) => Err(e),
    }
}

/// An entry whose current projection references a media item.
#[derive(Debug, Clone, Deserialize)]
pub struct UsingEntry {
    pub collection_slug: String,
    pub content_id: String,
    pub content_slug: Option<String>,
    /// How many distinct entries reference the media (the same on every row).
    pub total: i64,
}

/// Up to `limit` entries (of registered collections, trashed included) whose current projection
/// references the media, with the total count.
pub async fn entries_using_media<E: Executor>(exec: &E, media_id: &str, limit: u32) -> Result<Vec<UsingEntry>, Error> {
    exec.query(Statement::new(MEDIA_USAGE_ENTRIES).bind(media_id).bind(i64::from(limit))).await
}
