//! Projection load and publish: everything a job reads about an entry in one statement, and the
//! one guarded batch that publishes its new projection.

use serde::Deserialize;
use serde_json::{json, Value as Json};

use super::work::{completion, WorkRow};
use crate::exec::guard::{guarded_batch, Guard};
use crate::exec::{Error, Executor, Row, Statement};
use crate::model::ident::Ident;
use crate::sql::{render, Fragment};

const LOAD_ENTRY: &str = include_str!("../sql/usage/load_entry.sql");
const GUARD_PUBLISH: &str = include_str!("../sql/usage/guard_publish.sql");
const INSERT_OCCURRENCES: &str = include_str!("../sql/usage/insert_occurrences.sql");
const UPSERT_SOURCES: &str = include_str!("../sql/usage/upsert_sources.sql");
const DELETE_SOURCES: &str = include_str!("../sql/usage/delete_sources.sql");
const LOAD_GROUP: &str = include_str!("../sql/usage/load_group.sql");
const GUARD_PUBLISH_GROUP: &str = include_str!("../sql/usage/guard_publish_group.sql");
const COMPLETE_GROUP: &str = include_str!("../sql/usage/complete_group.sql");
const RELEASE_GROUP: &str = include_str!("../sql/usage/release_group.sql");
const RECORD_SUCCESS: &str = include_str!("../sql/usage/record_success.sql");

/// A stored source as observed before projecting.
#[derive(Debug, Clone, Deserialize, PartialEq)]
pub struct ObservedSource {
    pub source_key: String,
    pub current_generation: Option<String>,
    pub source_fingerprint: Option<String>,
    pub source_completeness: String,
    pub last_error_code: Option<String>,
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
    /// The JSON array of occurrence objects for `insert_occurrences.sql`, if any.
    pub occurrences: Option<String>,
    /// The JSON array of source objects for `upsert_sources.sql`, if any.
    pub sources: Option<String>,
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
    if let Some(occurrences) = &p.occurrences {
        stmts.push(Statement::new(INSERT_OCCURRENCES).bind(occurrences.as_str()));
    }
    if let Some(sources) = &p.sources {
        stmts.push(Statement::new(UPSERT_SOURCES).bind(sources.as_str()));
    }
    if !p.delete_keys.is_empty() {
        stmts.push(Statement::new(DELETE_SOURCES).bind(json!(p.delete_keys).to_string()));
    }
    stmts.extend(completion(o.work, p.draft_error));
    guarded_batch(exec, guard, stmts).await.map(drop)
}

/// What a group load returned: the collection's registry slug and fields (read once), and each
/// loaded entry with its content id, in the order asked; entries past the byte bound are not
/// loaded.
#[derive(Debug, Clone)]
pub struct LoadedGroup {
    pub registry_slug: Option<String>,
    pub entries: Vec<(String, LoadedEntry)>,
}

