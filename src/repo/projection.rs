//! The projection contract: the one statement that loads a job's entries (a single job is a group
//! of one) and the one guarded batch that publishes their new projections, with the typed rows
//! that travel between them and SQL.
//!
//! What the publish asserts is what the load read: both statements embed the same fragments,
//! `entry_source_keys.sql` (an entry's source keys, as `model::source::source_key` writes them)
//! and `source_signature.sql` (the signature of its stored source rows). The rows bound as JSON
//! arrays are serialized from [`SourceRow`], [`OccurrenceRow`] and [`ObservedEntry`], whose serde
//! names are the `'$.…'` paths the statements read.

use std::marker::PhantomData;

use serde::{Deserialize, Serialize};
use serde_json::{json, Value as Json};

use super::work::WorkRow;
use crate::exec::guard::{guarded_batch, Guard};
use crate::exec::{Error, Executor, Row, Statement};
use crate::model::ident::Ident;
use crate::model::source::SourceMeta;
use crate::sql::{render, Fragment};

const ENTRY_SOURCE_KEYS: &str = include_str!("../sql/usage/entry_source_keys.sql");
const SOURCE_SIGNATURE: &str = include_str!("../sql/usage/source_signature.sql");
const LOAD_GROUP: &str = include_str!("../sql/usage/load_group.sql");
const GUARD_PUBLISH_GROUP: &str = include_str!("../sql/usage/guard_publish_group.sql");
const INSERT_OCCURRENCES: &str = include_str!("../sql/usage/insert_occurrences.sql");
const UPSERT_SOURCES: &str = include_str!("../sql/usage/upsert_sources.sql");
const DELETE_SOURCES: &str = include_str!("../sql/usage/delete_sources.sql");
const COMPLETE_GROUP: &str = include_str!("../sql/usage/complete_group.sql");
const RELEASE_GROUP: &str = include_str!("../sql/usage/release_group.sql");
const HOLD_PARTIAL: &str = include_str!("../sql/usage/hold_partial.sql");
const RECORD_SUCCESS: &str = include_str!("../sql/usage/record_success.sql");

/// Renders a projection statement: its content table and the contract fragments. The signature
/// comes first: it embeds `{entry_source_keys}`, which `render` fills next.
fn render_with_contract(template: &'static str, table_slug: &Ident, more: &[(&str, &Fragment)]) -> String {
    let table = Fragment::content_table(table_slug);
    let signature = Fragment::static_sql(SOURCE_SIGNATURE);
    let keys = Fragment::static_sql(ENTRY_SOURCE_KEYS);
    let mut vars = vec![("source_signature", &signature), ("entry_source_keys", &keys), ("table", &table)];
    vars.extend_from_slice(more);
    render(template, &vars)
}

/// A stored source as observed before projecting.
#[derive(Debug, Clone, Deserialize, PartialEq)]
pub struct ObservedSource {
    pub source_key: String,
    pub current_generation: Option<String>,
    pub source_fingerprint: Option<String>,
    pub source_completeness: String,
    pub last_error_code: Option<String>,
}

