//! Admission: what one projection job can index, decided at write time so that nothing saved
//! through the API can fail for good in the background. A job loads an entry (its live row and
//! its draft as separate rows), looks its candidate strings up in one statement and publishes in
//! one guarded batch whose values are bound as JSON (D1 refuses a value over 2,000,000 bytes). So
//! per source variant (live columns, draft overlay) a write must stay within: the occurrence
//! limit, the bytes of its candidate ids and of its file URL keys (one lookup), and the bytes of
//! its occurrence rows (one bound value). See the README ("Admission").

use std::borrow::Cow;
use std::collections::BTreeSet;

use serde_json::{Map, Value as Json};

use super::extract::{extract, extraction_fields, Extracted, Library, Occurrence, Rules};
use crate::exec::{Error, Executor};
use crate::lane::RowCount;
use crate::model::field::Field;
use crate::model::source::{source_key, Variant};
use crate::repo::media as media_repo;
use crate::repo::projection::{BoundRows, OccurrenceRow};

/// What one job may publish per source variant (see the module's documentation).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Admission {
    /// Occurrences per source variant (`MEDIA_USAGE_MAX_OCCURRENCES_PER_ENTRY`): the live
    /// columns and the draft overlay may each hold this many; occurrences being removed do not
    /// count.
    pub max_occurrences: usize,
}

impl Admission {
    /// The default of `MEDIA_USAGE_MAX_OCCURRENCES_PER_ENTRY` (see [`crate::settings`]).
    pub const DEFAULT: Admission = Admission { max_occurrences: 1_000 };
    /// The largest configurable limit: 5,000 occurrences of typical size (~350 bytes each as
    /// bound JSON) per variant stay within [`MAX_BOUND_BYTES`]; larger ones are refused by the
    /// byte bound anyway.
    pub const MAX_OCCURRENCES: usize = 5_000;

    /// The most rows one job reads and writes under this limit: both variants' occurrences
    /// written (each its row and its five index entries) and as many of the previous generation
    /// deleted (one written, its row and index entries read), their media lookup, and what
    /// does not grow with them ([`JOB_FIXED_ROWS`]: the claim, the load, the source rows, the work
    /// row, the coverage row and the guard).
    pub const fn job_max_rows(self) -> RowCount {
        let occurrences = 2 * self.max_occurrences as u64;
        RowCount::new(occurrences * (OCCURRENCE_ROWS.written + 1), occurrences * (OCCURRENCE_ROWS.read + 6))
            .plus(JOB_FIXED_ROWS)
    }
}

/// What one occurrence written costs: its row and its five index entries written, and the rows
/// read to place them and to look its media item up.
pub const OCCURRENCE_ROWS: RowCount = RowCount::new(6, 4);
/// The rows of a job that do not grow with its occurrences.
pub const JOB_FIXED_ROWS: RowCount = RowCount::new(100, 500);

/// The most bytes one bound JSON value may have: D1's 2,000,000-byte string limit with room for
/// the rest of the row. A variant's occurrence rows, its source row, and each of a lookup's
/// arrays are bound values.
pub const MAX_BOUND_BYTES: usize = 1_500_000;
/// The most bytes of strings that could be media ids (as a JSON array) one variant may look up:
/// both variants' together always fit the lookup of one job ([`LOOKUP_CAPACITY`]).
pub const MAX_ID_BYTES: usize = 1_400_000;
/// The most bytes of file URL keys (their readings, as a JSON array) one variant may look up:
/// those that name no media item yet are kept on its source row, which must stay within
/// [`MAX_BOUND_BYTES`] with the rest of it.
pub const MAX_KEY_BYTES: usize = 1_000_000;

/// Why a variant of an entry cannot be indexed by one job.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Refusal {
    /// More references than the admission limit allows.
    Occurrences { count: usize, max: usize },
    /// Candidate ids whose lookup would bind more than [`MAX_ID_BYTES`].
    IdBytes { bytes: usize },
    /// File URL keys whose lookup (and pending list) would take more than [`MAX_KEY_BYTES`].
    KeyBytes { bytes: usize },
    /// Occurrence rows that would bind more than [`MAX_BOUND_BYTES`].
    OccurrenceBytes { bytes: usize },
}

