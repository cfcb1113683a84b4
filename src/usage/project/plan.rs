//! What a job writes for an entry, decided without the database: the collection's fields read
//! (closed: a field the extractor cannot read fails the job), the entry's references extracted,
//! and its new projection compared with the stored one and admitted under the limits.

use std::collections::BTreeSet;

use super::super::admission::{check_occurrences, occurrence_rows, MAX_BOUND_BYTES};
use super::super::cost::CpuWork;
use super::super::extract::{extraction_fields, ExtractionField, Library, Rules};
use super::super::fingerprint::is_v1;
use super::super::snapshot::{prepare_variants, DraftSnapshot, PreparedEntry, RevisionRow, Snapshot, Variants};
use super::Policy;
use crate::ids;
use crate::model::field::{Field, FieldMeta, FieldType};
use crate::model::ident::Ident;
use crate::model::source::{source_key, Variant};
use crate::repo::projection::{BoundRows, LoadedEntry, ObservedSource, OccurrenceRow, SourceRow};
use crate::repo::work::WorkRow;

/// The collection's fields as loaded with the entry. Any field the extractor cannot read makes
/// the whole job fail (closed): skipping it could drop references from the index.
pub(super) fn fields_of(loaded: &LoadedEntry) -> Result<Vec<Field>, &'static str> {
    loaded
        .fields
        .iter()
        .map(|f| {
            let slug = Ident::parse(&f.slug).map_err(|_| "MEDIA_USAGE_SNAPSHOT_FAILED")?;
            let field_type = FieldType::parse(&f.field_type).ok_or("MEDIA_USAGE_SNAPSHOT_FAILED")?;
            let sub_fields = if field_type == FieldType::Repeater {
                Field::parse_sub_fields_strict(f.validation.as_deref())?
            } else {
                Vec::new()
            };
            Ok(Field {
                id: f.id.clone(),
                slug,
                label: f.label.clone(),
                field_type,
                required: f.required != 0,
                sub_fields,
                sort_order: f.sort_order,
                meta: FieldMeta::default(),
            })
        })
        .collect()
}

/// The stored row already holds exactly this projection.
fn is_noop(s: &Snapshot, observed: Option<&ObservedSource>) -> bool {
    observed.is_some_and(|o| {
        o.current_generation.is_some()
            && o.source_fingerprint.as_deref().is_some_and(|fp| is_v1(fp) && fp == s.fingerprint)
            && o.source_completeness == "complete"
            && o.last_error_code.is_none()
    })
}

/// The writes an entry's new projection needs, before they are bound to statements.
#[derive(Debug, Default)]
pub(super) struct Writes {
    pub(super) occurrences: Vec<OccurrenceRow>,
    pub(super) sources: Vec<SourceRow>,
    pub(super) delete_keys: Vec<String>,
    pub(super) draft_error: Option<&'static str>,
    /// The local media the entry references (both variants): what an entry refused for its size
    /// keeps on its failed work row.
    pub(super) referenced: BTreeSet<String>,
}

impl Writes {
    /// Adds another entry's writes (a group publishes many entries in one batch).
    pub(super) fn append(&mut self, other: Writes) {
        self.occurrences.extend(other.occurrences);
        self.sources.extend(other.sources);
        self.delete_keys.extend(other.delete_keys);
        self.draft_error = self.draft_error.or(other.draft_error);
        self.referenced.extend(other.referenced);
    }
}

/// What a job will write, or why it may not.
#[derive(Debug)]
pub(super) enum Plan {
    Write(Writes),
    Unchanged,
    /// A variant passes the admission limit; the local media the entry references.
    ResourceLimit(BTreeSet<String>),
    /// The entry's candidate strings do not fit one lookup: the media they name cannot be told
    /// (only data written behind the API; it fails closed).
    TooLarge,
}

/// An entry read and its references extracted, before the media lookup.
#[derive(Debug)]
pub(super) struct Prepared {
    pub(super) schema: Vec<ExtractionField>,
    /// `None` when the entry no longer exists.
    pub(super) entry: Option<PreparedEntry>,
}

/// The bytes of source data an entry's projection reads with both variants: its columns' text and
/// its draft's data (what the CPU cost model charges per byte).
pub(super) fn source_bytes(loaded: &LoadedEntry) -> u64 {
    column_bytes(loaded) + loaded.revision_data.as_ref().map_or(0, String::len) as u64
}

/// The bytes of source data its live columns alone read.
pub(super) fn column_bytes(loaded: &LoadedEntry) -> u64 {
    loaded.row.iter().flatten().map(|(_, v)| v.as_str().map_or(8, str::len) as u64).sum()
}

/// How a job reads its entries' variants.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Reading {
    /// A group: each entry with both variants; an entry whose live columns were published alone
    /// (its draft overlay is left to a single job), and a first entry with a draft that does not
    /// fit the CPU left with both, go back to single jobs.
    Group,
    /// A single job: an entry with a draft that does not fit the CPU left with both variants
    /// projects its live columns alone (the first half); one whose live columns were published
    /// alone at the work row's version projects its draft overlay alone (the second).
    Single,
}