/// One entry as a job loaded it.
#[derive(Debug, Clone)]
pub struct LoadedEntry {
    /// The content row, or `None` when the entry no longer exists.
    pub row: Option<Row>,
    pub revision_id: Option<String>,
    pub revision_collection: Option<String>,
    pub revision_entry_id: Option<String>,
    pub revision_data: Option<String>,
    /// The live version the draft revision was saved over (`None`: older than base versions).
    pub revision_base_version: Option<i64>,
    /// The registry slug of the collection id, `None` when the collection is gone.
    pub registry_slug: Option<String>,
    /// The collection's field epoch (how many of its fields were deleted).
    pub field_epoch: i64,
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

/// What a load returned: the collection's registry slug and fields (read once), and each loaded
/// entry with its content id, in the order asked; entries past the byte bound are not loaded
/// (the first always is).
#[derive(Debug, Clone)]
pub struct LoadedGroup {
    pub registry_slug: Option<String>,
    pub entries: Vec<(String, LoadedEntry)>,
}

/// Loads the entries `content_ids` of a collection, their draft revisions, the collection's
/// fields and their stored sources in one statement, stopping once the rows read hold
/// `max_bytes` of field values and draft data (`field_slugs` name the measured columns; a single
/// entry needs none). An entry and its draft revision are read as separate rows, so an entry
/// whose live row and draft are each within D1's row limit is always loaded, however large the
/// two together.
pub async fn load_group<E: Executor>(
    exec: &E,
    table_slug: &Ident,
    collection_id: &str,
    content_ids: &[String],
    field_slugs: &[Ident],
    max_bytes: i64,
) -> Result<LoadedGroup, Error> {
    let sql = render_with_contract(LOAD_GROUP, table_slug, &[("row_bytes", &Fragment::byte_sum(field_slugs))]);
    let stmt = Statement::new(sql).bind(collection_id).bind(json!(content_ids).to_string()).bind(max_bytes);
    let rows = exec.run(stmt).await?.rows;
    let mut registry_slug = None;
    let mut field_epoch = 0;
    let mut fields: Vec<FieldRow> = Vec::new();
    // (index asked, content id, entry); drafts come as rows of their own.
    let mut entries: Vec<(i64, String, LoadedEntry)> = Vec::new();
    let mut drafts: Vec<(i64, Option<String>)> = Vec::new();
    for mut row in rows {
        let idx = row.get("__idx").and_then(Json::as_i64).unwrap_or_default();
        if take_str(&mut row, "__part").as_deref() == Some("draft") {
            drafts.push((idx, take_str(&mut row, "__rev_data")));
            continue;
        }
        if idx == 0 {
            registry_slug = take_str(&mut row, "__registry_slug");
            field_epoch = row.get("__field_epoch").and_then(Json::as_i64).unwrap_or(0);
            fields = take_json(&mut row, "__fields")?;
        }
        for meta in ["__registry_slug", "__field_epoch", "__fields", "__idx", "__rev_data"] {
            row.remove(meta);
        }
        let content_id = take_str(&mut row, "__content_id").unwrap_or_default();
        let revision_id = take_str(&mut row, "__rev_id");
        let revision_collection = take_str(&mut row, "__rev_collection");
        let revision_entry_id = take_str(&mut row, "__rev_entry_id");
        let revision_base_version = row.remove("__rev_base_version").and_then(|v| v.as_i64());
        let observed = take_json(&mut row, "__sources")?;
        let sources_signature = take_str(&mut row, "__sources_sig").unwrap_or_else(|| "[]".into());
        let present = row.get("id").is_some_and(|v| !v.is_null());
        entries.push((
            idx,
            content_id,
            LoadedEntry {
                row: present.then_some(row),
                revision_id,
                revision_collection,
                revision_entry_id,
                revision_data: None,
                revision_base_version,
                registry_slug: None,
                field_epoch: 0,
                fields: Vec::new(),
                observed,
                sources_signature,
            },
        ));
    }
    entries.sort_by_key(|(idx, _, _)| *idx);
    for (idx, data) in drafts {
        if let Some((_, _, e)) = entries.iter_mut().find(|(i, _, _)| *i == idx) {
            e.revision_data = data;
        }
    }
    let entries: Vec<(String, LoadedEntry)> = entries
        .into_iter()
        .map(|(_, id, mut e)| {
            e.registry_slug.clone_from(&registry_slug);
            e.field_epoch = field_epoch;
            e.fields.clone_from(&fields);
            (id, e)
        })
        .collect();
    Ok(LoadedGroup { registry_slug, entries })
}

/// A source row as `upsert_sources.sql` reads it (`json_extract(s.value, '$.<name>')`).
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct SourceRow {
    pub source_key: String,
    pub collection_id: String,
    pub collection_slug: String,
    pub content_id: String,
    pub variant: &'static str,
    pub locale: Option<String>,
    pub translation_group: Option<String>,
    pub content_slug: Option<String>,
    pub content_title: String,
    pub content_status: Option<String>,
    pub content_scheduled_at: Option<String>,
    pub content_deleted_at: Option<String>,
    pub revision_id: Option<String>,
    /// The new generation; `None` keeps the stored one (a failed draft).
    pub generation: Option<String>,
    pub schema_version: i64,
    pub source_updated_at: Option<String>,
    pub source_version: Option<i64>,
    pub fingerprint: Option<String>,
    /// The storage keys its file URLs name that the library lacks, as a JSON array; `None` for
    /// none.
    pub pending_keys: Option<String>,
    pub completeness: &'static str,
    pub error_code: Option<&'static str>,
}

impl SourceRow {
    fn of(meta: &SourceMeta) -> SourceRow {
        SourceRow {
            source_key: meta.source_key.clone(),
            collection_id: meta.collection_id.clone(),
            collection_slug: meta.collection_slug.clone(),
            content_id: meta.content_id.clone(),
            variant: meta.variant.as_str(),
            locale: meta.locale.clone(),
            translation_group: meta.translation_group.clone(),
            content_slug: meta.content_slug.clone(),
            content_title: meta.content_title.clone(),
            content_status: meta.content_status.clone(),
            content_scheduled_at: meta.content_scheduled_at.clone(),
            content_deleted_at: meta.content_deleted_at.clone(),
            revision_id: meta.revision_id.clone(),
            generation: None,
            schema_version: meta.schema_version,
            source_updated_at: meta.source_updated_at.clone(),
            source_version: meta.source_version,
            fingerprint: None,
            pending_keys: None,
            completeness: "complete",
            error_code: None,
        }
    }