/// Loads the entries `content_ids` of a collection in one statement, stopping once the rows read
/// hold `max_bytes` of field values and draft data (`field_slugs` name the measured columns).
pub async fn load_group<E: Executor>(
    exec: &E,
    table_slug: &Ident,
    collection_id: &str,
    content_ids: &[String],
    field_slugs: &[Ident],
    max_bytes: i64,
) -> Result<LoadedGroup, Error> {
    let sql = render(
        LOAD_GROUP,
        &[("table", &Fragment::content_table(table_slug)), ("row_bytes", &Fragment::byte_sum(field_slugs))],
    );
    let stmt = Statement::new(sql).bind(collection_id).bind(json!(content_ids).to_string()).bind(max_bytes);
    let rows = exec.run(stmt).await?.rows;
    let mut registry_slug = None;
    let mut fields: Vec<FieldRow> = Vec::new();
    let mut entries = Vec::with_capacity(rows.len());
    for (i, mut row) in rows.into_iter().enumerate() {
        if i == 0 {
            registry_slug = take_str(&mut row, "__registry_slug");
            fields = take_json(&mut row, "__fields")?;
        }
        row.remove("__registry_slug");
        row.remove("__fields");
        row.remove("__bytes_before");
        let content_id = take_str(&mut row, "__content_id").unwrap_or_default();
        let revision_id = take_str(&mut row, "__rev_id");
        let revision_collection = take_str(&mut row, "__rev_collection");
        let revision_entry_id = take_str(&mut row, "__rev_entry_id");
        let revision_data = take_str(&mut row, "__rev_data");
        let observed = take_json(&mut row, "__sources")?;
        let sources_signature = take_str(&mut row, "__sources_sig").unwrap_or_else(|| "[]".into());
        let present = row.get("id").is_some_and(|v| !v.is_null());
        entries.push((
            content_id,
            LoadedEntry {
                row: present.then_some(row),
                revision_id,
                revision_collection,
                revision_entry_id,
                revision_data,
                registry_slug: None,
                fields: Vec::new(),
                observed,
                sources_signature,
            },
        ));
    }
    for (_, e) in &mut entries {
        e.registry_slug.clone_from(&registry_slug);
        e.fields.clone_from(&fields);
    }
    Ok(LoadedGroup { registry_slug, entries })
}

/// A group publish: the entries published (with what was observed of each) and the group's rows
/// handed back to single jobs.
#[derive(Debug)]
pub struct GroupPublish<'a> {
    pub collection_id: &'a str,
    pub collection_slug: &'a str,
    pub table_slug: &'a Ident,
    pub token: &'a str,
    /// One `{id, workVersion, version, updatedAt, draft, live, sig}` object per published entry.
    pub observed: Vec<Json>,
    pub published_ids: Vec<String>,
    pub released_ids: Vec<String>,
    pub writes: Publish,
}

/// Publishes a group in one guarded batch: everything its entries need, their work rows, the
/// hand-back of the rest and coverage; or nothing, with [`Error::Stale`], when any observed
/// entry, lease or source changed.
pub async fn publish_group<E: Executor>(exec: &E, g: &GroupPublish<'_>) -> Result<(), Error> {
    let table = Fragment::content_table(g.table_slug);
    let guard = Guard::new(render(GUARD_PUBLISH_GROUP, &[("table", &table)]))
        .bind(g.collection_id)
        .bind(g.collection_slug)
        .bind(Json::Array(g.observed.clone()).to_string())
        .bind(g.token);
    let mut stmts = Vec::new();
    if let Some(occurrences) = &g.writes.occurrences {
        stmts.push(Statement::new(INSERT_OCCURRENCES).bind(occurrences.as_str()));
    }
    if let Some(sources) = &g.writes.sources {
        stmts.push(Statement::new(UPSERT_SOURCES).bind(sources.as_str()));
    }
    if !g.writes.delete_keys.is_empty() {
        stmts.push(Statement::new(DELETE_SOURCES).bind(json!(g.writes.delete_keys).to_string()));
    }
    stmts.push(
        Statement::new(COMPLETE_GROUP).bind(g.collection_id).bind(g.token).bind(json!(g.published_ids).to_string()),
    );
    if !g.released_ids.is_empty() {
        stmts.push(release_group_statement(g.collection_id, g.token, &g.released_ids));
    }
    stmts.push(Statement::new(RECORD_SUCCESS).bind(g.collection_id).bind(g.writes.draft_error));
    guarded_batch(exec, guard, stmts).await.map(drop)
}

fn release_group_statement(collection_id: &str, token: &str, ids: &[String]) -> Statement {
    Statement::new(RELEASE_GROUP).bind(collection_id).bind(token).bind(json!(ids).to_string())
}

/// Hands a group's rows back to single jobs (after a lost race, or when the group cannot run).
pub async fn release_group<E: Executor>(
    exec: &E,
    collection_id: &str,
    token: &str,
    ids: &[String],
) -> Result<(), Error> {
    exec.execute(release_group_statement(collection_id, token, ids)).await.map(drop)
}