impl Refusal {
    /// The refusal in words, naming the limit and the figure.
    pub fn message(&self) -> String {
        match self {
            Refusal::Occurrences { count, max } => format!(
                "The entry references {count} media items; at most {max} per entry can be indexed \
                 (MEDIA_USAGE_MAX_OCCURRENCES_PER_ENTRY)"
            ),
            Refusal::IdBytes { bytes } => format!(
                "The entry holds {bytes} bytes of strings that could be media ids; at most {MAX_ID_BYTES} \
                 can be looked up per entry"
            ),
            Refusal::KeyBytes { bytes } => format!(
                "The entry holds {bytes} bytes of media file URL keys; at most {MAX_KEY_BYTES} can be looked up \
                 per entry"
            ),
            Refusal::OccurrenceBytes { bytes } => {
                format!("The entry's media references take {bytes} bytes to index; at most {MAX_BOUND_BYTES} per entry")
            }
        }
    }
}

/// The bytes of `items` as one JSON array of strings.
pub fn json_array_bytes<'a>(items: impl IntoIterator<Item = &'a str>) -> usize {
    1 + items.into_iter().map(|s| Json::from(s).to_string().len() + 1).sum::<usize>()
}

/// An entry's occurrences as the rows a publish binds (SQL derives the media id of a local
/// reference from its asset id).
pub fn occurrence_rows(source_key: &str, generation: &str, occurrences: &[Occurrence]) -> Vec<OccurrenceRow> {
    occurrences
        .iter()
        .map(|o| OccurrenceRow {
            source_key: source_key.to_owned(),
            generation: generation.to_owned(),
            field_slug: o.field_slug.clone(),
            field_path: o.field_path.clone(),
            occurrence_index: o.occurrence_index,
            reference_type: o.reference_type.as_str(),
            provider: o.provider.clone(),
            provider_asset_id: o.provider_asset_id.clone(),
            media_kind: o.media_kind,
            mime_type: o.mime_type.clone(),
            linked_key: o.linked_key.clone(),
        })
        .collect()
}

/// The lookup's bounds for one variant's candidates: `Err` when they do not fit.
pub fn check_lookup(extracted: &Extracted) -> Result<(), Refusal> {
    let (ids, keys) = extracted.lookups();
    let id_bytes = json_array_bytes(ids);
    if id_bytes > MAX_ID_BYTES {
        return Err(Refusal::IdBytes { bytes: id_bytes });
    }
    let key_bytes = json_array_bytes(keys);
    if key_bytes > MAX_KEY_BYTES {
        return Err(Refusal::KeyBytes { bytes: key_bytes });
    }
    Ok(())
}

/// The count and bound bytes of one variant's occurrences against `admission`.
pub fn check_occurrences(admission: Admission, collection_id: &str, occurrences: &[Occurrence]) -> Result<(), Refusal> {
    if occurrences.len() > admission.max_occurrences {
        return Err(Refusal::Occurrences { count: occurrences.len(), max: admission.max_occurrences });
    }
    let bytes = occurrence_bytes(collection_id, occurrences);
    if bytes > MAX_BOUND_BYTES {
        return Err(Refusal::OccurrenceBytes { bytes });
    }
    Ok(())
}

/// The bytes `occurrences` bind in a publish (with the longest source key and a generation).
fn occurrence_bytes(collection_id: &str, occurrences: &[Occurrence]) -> usize {
    let key = source_key(collection_id, &"x".repeat(32), Variant::DraftOverlay);
    BoundRows::new(&occurrence_rows(&key, &"g".repeat(32), occurrences)).bytes()
}

/// The most bytes one candidate's occurrence can bind: the longest path, a media id, a MIME type
/// and a storage key as long as the API accepts.
fn candidate_row_bytes() -> usize {
    let o = Occurrence {
        field_slug: "f".repeat(64),
        field_path: "p".repeat(super::extract::MAX_PATH_BYTES + 3),
        occurrence_index: 1_000_000,
        reference_type: super::extract::ReferenceType::EmbeddedUrl,
        media_id: Some("m".repeat(64)),
        provider: "local".to_owned(),
        provider_asset_id: "m".repeat(64),
        media_kind: Some("document"),
        mime_type: Some("t".repeat(255)),
        // A file URL's key, as long as a registration takes one.
        linked_key: Some("k".repeat(1024)),
    };
    occurrence_bytes("c".repeat(32).as_str(), std::slice::from_ref(&o))
}