    /// A source indexed completely at a new `generation`.
    pub fn complete(meta: &SourceMeta, generation: &str, fingerprint: &str, pending_keys: &[String]) -> SourceRow {
        SourceRow {
            generation: Some(generation.to_owned()),
            fingerprint: Some(fingerprint.to_owned()),
            pending_keys: (!pending_keys.is_empty()).then(|| json!(pending_keys).to_string()),
            ..SourceRow::of(meta)
        }
    }

    /// A source that could not be indexed (`code`); its stored generation, if any, is kept.
    pub fn failed(meta: &SourceMeta, code: &'static str) -> SourceRow {
        SourceRow { completeness: "failed", error_code: Some(code), ..SourceRow::of(meta) }
    }
}

/// An occurrence row as `insert_occurrences.sql` reads it (`json_extract(o.value, '$.<name>')`);
/// SQL derives the media id of a local reference from its asset id.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct OccurrenceRow {
    pub source_key: String,
    pub generation: String,
    pub field_slug: String,
    pub field_path: String,
    pub occurrence_index: i64,
    pub reference_type: &'static str,
    pub provider: String,
    pub provider_asset_id: String,
    pub media_kind: Option<&'static str>,
    pub mime_type: Option<String>,
    /// The storage key a file URL names (`embedded_url` only).
    pub linked_key: Option<String>,
}

/// What a job observed of one entry it publishes, as `guard_publish_group.sql` reads it
/// (`json_extract(entry.observed, '$.<name>')`): the publish goes ahead only if all of it still
/// holds.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ObservedEntry {
    pub id: String,
    pub work_version: i64,
    /// The entry's `version`, update time and revisions; all `None` when it did not exist.
    pub version: Option<i64>,
    pub updated_at: Option<String>,
    pub draft: Option<String>,
    pub live: Option<String>,
    /// The signature of its stored sources (`source_signature.sql`) as loaded.
    pub sig: String,
}

