//! Snapshots of an entry for projection: the `columns` variant from the live
//! row and, when a draft revision exists, the `draft_overlay` variant (columns with the draft
//! laid over them), each with its source metadata, occurrences and fingerprint.

use serde_json::{Map, Value as Json};

use super::extract::{extract, Extracted, ExtractionField, Library, Occurrence, Rules};
use super::fingerprint::fingerprint;
use crate::exec::Row;
use crate::model::field::Field;
use crate::model::source::{source_key, SourceMeta, Variant, MAX_TITLE_CHARS, SCHEMA_VERSION, TITLE_FIELDS};
use crate::repo::encode::from_column;

/// A projected source: metadata, occurrences and fingerprint.
#[derive(Debug, Clone, PartialEq)]
pub struct Snapshot {
    pub meta: SourceMeta,
    pub occurrences: Vec<Occurrence>,
    /// Storage keys its file URLs name that the library does not have (yet).
    pub pending_keys: Vec<String>,
    pub fingerprint: String,
    /// UTF-8 bytes of the fingerprint payload (admission).
    pub byte_length: usize,
}

/// A draft revision that could not be used.
#[derive(Debug, Clone, PartialEq)]
pub struct DraftFailure {
    pub meta: SourceMeta,
    pub code: &'static str,
}

/// The draft revision row as loaded with the entry (all `None` when missing).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct RevisionRow {
    pub id: Option<String>,
    pub collection: Option<String>,
    pub entry_id: Option<String>,
    pub data: Option<String>,
}

/// The draft overlay variant: projected, or failed with a code.
#[derive(Debug, Clone, PartialEq)]
pub enum DraftSnapshot {
    Indexed(Snapshot),
    Failed(DraftFailure),
}

/// The variants of an entry a job projects.
#[derive(Debug, Clone, PartialEq)]
pub struct EntrySnapshots {
    pub columns: Option<Snapshot>,
    pub draft: Option<DraftSnapshot>,
}

fn text(row: &Row, key: &str) -> Option<String> {
    match row.get(key) {
        Some(Json::String(s)) => Some(s.clone()),
        Some(Json::Number(n)) => Some(n.to_string()),
        _ => None,
    }
}

/// The field data of the live row as the API shows it: JSON-bearing columns parsed by their
/// field type (a `json` field holding a string is that string), text columns as written (text
/// that looks like JSON is still text).
fn column_data(fields: &[Field], row: &Row) -> Map<String, Json> {
    fields
        .iter()
        .filter_map(|f| Some((f.slug.as_str().to_owned(), from_column(f, row.get(f.slug.as_str())?))))
        .collect()
}

/// The display title: the first non-blank `title`/`name`, else the slug, else the id, cut to
/// its first [`MAX_TITLE_CHARS`] characters (the index shows and fingerprints this, never a
/// field in full).
fn title(data: &Map<String, Json>, slug: Option<&str>, id: &str) -> String {
    let full = TITLE_FIELDS
        .iter()
        .filter_map(|k| data.get(*k).and_then(Json::as_str))
        .find(|s| !s.trim().is_empty())
        .or_else(|| slug.filter(|s| !s.is_empty()))
        .unwrap_or(id);
    full.chars().take(MAX_TITLE_CHARS).collect()
}

/// A variant of an entry with its references extracted, before the candidate strings are
/// looked up in the media library.
#[derive(Debug, Clone, PartialEq)]
pub struct Prepared {
    pub meta: SourceMeta,
    pub extracted: Extracted,
}

/// The draft overlay variant, prepared or failed with a code.
#[derive(Debug, Clone, PartialEq)]
pub enum PreparedDraft {
    Ready(Prepared),
    Failed(DraftFailure),
}

/// Which source variants of an entry a job projects: both, or one of them when the entry is too
/// heavy for the CPU budget with both (the live columns first, then the draft overlay).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Variants {
    Both,
    Live,
    Draft,
}