/// The variants a single job projects of `loaded` within `cpu_ms` (see [`Reading::Single`]): the
/// draft overlay alone only when the mark is the row's work version and the live columns' source
/// is there, complete, as loaded (the publish asserts it is still so).
pub(super) fn single_variants(work: &WorkRow, loaded: &LoadedEntry, cpu_ms: f64) -> Variants {
    if loaded.revision_data.is_none() {
        return Variants::Both;
    }
    let live = source_key(&work.collection_id, &work.content_id, Variant::Columns);
    let live_indexed = loaded
        .observed
        .iter()
        .any(|o| o.source_key == live && o.source_completeness == "complete" && o.current_generation.is_some());
    if work.live_published() && live_indexed {
        Variants::Draft
    } else if CpuWork::entry(source_bytes(loaded), 0, 0).ms() > cpu_ms {
        Variants::Live
    } else {
        Variants::Both
    }
}

/// Reads the collection's fields and extracts the references of the entry's `variants` (pure);
/// the code says why the fields cannot be read.
pub(super) fn prepare(
    collection_id: &str,
    collection_slug: &str,
    loaded: &LoadedEntry,
    rules: &Rules,
    variants: Variants,
) -> Result<Prepared, &'static str> {
    let fields = fields_of(loaded)?;
    let schema = extraction_fields(&fields);
    let entry = loaded.row.as_ref().map(|row| {
        let revision = RevisionRow {
            id: loaded.revision_id.clone(),
            collection: loaded.revision_collection.clone(),
            entry_id: loaded.revision_entry_id.clone(),
            data: loaded.revision_data.clone(),
        };
        prepare_variants(collection_id, collection_slug, &fields, &schema, row, &revision, rules, variants)
    });
    Ok(Prepared { schema, entry })
}

/// Decides the writes for an entry (pure): which snapshots changed, which stored sources no
/// longer exist, and whether the change is admitted (each written variant within
/// `admission.max_occurrences`, each bound value within [`MAX_BOUND_BYTES`]). Candidate strings
/// count only when `library` holds what they name.
pub(super) fn plan(loaded: &LoadedEntry, prepared: &Prepared, policy: &Policy, library: &Library) -> Plan {
    let observed = |key: &str| loaded.observed.iter().find(|o| o.source_key == key);
    let (mut occurrences, mut sources, mut delete_keys) = (Vec::new(), Vec::new(), Vec::new());
    let mut draft_error = None;
    let mut wanted: Vec<String> = Vec::new();
    let mut referenced = BTreeSet::new();
    if let Some(entry) = &prepared.entry {
        let snaps = entry.snapshots(&prepared.schema, &policy.rules, loaded.field_epoch, library);
        let indexed_draft = match &snaps.draft {
            Some(DraftSnapshot::Indexed(d)) => Some(d),
            _ => None,
        };
        referenced = snaps
            .columns
            .iter()
            .chain(indexed_draft)
            .flat_map(|s| s.occurrences.iter().filter_map(|o| o.media_id.clone()))
            .collect();
        let mut changed: Vec<&Snapshot> = Vec::new();
        // The entry's sources are all kept, those this job does not project included.
        wanted.extend(entry.source_keys.iter().cloned());
        if let Some(columns) = &snaps.columns {
            if !is_noop(columns, observed(&columns.meta.source_key)) {
                changed.push(columns);
            }
        }
        match &snaps.draft {
            Some(DraftSnapshot::Indexed(d)) if !is_noop(d, observed(&d.meta.source_key)) => changed.push(d),
            Some(DraftSnapshot::Indexed(_)) => {}
            Some(DraftSnapshot::Failed(failure)) => {
                let prior = observed(&failure.meta.source_key);
                let already = prior.is_some_and(|o| {
                    o.source_completeness == "failed" && o.last_error_code.as_deref() == Some(failure.code)
                });
                if !already {
                    sources.push(SourceRow::failed(&failure.meta, failure.code));
                }
                draft_error = Some(failure.code);
            }
            None => {}
        }
        for s in changed {
            if check_occurrences(policy.admission, &s.meta.collection_id, &s.occurrences).is_err() {
                return Plan::ResourceLimit(referenced);
            }
            let generation = ids::new_id();
            let source = SourceRow::complete(&s.meta, &generation, &s.fingerprint, &s.pending_keys);
            if BoundRows::new(std::slice::from_ref(&source)).bytes() > MAX_BOUND_BYTES {
                return Plan::ResourceLimit(referenced);
            }
            occurrences.extend(occurrence_rows(&s.meta.source_key, &generation, &s.occurrences));
            sources.push(source);
        }
    }
    // Removing a source is always admitted: its occurrences go with it (a trigger), however many.
    for o in &loaded.observed {
        if !wanted.contains(&o.source_key) {
            delete_keys.push(o.source_key.clone());
        }
    }
    if occurrences.is_empty() && sources.is_empty() && delete_keys.is_empty() && draft_error.is_none() {
        return Plan::Unchanged;
    }
    Plan::Write(Writes { occurrences, sources, delete_keys, draft_error, referenced })
}