impl ObservedEntry {
    /// What a job holding `work` observed of its loaded entry.
    pub fn of(work: &WorkRow, loaded: &LoadedEntry) -> ObservedEntry {
        let row = loaded.row.as_ref();
        let text = |k: &str| row.and_then(|r| r.get(k)).and_then(Json::as_str).map(str::to_owned);
        ObservedEntry {
            id: work.content_id.clone(),
            work_version: work.work_version,
            version: row.and_then(|r| r.get("version")).and_then(Json::as_i64),
            updated_at: text("updated_at"),
            draft: text("draft_revision_id"),
            live: text("live_revision_id"),
            sig: loaded.sources_signature.clone(),
        }
    }
}

/// Rows bound as one JSON array value (`json_each(?n)` in SQL), serialized once so that their
/// size can be checked against D1's bound-value limit before a batch is built.
#[derive(Debug, Clone)]
pub struct BoundRows<T> {
    json: String,
    n_rows: usize,
    rows: PhantomData<fn() -> T>,
}

impl<T: Serialize> BoundRows<T> {
    /// # Panics
    /// When `T` fails to serialize, which the row types of this module (strings, numbers and
    /// options of them) never do.
    pub fn new(rows: &[T]) -> BoundRows<T> {
        let json = serde_json::to_string(rows).expect("rows of strings and numbers serialize");
        BoundRows { json, n_rows: rows.len(), rows: PhantomData }
    }
}

impl<T: Serialize> BoundRows<T> {
    /// `rows` in order as at most `max_values` bound values of at most `max_bytes` each (each
    /// value takes the rows that fit after the previous one's); `None` when they do not fit.
    pub fn split(rows: &[T], max_bytes: usize, max_values: usize) -> Option<Vec<BoundRows<T>>> {
        let mut values: Vec<BoundRows<T>> = Vec::new();
        for row in rows {
            let json = serde_json::to_string(row).expect("rows of strings and numbers serialize");
            match values.last_mut() {
                Some(v) if v.json.len() + json.len() < max_bytes => {
                    v.json.pop();
                    if v.n_rows > 0 {
                        v.json.push(',');
                    }
                    v.json.push_str(&json);
                    v.json.push(']');
                    v.n_rows += 1;
                }
                _ => {
                    if json.len() + 2 > max_bytes || values.len() == max_values {
                        return None;
                    }
                    values.push(BoundRows { json: format!("[{json}]"), n_rows: 1, rows: PhantomData });
                }
            }
        }
        Some(values)
    }
}

impl<T> BoundRows<T> {
    /// The bytes of the bound value.
    pub fn bytes(&self) -> usize {
        self.json.len()
    }

    pub fn is_empty(&self) -> bool {
        self.n_rows == 0
    }
}

impl<T> Default for BoundRows<T> {
    fn default() -> BoundRows<T> {
        BoundRows { json: "[]".to_owned(), n_rows: 0, rows: PhantomData }
    }
}

/// The bound values a publish's occurrences (and its sources) may take: one per source variant.
pub const PUBLISH_VALUES: usize = 2;

/// A job's publish: what was observed of the entries it publishes, what it writes for them, and
/// the rest of its rows, which go back to single jobs.
#[derive(Debug)]
pub struct Publish<'a> {
    pub collection_id: &'a str,
    pub collection_slug: &'a str,
    pub table_slug: &'a Ident,
    /// The lease token the job's work rows are held under.
    pub token: &'a str,
    /// One per published entry; their work rows go.
    pub observed: Vec<ObservedEntry>,
    /// The job's rows it does not publish (handed back to single jobs).
    pub released_ids: Vec<String>,
    /// At most [`PUBLISH_VALUES`] values each.
    pub occurrences: Vec<BoundRows<OccurrenceRow>>,
    pub sources: Vec<BoundRows<SourceRow>>,
    /// Source keys to delete (their occurrences go with them).
    pub delete_keys: Vec<String>,
    /// A draft-revision error to record on coverage.
    pub draft_error: Option<&'static str>,
    /// The published entries' live columns only: their work rows go back queued, marked with
    /// their work version (`hold_partial.sql`), instead of going.
    pub live_only: bool,
}