/// The variants of an entry a job projects, prepared, and the source keys the entry has (whether
/// this job projects them or not: a source it leaves to another job is not removed).
#[derive(Debug, Clone, PartialEq)]
pub struct PreparedEntry {
    /// `None` when only the draft overlay is projected.
    pub columns: Option<Prepared>,
    /// `None` without a draft revision, or when only the live columns are projected.
    pub draft: Option<PreparedDraft>,
    /// The entry's source keys: its live columns', and its draft overlay's when it has a draft.
    pub source_keys: Vec<String>,
    /// The bytes of source data the prepared variants read (column text and draft data): with
    /// the draft overlay alone, its draft's data and the columns it does not replace.
    pub bytes: u64,
}

impl PreparedEntry {
    /// What each variant holds (the live columns, and the draft overlay when it could be read).
    pub fn extracted(&self) -> impl Iterator<Item = &Extracted> + Clone {
        let draft = match &self.draft {
            Some(PreparedDraft::Ready(d)) => Some(&d.extracted),
            _ => None,
        };
        self.columns.iter().map(|c| &c.extracted).chain(draft)
    }

    /// The snapshots, with the candidates resolved against what the library holds, fingerprinted
    /// under the collection's `field_epoch`.
    pub fn snapshots(
        &self,
        schema: &[ExtractionField],
        rules: &Rules,
        field_epoch: i64,
        library: &Library,
    ) -> EntrySnapshots {
        let build = |p: &Prepared| {
            let occurrences = p.extracted.resolve(library);
            let pending_keys = p.extracted.pending_keys(library);
            let (fingerprint, byte_length) = fingerprint(schema, rules, field_epoch, &p.meta, &occurrences);
            Snapshot { meta: p.meta.clone(), occurrences, pending_keys, fingerprint, byte_length }
        };
        EntrySnapshots {
            columns: self.columns.as_ref().map(build),
            draft: self.draft.as_ref().map(|d| match d {
                PreparedDraft::Ready(p) => DraftSnapshot::Indexed(build(p)),
                PreparedDraft::Failed(f) => DraftSnapshot::Failed(f.clone()),
            }),
        }
    }
}

/// The bytes a column's value counts for in the CPU cost model: its text, or 8.
fn value_bytes(v: &Json) -> u64 {
    v.as_str().map_or(8, str::len) as u64
}

/// Prepares both variants of a present entry row: its live columns and, with a draft revision,
/// the columns with the draft's values of the collection's `fields` laid over them.
pub fn prepare_entry(
    collection_id: &str,
    collection_slug: &str,
    fields: &[Field],
    schema: &[ExtractionField],
    row: &Row,
    revision: &RevisionRow,
    rules: &Rules,
) -> PreparedEntry {
    prepare_variants(collection_id, collection_slug, fields, schema, row, revision, rules, Variants::Both)
}