/// Admission before a write of `data` (one variant of an entry of collection `collection_id`,
/// as the API shows it): `Err` with what it passes. Pure unless its structural references and
/// candidate strings together could pass the occurrence limit or the bytes of one bound value:
/// only then does one statement look up which of its strings name media (strings that name
/// nothing never count).
pub async fn admit<E: Executor>(
    exec: &E,
    collection_id: &str,
    fields: &[Field],
    data: &Map<String, Json>,
    rules: &Rules,
    admission: Admission,
) -> Result<Result<(), Refusal>, Error> {
    // What a job reads: the collection's fields (a draft's value of a field deleted since it was
    // saved, or its `_slug`, is not content).
    let is_field = |k: &String| fields.iter().any(|f| f.slug.as_str() == k);
    let data: Cow<'_, Map<String, Json>> = if data.keys().all(is_field) {
        Cow::Borrowed(data)
    } else {
        Cow::Owned(data.iter().filter(|(k, _)| is_field(k)).map(|(k, v)| (k.clone(), v.clone())).collect())
    };
    let extracted = extract(&extraction_fields(fields), &data, rules);
    if let Err(refusal) = check_lookup(&extracted) {
        return Ok(Err(refusal));
    }
    let structural = extracted.resolve(&Library::default());
    let n_candidates = extracted.candidates().len();
    let upper_count = structural.len() + n_candidates;
    let upper_bytes = occurrence_bytes(collection_id, &structural) + n_candidates * candidate_row_bytes();
    if upper_count <= admission.max_occurrences && upper_bytes <= MAX_BOUND_BYTES {
        return Ok(Ok(()));
    }
    let library = lookup(exec, [&extracted]).await?;
    Ok(check_occurrences(admission, collection_id, &extracted.resolve(&library)))
}

/// The media items the candidates of `extracted` name, in one statement (none when they have no
/// candidates). The caller has checked they fit ([`Lookup::add`]).
async fn lookup<'a, E: Executor>(
    exec: &E,
    extracted: impl IntoIterator<Item = &'a Extracted>,
) -> Result<Library, Error> {
    let mut l = Lookup::default();
    for e in extracted {
        l.add(e);
    }
    l.run(exec).await
}

/// The ids and keys of one media lookup statement, gathered from one or more extracted variants
/// while they fit its bound arrays ([`media_repo::LOOKUP_ARRAYS`] of each kind).
#[derive(Debug, Default)]
pub struct Lookup<'a> {
    ids: BTreeSet<&'a str>,
    keys: BTreeSet<&'a str>,
    id_bytes: usize,
    key_bytes: usize,
}

/// The bytes one lookup holds of each kind, with room for the array an item does not fit in.
const LOOKUP_CAPACITY: usize = media_repo::LOOKUP_ARRAYS * (MAX_BOUND_BYTES - LARGEST_ITEM);
/// The largest item a lookup binds: a key of [`super::extract::MAX_KEY_BYTES`] whose every byte
/// JSON escapes as `\u00XX`, quoted, with its separator.
const LARGEST_ITEM: usize = 6 * super::extract::MAX_KEY_BYTES + 3;

impl<'a> Lookup<'a> {
    /// Adds the candidates of `extracted` if, with what was added before, they fit one
    /// statement; says whether they did.
    pub fn try_add(&mut self, extracted: impl Iterator<Item = &'a Extracted> + Clone) -> bool {
        let mut new_ids = BTreeSet::new();
        let mut new_keys = BTreeSet::new();
        for e in extracted.clone() {
            let (ids, keys) = e.lookups();
            new_ids.extend(ids.into_iter().filter(|id| !self.ids.contains(id)));
            new_keys.extend(keys.into_iter().filter(|k| !self.keys.contains(k)));
        }
        let id_bytes = self.id_bytes + json_array_bytes(new_ids.iter().copied()) - 1;
        let key_bytes = self.key_bytes + json_array_bytes(new_keys.iter().copied()) - 1;
        if id_bytes > LOOKUP_CAPACITY || key_bytes > LOOKUP_CAPACITY {
            return false;
        }
        self.ids.extend(new_ids);
        self.keys.extend(new_keys);
        (self.id_bytes, self.key_bytes) = (id_bytes, key_bytes);
        true
    }

    /// Adds the candidates of `extracted`, whether they fit or not.
    pub fn add(&mut self, extracted: &'a Extracted) {
        let (ids, keys) = extracted.lookups();
        for id in ids {
            if self.ids.insert(id) {
                self.id_bytes += Json::from(id).to_string().len() + 1;
            }
        }
        for key in keys {
            if self.keys.insert(key) {
                self.key_bytes += Json::from(key).to_string().len() + 1;
            }
        }
    }

    /// Whether everything added fits one statement.
    pub fn fits(&self) -> bool {
        self.id_bytes <= LOOKUP_CAPACITY && self.key_bytes <= LOOKUP_CAPACITY
    }

    /// Looks up what was added in one statement (none when nothing was); `Library::default()`
    /// for arrays that do not fit (the caller checks [`Lookup::fits`]).
    pub async fn run<E: Executor>(&self, exec: &E) -> Result<Library, Error> {
        if self.ids.is_empty() && self.keys.is_empty() {
            return Ok(Library::default());
        }
        let (Some(ids), Some(keys)) =
            (lookup_arrays(self.ids.iter().copied()), lookup_arrays(self.keys.iter().copied()))
        else {
            return Ok(Library::default());
        };
        Ok(Library::from_lookup(media_repo::lookup(exec, &ids, &keys).await?))
    }
}