/// Publishes in one guarded batch: new occurrences, source rows (superseded generations go with
/// them), deleted sources, the published entries' work rows (or, for a live-only half, their
/// hand-back with the mark), the hand-back of the rest and coverage; or nothing, with [`Error::Stale`], when any observed entry, lease or source changed.
pub async fn publish<E: Executor>(exec: &E, p: &Publish<'_>) -> Result<(), Error> {
    let guard = Guard::new(render_with_contract(GUARD_PUBLISH_GROUP, p.table_slug, &[]))
        .bind(p.collection_id)
        .bind(p.collection_slug)
        .bind(BoundRows::new(&p.observed).json)
        .bind(p.token);
    let mut stmts = Vec::new();
    if let Some(values) = bound_values(&p.occurrences) {
        stmts.push(values.into_iter().fold(Statement::new(INSERT_OCCURRENCES), Statement::bind));
    }
    if let Some(values) = bound_values(&p.sources) {
        stmts.push(values.into_iter().fold(Statement::new(UPSERT_SOURCES), Statement::bind));
    }
    if !p.delete_keys.is_empty() {
        stmts.push(Statement::new(DELETE_SOURCES).bind(json!(p.delete_keys).to_string()));
    }
    let published: Vec<&str> = p.observed.iter().map(|o| o.id.as_str()).collect();
    let end = if p.live_only {
        Statement::new(super::lease::render(HOLD_PARTIAL, &[]))
    } else {
        Statement::new(COMPLETE_GROUP)
    };
    stmts.push(end.bind(p.collection_id).bind(p.token).bind(json!(published).to_string()));
    if !p.released_ids.is_empty() {
        stmts.push(release_group_statement(p.collection_id, p.token, &p.released_ids));
    }
    stmts.push(Statement::new(RECORD_SUCCESS).bind(p.collection_id).bind(p.draft_error));
    guarded_batch(exec, guard, stmts).await.map(drop)
}

/// The [`PUBLISH_VALUES`] parameters of a statement that reads `values` (NULL for those it does
/// not have: `json_each(NULL)` is empty); `None` when there are no rows.
fn bound_values<T>(values: &[BoundRows<T>]) -> Option<Vec<Option<&str>>> {
    if values.iter().all(BoundRows::is_empty) {
        return None;
    }
    Some((0..PUBLISH_VALUES).map(|i| values.get(i).map(|v| v.json.as_str())).collect())
}