/// [`prepare_entry`] of the `variants` a job projects. The draft overlay alone decodes only the
/// columns its draft does not replace.
#[allow(clippy::too_many_arguments)]
pub fn prepare_variants(
    collection_id: &str,
    collection_slug: &str,
    fields: &[Field],
    schema: &[ExtractionField],
    row: &Row,
    revision: &RevisionRow,
    rules: &Rules,
    variants: Variants,
) -> PreparedEntry {
    let content_id = text(row, "id").unwrap_or_default();
    let slug = text(row, "slug");
    let draft_id = text(row, "draft_revision_id");
    let mut source_keys = vec![source_key(collection_id, &content_id, Variant::Columns)];
    if draft_id.is_some() {
        source_keys.push(source_key(collection_id, &content_id, Variant::DraftOverlay));
    }
    // The draft revision, read when this job projects its overlay: the code says why it cannot be.
    let rev: Option<Result<Map<String, Json>, &'static str>> =
        draft_id.as_ref().filter(|_| variants != Variants::Live).map(|_| {
            if revision.id.is_none() {
                return Err("DRAFT_REVISION_NOT_FOUND");
            }
            if revision.collection.as_deref() != Some(collection_slug)
                || revision.entry_id.as_deref() != Some(content_id.as_str())
            {
                return Err("DRAFT_REVISION_MISMATCH");
            }
            match revision.data.as_deref().and_then(|d| serde_json::from_str::<Json>(d).ok()) {
                Some(Json::Object(rev)) => Ok(rev),
                _ => Err("DRAFT_REVISION_INVALID"),
            }
        });
    // The draft overlay alone needs only the columns its draft does not replace.
    let replaced =
        |f: &Field| variants == Variants::Draft && matches!(&rev, Some(Ok(r)) if r.contains_key(f.slug.as_str()));
    let kept: Vec<Field> = fields.iter().filter(|f| !replaced(f)).cloned().collect();
    let data = column_data(&kept, row);
    let bytes = match variants {
        Variants::Draft => {
            let columns: u64 = kept.iter().filter_map(|f| row.get(f.slug.as_str())).map(value_bytes).sum();
            columns + revision.data.as_ref().map_or(0, |d| d.len() as u64)
        }
        _ => {
            let columns: u64 = row.values().map(value_bytes).sum();
            let draft =
                if variants == Variants::Both { revision.data.as_ref().map_or(0, |d| d.len() as u64) } else { 0 };
            columns + draft
        }
    };
    let meta =
        |variant: Variant, revision_id: Option<String>, slug: Option<String>, data: &Map<String, Json>| SourceMeta {
            source_key: source_key(collection_id, &content_id, variant),
            collection_id: collection_id.to_owned(),
            collection_slug: collection_slug.to_owned(),
            content_id: content_id.clone(),
            variant,
            locale: text(row, "locale"),
            translation_group: text(row, "translation_group"),
            content_title: title(data, slug.as_deref(), &content_id),
            content_slug: slug,
            content_status: text(row, "status"),
            content_scheduled_at: text(row, "scheduled_at"),
            content_deleted_at: text(row, "deleted_at"),
            revision_id,
            schema_version: SCHEMA_VERSION,
            source_updated_at: text(row, "updated_at"),
            source_version: row.get("version").and_then(Json::as_i64),
        };
    let prepare =
        |meta: SourceMeta, data: &Map<String, Json>| Prepared { meta, extracted: extract(schema, data, rules) };
    let columns = (variants != Variants::Draft)
        .then(|| prepare(meta(Variant::Columns, text(row, "live_revision_id"), slug.clone(), &data), &data));
    let draft = draft_id.zip(rev).map(|(draft_id, rev)| {
        let rev = match rev {
            Ok(rev) => rev,
            Err(code) => {
                let meta = meta(Variant::DraftOverlay, Some(draft_id), slug.clone(), &data);
                return PreparedDraft::Failed(DraftFailure { meta, code });
            }
        };
        // The draft's values of the collection's fields, as publishing would make them live: a
        // key no field has (a field deleted since the draft was saved; `_slug`) is not content.
        let mut overlay = data.clone();
        for (k, v) in &rev {
            if fields.iter().any(|f| f.slug.as_str() == k) {
                overlay.insert(k.clone(), v.clone());
            }
        }
        let draft_slug = rev.get("_slug").and_then(Json::as_str).map(str::to_owned).or_else(|| slug.clone());
        PreparedDraft::Ready(prepare(meta(Variant::DraftOverlay, Some(draft_id), draft_slug, &overlay), &overlay))
    });
    PreparedEntry { columns, draft, source_keys, bytes }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::field::FieldType;
    use crate::model::ident::Ident;
    use crate::usage::extract::extraction_fields;
    use serde_json::json;

    fn fields() -> Vec<Field> {
        ["title", "hero"]
            .iter()
            .zip([FieldType::String, FieldType::Image])
            .map(|(s, t)| Field {
                id: (*s).into(),
                slug: Ident::parse(s).unwrap(),
                label: (*s).into(),
                field_type: t,
                required: false,
                sub_fields: vec![],
                sort_order: 0,
                meta: Default::default(),
            })
            .collect()
    }

    fn row(draft: Option<&str>) -> Row {
        json!({"id": "e1", "slug": "hello", "status": "published", "locale": "en", "translation_group": "e1",
               "updated_at": "2026-01-01T00:00:00.000Z", "version": 3, "title": "Hello",
               "hero": "{\"id\":\"m1\"}", "live_revision_id": null, "draft_revision_id": draft, "deleted_at": null})
        .as_object()
        .unwrap()
        .clone()
    }

    /// The snapshots of `row` under the current rules, with a library that holds nothing.
    fn entry_snapshots(row: &Row, rev: &RevisionRow) -> EntrySnapshots {
        let f = fields();
        let schema = extraction_fields(&f);
        prepare_entry("c1", "posts", &f, &schema, row, rev, &Rules::default()).snapshots(
            &schema,
            &Rules::default(),
            0,
            &Library::default(),
        )
    }

    fn columns(row: &Row) -> Snapshot {
        entry_snapshots(row, &RevisionRow::default()).columns.unwrap()
    }

    fn snaps(draft: Option<&str>, rev: RevisionRow) -> EntrySnapshots {
        entry_snapshots(&row(draft), &rev)
    }

    #[test]
    fn columns_snapshot_parses_json_text_and_takes_metadata() {
        let s = snaps(None, RevisionRow::default());
        assert_eq!(s.columns.as_ref().unwrap().meta.source_key, "content:c1:e1:columns");
        assert_eq!(s.columns.as_ref().unwrap().meta.content_title, "Hello");
        assert_eq!(s.columns.as_ref().unwrap().occurrences[0].media_id.as_deref(), Some("m1"));
        assert!(s.draft.is_none());
    }

    #[test]
    fn scenario_8_draft_revision_errors() {
        let ok_rev = |collection: &str, entry: &str, data: &str| RevisionRow {
            id: Some("r1".into()),
            collection: Some(collection.into()),
            entry_id: Some(entry.into()),
            data: Some(data.into()),
        };
        let code = |s: EntrySnapshots| match s.draft {
            Some(DraftSnapshot::Failed(f)) => f.code,
            other => panic!("expected a draft failure, got {other:?}"),
        };
        assert_eq!(code(snaps(Some("r1"), RevisionRow::default())), "DRAFT_REVISION_NOT_FOUND");
        assert_eq!(code(snaps(Some("r1"), ok_rev("posts", "other", "{}"))), "DRAFT_REVISION_MISMATCH");
        assert_eq!(code(snaps(Some("r1"), ok_rev("pages", "e1", "{}"))), "DRAFT_REVISION_MISMATCH");
        assert_eq!(code(snaps(Some("r1"), ok_rev("posts", "e1", "not json"))), "DRAFT_REVISION_INVALID");
        assert_eq!(code(snaps(Some("r1"), ok_rev("posts", "e1", "[1]"))), "DRAFT_REVISION_INVALID");
        // The columns snapshot is still produced.
        let s = snaps(Some("r1"), ok_rev("posts", "e1", "[1]"));
        assert_eq!(s.columns.as_ref().unwrap().occurrences.len(), 1);
    }

    #[test]
    fn the_draft_overlay_lays_revision_data_over_columns() {
        let rev = RevisionRow {
            id: Some("r1".into()),
            collection: Some("posts".into()),
            entry_id: Some("e1".into()),
            data: Some(r#"{"hero":"m2","_slug":"draft-slug","_internal":"x","title":"Draft"}"#.into()),
        };
        let s = snaps(Some("r1"), rev);
        let Some(DraftSnapshot::Indexed(d)) = s.draft else { panic!("expected an indexed draft") };
        assert_eq!(d.meta.source_key, "content:c1:e1:draft_overlay");
        assert_eq!(d.meta.content_slug.as_deref(), Some("draft-slug"));
        assert_eq!(d.meta.content_title, "Draft");
        assert_eq!(d.meta.revision_id.as_deref(), Some("r1"));
        assert_eq!(d.occurrences[0].media_id.as_deref(), Some("m2"));
        assert_ne!(d.fingerprint, s.columns.as_ref().unwrap().fingerprint);
    }

    #[test]
    fn the_draft_overlay_lays_only_the_collections_fields() {
        // `cover` is no field of the collection (a field deleted since the draft was saved):
        // publishing would drop it, so it holds no reference, and no title either.
        let rev = RevisionRow {
            id: Some("r1".into()),
            collection: Some("posts".into()),
            entry_id: Some("e1".into()),
            data: Some(r#"{"cover":"m3","name":"Named","extra":{"asset":{"_ref":"m4"}}}"#.into()),
        };
        let s = snaps(Some("r1"), rev);
        let Some(DraftSnapshot::Indexed(d)) = s.draft else { panic!("expected an indexed draft") };
        let media: Vec<_> = d.occurrences.iter().map(|o| o.media_id.clone()).collect();
        assert_eq!(
            media,
            s.columns.as_ref().unwrap().occurrences.iter().map(|o| o.media_id.clone()).collect::<Vec<_>>()
        );
        assert_eq!(d.meta.content_title, "Hello", "the live title: `name` is no field here");
    }

    #[test]
    fn the_field_epoch_changes_every_fingerprint_and_0_leaves_them_as_they_were() {
        let f = fields();
        let schema = extraction_fields(&f);
        let prepared =
            prepare_entry("c1", "posts", &f, &schema, &row(None), &RevisionRow::default(), &Rules::default());
        let at = |epoch| prepared.snapshots(&schema, &Rules::default(), epoch, &Library::default()).columns.unwrap();
        let (zero, one, two) = (at(0), at(1), at(2));
        assert_eq!(zero.occurrences, one.occurrences);
        assert!(zero.fingerprint != one.fingerprint && one.fingerprint != two.fingerprint);
        let (before, _) = fingerprint(&schema, &Rules::default(), 0, &zero.meta, &zero.occurrences);
        assert_eq!(before, zero.fingerprint);
        // Epoch 0 adds nothing to the payload: fingerprints stored before epochs existed hold.
        assert_eq!(zero.byte_length + r#","fieldEpoch":1"#.len(), one.byte_length);
    }

    #[test]
    fn the_display_title_is_cut_to_200_characters() {
        let long = "é".repeat(500_000);
        let mut r = row(None);
        r.insert("title".into(), json!(long));
        let s = columns(&r);
        assert_eq!(s.meta.content_title, "é".repeat(200));
        assert!(s.byte_length < 2_000, "the fingerprint payload stays small: {}", s.byte_length);
        // Titles that differ only past the cut fingerprint the same.
        r.insert("title".into(), json!(format!("{}x", "é".repeat(200))));
        let t = columns(&r);
        assert_eq!(s.fingerprint, t.fingerprint);
        r.insert("title".into(), json!("a".repeat(200)));
        let exact = columns(&r);
        assert_eq!(exact.meta.content_title.len(), 200);
    }

    #[test]
    fn fingerprints_ignore_freshness_fields_but_track_content() {
        let a = snaps(None, RevisionRow::default()).columns.unwrap();
        let mut r = row(None);
        r.insert("version".into(), json!(9));
        r.insert("updated_at".into(), json!("2030-01-01T00:00:00.000Z"));
        let b = columns(&r);
        assert_eq!(a.fingerprint, b.fingerprint, "an unrelated write is a no-op");
        r.insert("hero".into(), json!("m9"));
        let c = columns(&r);
        assert_ne!(a.fingerprint, c.fingerprint);
    }
}