/// Splits strings into at most [`media_repo::LOOKUP_ARRAYS`] JSON arrays of at most
/// [`MAX_BOUND_BYTES`] each; `None` when they do not fit.
pub fn lookup_arrays<'a>(
    items: impl IntoIterator<Item = &'a str>,
) -> Option<[Option<String>; media_repo::LOOKUP_ARRAYS]> {
    let mut arrays: Vec<Vec<&str>> = Vec::new();
    let mut bytes = 0usize;
    for item in items {
        // Quoted and escaped, with its separator.
        let size = Json::from(item).to_string().len() + 1;
        match arrays.last_mut() {
            Some(current) if bytes + size <= MAX_BOUND_BYTES => current.push(item),
            _ => {
                arrays.push(vec![item]);
                bytes = 1;
            }
        }
        bytes += size;
    }
    if arrays.len() > media_repo::LOOKUP_ARRAYS || bytes > MAX_BOUND_BYTES {
        return None;
    }
    let mut out: [Option<String>; media_repo::LOOKUP_ARRAYS] = Default::default();
    for (slot, array) in out.iter_mut().zip(arrays) {
        *slot = Some(Json::from(array).to_string());
    }
    Some(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lookup_strings_are_split_into_at_most_two_bounded_arrays() {
        assert_eq!(lookup_arrays([]), Some([None, None]));
        assert_eq!(lookup_arrays(["a", "b\"c"]), Some([Some(r#"["a","b\"c"]"#.to_owned()), None]));
        let item = "x".repeat(100_000);
        // 14 items of 100,003 bytes fit one array; the 15th starts the second.
        let fifteen: Vec<&str> = std::iter::repeat_n(item.as_str(), 15).collect();
        let [first, second] = lookup_arrays(fifteen.iter().copied()).unwrap();
        let count = |a: &Option<String>| serde_json::from_str::<Vec<String>>(a.as_deref().unwrap()).unwrap().len();
        assert_eq!((count(&first), count(&second)), (14, 1));
        assert!(first.as_ref().unwrap().len() <= MAX_BOUND_BYTES);
        let many: Vec<&str> = std::iter::repeat_n(item.as_str(), 28).collect();
        assert!(lookup_arrays(many.iter().copied()).is_some(), "two full arrays");
        let too_many: Vec<&str> = std::iter::repeat_n(item.as_str(), 29).collect();
        assert_eq!(lookup_arrays(too_many.iter().copied()), None);
        let huge = "y".repeat(MAX_BOUND_BYTES);
        assert_eq!(lookup_arrays([huge.as_str()]), None, "one string over the bound fits no array");
    }

    #[test]
    fn what_one_lookup_holds_always_splits_into_its_arrays() {
        // Keys as long as a key may be, escaped six bytes for one: the worst fragmentation.
        let key = "\u{1}".repeat(super::super::extract::MAX_KEY_BYTES);
        let size = Json::from(key.as_str()).to_string().len() + 1;
        let n = LOOKUP_CAPACITY / size;
        let keys: Vec<String> = (0..n).map(|i| format!("{i}{}", &key[i.to_string().len()..])).collect();
        let bytes: usize = keys.iter().map(|k| Json::from(k.as_str()).to_string().len() + 1).sum();
        assert!(Lookup { key_bytes: bytes, ..Lookup::default() }.fits());
        assert!(lookup_arrays(keys.iter().map(String::as_str)).is_some());
    }

    #[test]
    fn two_variants_at_the_admission_limits_fit_one_lookup() {
        // Each variant's distinct ids and keys at their limits, none shared.
        let lookup = Lookup { id_bytes: 2 * MAX_ID_BYTES, key_bytes: 2 * MAX_KEY_BYTES, ..Lookup::default() };
        assert!(lookup.fits());
        let over = Lookup { id_bytes: 2 * MAX_BOUND_BYTES, ..Lookup::default() };
        assert!(!over.fits(), "the capacity leaves room for fragmentation");
    }

    #[test]
    fn json_array_bytes_are_the_serialized_length() {
        let items = ["a", "b\"", "é"];
        assert_eq!(json_array_bytes(items), Json::from(items.to_vec()).to_string().len());
    }

    #[test]
    fn a_candidate_row_is_the_largest_one_occurrence_can_bind() {
        assert!(candidate_row_bytes() > super::super::extract::MAX_PATH_BYTES + 64 + 255 + 1024);
        assert!(candidate_row_bytes() < 3_000);
    }
}