fn release_group_statement(collection_id: &str, token: &str, ids: &[String]) -> Statement {
    Statement::new(super::lease::render(RELEASE_GROUP, &[]))
        .bind(collection_id)
        .bind(token)
        .bind(json!(ids).to_string())
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

#[cfg(test)]
mod tests {
    use std::collections::BTreeSet;

    use super::*;
    use crate::model::source::{source_key, Variant};

    /// The `'$.name'` paths a statement reads from its bound JSON rows.
    fn json_paths(sql: &str) -> BTreeSet<String> {
        // Each `'$.` starts a path; the path runs to the next quote.
        sql.match_indices("'$.")
            .filter_map(|(at, _)| sql[at + 3..].split_once('\''))
            .map(|(name, _)| name.to_owned())
            .collect()
    }

    /// The keys one row serializes to.
    fn keys_of<T: Serialize>(row: &T) -> BTreeSet<String> {
        match serde_json::to_value(row).unwrap() {
            Json::Object(map) => map.keys().cloned().collect(),
            other => panic!("not an object: {other}"),
        }
    }

    fn meta() -> SourceMeta {
        SourceMeta {
            source_key: source_key("c1", "e1", Variant::Columns),
            collection_id: "c1".into(),
            collection_slug: "posts".into(),
            content_id: "e1".into(),
            variant: Variant::Columns,
            locale: None,
            translation_group: None,
            content_slug: None,
            content_title: String::new(),
            content_status: None,
            content_scheduled_at: None,
            content_deleted_at: None,
            revision_id: None,
            schema_version: 1,
            source_updated_at: None,
            source_version: None,
        }
    }

    #[test]
    fn the_keys_each_statement_reads_are_the_keys_its_row_type_writes() {
        let occurrence = OccurrenceRow {
            source_key: String::new(),
            generation: String::new(),
            field_slug: String::new(),
            field_path: String::new(),
            occurrence_index: 0,
            reference_type: "image_field",
            provider: String::new(),
            provider_asset_id: String::new(),
            media_kind: None,
            mime_type: None,
            linked_key: None,
        };
        let observed = ObservedEntry {
            id: String::new(),
            work_version: 0,
            version: None,
            updated_at: None,
            draft: None,
            live: None,
            sig: String::new(),
        };
        let cases = [
            ("upsert_sources.sql", UPSERT_SOURCES, keys_of(&SourceRow::complete(&meta(), "g", "f", &[]))),
            ("upsert_sources.sql (failed)", UPSERT_SOURCES, keys_of(&SourceRow::failed(&meta(), "X"))),
            ("insert_occurrences.sql", INSERT_OCCURRENCES, keys_of(&occurrence)),
            ("guard_publish_group.sql", GUARD_PUBLISH_GROUP, keys_of(&observed)),
        ];
        for (name, sql, written) in cases {
            let read = json_paths(sql);
            assert!(!read.is_empty(), "{name} reads no key");
            let unwritten: Vec<_> = read.difference(&written).collect();
            assert!(unwritten.is_empty(), "{name} reads keys its row type does not write: {unwritten:?}");
            let unread: Vec<_> = written.difference(&read).collect();
            assert!(unread.is_empty(), "{name} does not read keys its row type writes: {unread:?}");
        }
    }

    #[test]
    fn rows_split_into_bounded_values_in_order() {
        let rows: Vec<String> = (0..10).map(|i| format!("{i}{}", "x".repeat(9))).collect();
        // Each row is 12 bytes as JSON: "[" + row = 13, each further row 13 more.
        let values = BoundRows::split(&rows[..6], 40, 2).unwrap();
        let back: Vec<Vec<String>> = values.iter().map(|v| serde_json::from_str(&v.json).unwrap()).collect();
        assert_eq!(back, [rows[..3].to_vec(), rows[3..6].to_vec()]);
        assert!(values.iter().all(|v| v.bytes() == 40 && v.n_rows == 3));
        assert!(BoundRows::split(&rows, 40, 3).is_none(), "ten rows need four values of three");
        assert_eq!(BoundRows::split(&rows, 40, 4).unwrap().len(), 4);
        assert!(BoundRows::split(&rows, 13, 10).is_none(), "a row alone must fit");
        assert_eq!(BoundRows::split(&rows, 14, 10).unwrap().len(), 10);
        assert!(BoundRows::<String>::split(&[], 14, 0).unwrap().is_empty());
    }

    #[test]
    fn the_load_and_the_guard_embed_the_one_source_signature() {
        let slug = Ident::parse("posts").unwrap();
        let keys = Fragment::static_sql(ENTRY_SOURCE_KEYS);
        let signature = render(SOURCE_SIGNATURE, &[("entry_source_keys", &keys)]).trim_end().to_owned();
        let load = render_with_contract(LOAD_GROUP, &slug, &[("row_bytes", &Fragment::byte_sum(&[]))]);
        let guard = render_with_contract(GUARD_PUBLISH_GROUP, &slug, &[]);
        for (name, sql) in [("load_group.sql", &load), ("guard_publish_group.sql", &guard)] {
            assert_eq!(sql.matches(signature.as_str()).count(), 1, "{name} does not embed the signature once:\n{sql}");
            assert_eq!(
                sql.matches("json_group_array(json_array(").count(),
                1,
                "{name} computes another signature besides the shared one:\n{sql}"
            );
        }
    }
}
