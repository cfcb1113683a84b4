//! Extraction of media references from an entry's field values under the reference rules.
//! Pure: field definitions and JSON values in, structural occurrences and candidate strings out;
//! the candidates become occurrences once a lookup says which media items they name.
//!
//! `text` reads one string (the spellings a browser reads), `path` builds field paths lazily,
//! `v1` keeps the first rules (for upgrades from indexes built under them).

mod fields;
mod path;
mod reference;
mod relink;
mod text;
mod v1;
mod walk;

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::rc::Rc;

use serde::Serialize;
use serde_json::{Map, Value as Json};
use sha2::Digest;

pub use fields::{extraction_fields, is_extraction_field, ExtractionField, MediaSubField};
use path::{PathId, Paths};
pub use path::{MAX_KEY_CHARS, MAX_PATH_BYTES};
use reference::Structural;
pub use reference::{media_kind, normalize_mime, valid_id};
pub use relink::KeyChange;
use text::Public;
pub use text::{FILE_ROUTE, MAX_KEY_BYTES};

/// The version of the reference rules. An index built under other rules (or another
/// `MEDIA_PUBLIC_URL`) is not trusted: its coverage reads `stale` until re-projected.
pub const RULES_VERSION: u32 = 3;

/// What counts as a use: the rules version and where `MEDIA_PUBLIC_URL` serves files.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Rules {
    version: u32,
    public: Public,
    id: String,
}

impl Rules {
    /// The rules of this version, for a deployment whose files may also be served under
    /// `media_public_url`.
    pub fn current(media_public_url: Option<&str>) -> Rules {
        let public = Public::parse(media_public_url);
        let id = match public.canonical() {
            None => RULES_VERSION.to_string(),
            Some(p) => {
                let digest = sha2::Sha256::digest(p.as_bytes());
                format!("{RULES_VERSION}+{}", &hex::encode(digest)[..12])
            }
        };
        Rules { version: RULES_VERSION, public, id }
    }

    /// The first rules (fields, repeater sub-fields and top-level Portable Text image blocks
    /// only), which older indexes were built with; kept so upgrades from them are tested.
    pub fn v1() -> Rules {
        Rules { version: 1, public: Public::None, id: "1".to_owned() }
    }

    /// The identity stored with an index built under these rules.
    pub fn id(&self) -> &str {
        &self.id
    }
}

impl Default for Rules {
    fn default() -> Rules {
        Rules::current(None)
    }
}

/// How a reference was found.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum ReferenceType {
    /// An `image` field (or repeater sub-field) holds it.
    ImageField,
    /// A `file` field (or repeater sub-field) holds it.
    FileField,
    /// A Portable Text image block (`_type: "image"` with an `asset`), at any depth of the text.
    PortableTextImage,
    /// Any other object whose `asset` names it by `_ref` or `id` (custom blocks, galleries, JSON).
    EmbeddedAsset,
    /// A string value equal to its media id.
    EmbeddedId,
    /// A string value containing one of its file URLs.
    EmbeddedUrl,
}

impl ReferenceType {
    pub const ALL: &'static [ReferenceType] = &[
        ReferenceType::ImageField,
        ReferenceType::FileField,
        ReferenceType::PortableTextImage,
        ReferenceType::EmbeddedAsset,
        ReferenceType::EmbeddedId,
        ReferenceType::EmbeddedUrl,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            ReferenceType::ImageField => "image_field",
            ReferenceType::FileField => "file_field",
            ReferenceType::PortableTextImage => "portable_text_image",
            ReferenceType::EmbeddedAsset => "embedded_asset",
            ReferenceType::EmbeddedId => "embedded_id",
            ReferenceType::EmbeddedUrl => "embedded_url",
        }
    }
}

/// One media reference at one place in an entry.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Occurrence {
    pub field_slug: String,
    pub field_path: String,
    /// 0, or the n-th distinct media item one string names (a text with several file URLs).
    pub occurrence_index: i64,
    pub reference_type: ReferenceType,
    /// The local media id, or `None` for other providers.
    pub media_id: Option<String>,
    pub provider: String,
    pub provider_asset_id: String,
    pub media_kind: Option<&'static str>,
    pub mime_type: Option<String>,
    /// The storage key a file URL names (`embedded_url` only): the item's current file or one of
    /// its versions. `None` for every other kind.
    pub linked_key: Option<String>,
}

/// What an entry's data holds: the references its structure makes (fields, asset objects),
/// the strings that name a media item if the library has it (ids, file URL keys), and the
/// paths they were found at.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Extracted {
    paths: Paths,
    structural: Vec<Structural>,
    candidates: Vec<Candidate>,
    work: u64,
}

/// A string that is a reference only if the media library has what it names.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Candidate {
    path: PathId,
    pub names: Names,
    /// The media id of the field value or asset object the string sits in, if any: a string
    /// naming that same item there is the same reference, not another one.
    within: Option<Rc<str>>,
}

/// What a candidate string names.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Names {
    /// A media id (a whole token of the string, or of an object key).
    Id(String),
    /// One file URL's storage key, in the readings it may have (as written, percent-decoded,
    /// without trailing punctuation); the first the library has wins.
    Key(Vec<String>),
}

/// A media item as the resolution found it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MediaRef {
    pub id: String,
    /// The type of the file found: the item's, or the version's a key names.
    pub mime_type: Option<String>,
    /// The storage key it was found by (`None`: found by its id).
    pub key: Option<String>,
}

/// What names one item at one path: the item as first found, and the keys of the file URLs that
/// name it there (each with the file it found).
type Naming<'a> = (&'a MediaRef, BTreeMap<&'a str, &'a MediaRef>);

/// The media items the candidates' ids and keys name, as found in the library.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Library {
    pub by_id: HashMap<String, MediaRef>,
    pub by_key: HashMap<String, MediaRef>,
}

impl Library {
    /// Indexes the media rows a lookup returned (`(id, storage_key, mime_type)`).
    pub fn from_rows(rows: impl IntoIterator<Item = (String, String, Option<String>)>) -> Library {
        let mut lib = Library::default();
        for (id, key, mime_type) in rows {
            lib.by_key.insert(key.clone(), MediaRef { id: id.clone(), mime_type: mime_type.clone(), key: Some(key) });
            lib.by_id.insert(id.clone(), MediaRef { id, mime_type, key: None });
        }
        lib
    }

    /// Indexes what a lookup returned: media rows, and versions (`version` set: an earlier file
    /// of the item `id`, found by its key only).
    pub fn from_lookup(rows: impl IntoIterator<Item = (String, String, Option<String>, bool)>) -> Library {
        let mut lib = Library::default();
        for (id, key, mime_type, version) in rows {
            lib.by_key.insert(key.clone(), MediaRef { id: id.clone(), mime_type: mime_type.clone(), key: Some(key) });
            if !version {
                lib.by_id.insert(id.clone(), MediaRef { id, mime_type, key: None });
            }
        }
        lib
    }
}

impl Extracted {
    /// Structural references (each an occurrence, whatever the library holds).
    pub fn structural_count(&self) -> usize {
        self.structural.len()
    }

    /// The candidate strings (an occurrence each at most, when the library has what they name).
    pub fn candidates(&self) -> &[Candidate] {
        &self.candidates
    }

    /// What extracting cost: bytes examined, decoded and copied, and paths written out (by
    /// [`Extracted::resolve`] too). It grows linearly with the data, whatever the data.
    pub fn work(&self) -> u64 {
        self.work
    }

    /// The ids and storage keys the candidates name, each once and sorted (the lookup's binds).
    pub fn lookups(&self) -> (BTreeSet<&str>, BTreeSet<&str>) {
        let (mut ids, mut keys) = (BTreeSet::new(), BTreeSet::new());
        for c in &self.candidates {
            match &c.names {
                Names::Id(id) => {
                    ids.insert(id.as_str());
                }
                Names::Key(readings) => keys.extend(readings.iter().map(String::as_str)),
            }
        }
        (ids, keys)
    }

    /// The readings of the file URLs that name no media item of `library` (each once, sorted):
    /// kept with the source, so registering a media item under one of them re-queues it.
    pub fn pending_keys(&self, library: &Library) -> Vec<String> {
        let mut out = BTreeSet::new();
        for c in &self.candidates {
            if let Names::Key(readings) = &c.names {
                if !readings.iter().any(|k| library.by_key.contains_key(k)) {
                    out.extend(readings.iter().cloned());
                }
            }
        }
        out.into_iter().collect()
    }

    /// The entry's occurrences: the structural ones, and each candidate that names a media item
    /// of `library` (one per path, item and linked key: a file URL's rather than an id's when both
    /// name it there, and one per key when file URLs name it there by its current key and by a
    /// version's, so that each key a path links is known). Indexes number the occurrences of each written path, structural ones first, so a
    /// path and an index name one occurrence whatever the data holds. Sorted, so equal inputs
    /// give equal outputs.
    pub fn resolve(&self, library: &Library) -> Vec<Occurrence> {
        self.resolve_counted(library).0
    }

    /// [`Extracted::resolve`], and the work it did: the paths it wrote out.
    pub fn resolve_counted(&self, library: &Library) -> (Vec<Occurrence>, u64) {
        let mut work = 0u64;
        // Per path and item: what names it there, by id or by the keys of file URLs.
        let mut named: HashMap<(PathId, &str), Naming<'_>> = HashMap::new();
        for c in &self.candidates {
            let (found, kind) = match &c.names {
                Names::Id(id) => (library.by_id.get(id), ReferenceType::EmbeddedId),
                Names::Key(readings) => {
                    (readings.iter().find_map(|k| library.by_key.get(k)), ReferenceType::EmbeddedUrl)
                }
            };
            let Some(m) = found else { continue };
            if c.within.as_deref() == Some(m.id.as_str()) {
                continue;
            }
            let slot = named.entry((c.path, m.id.as_str())).or_insert((m, BTreeMap::new()));
            if let (ReferenceType::EmbeddedUrl, Some(key)) = (kind, m.key.as_deref()) {
                slot.1.insert(key, m);
            }
        }
        let mut rendered: Vec<Option<(String, String)>> = vec![None; self.paths.count()];
        let mut written = |id: PathId| {
            rendered[id as usize]
                .get_or_insert_with(|| {
                    let (path, cost) = self.paths.render(id);
                    work += cost;
                    (self.paths.field(id), path)
                })
                .clone()
        };
        let mut structural: Vec<Occurrence> = self
            .structural
            .iter()
            .map(|s| {
                let (field_slug, field_path) = written(s.path);
                Occurrence {
                    field_slug,
                    field_path,
                    occurrence_index: 0,
                    reference_type: s.reference_type,
                    media_id: s.media_id.clone(),
                    provider: s.provider.clone(),
                    provider_asset_id: s.provider_asset_id.clone(),
                    media_kind: s.media_kind,
                    mime_type: s.mime_type.clone(),
                    linked_key: None,
                }
            })
            .collect();
        structural.sort();
        structural.dedup();
        let mut embedded: Vec<Occurrence> = Vec::with_capacity(named.len());
        for ((path, _), (m, keys)) in named {
            let (field_slug, field_path) = written(path);
            let one = |m: &MediaRef, kind: ReferenceType, key: Option<&str>| {
                let mime_type = normalize_mime(m.mime_type.as_deref());
                Occurrence {
                    field_slug: field_slug.clone(),
                    field_path: field_path.clone(),
                    occurrence_index: 0,
                    reference_type: kind,
                    media_id: Some(m.id.clone()),
                    provider: "local".to_owned(),
                    provider_asset_id: m.id.clone(),
                    media_kind: mime_type.as_deref().map(media_kind),
                    mime_type,
                    linked_key: key.map(str::to_owned),
                }
            };
            if keys.is_empty() {
                embedded.push(one(m, ReferenceType::EmbeddedId, None));
            }
            embedded.extend(keys.into_iter().map(|(key, m)| one(m, ReferenceType::EmbeddedUrl, Some(key))));
        }
        embedded.sort_by(|a, b| {
            (&a.field_path, &a.media_id, &a.linked_key).cmp(&(&b.field_path, &b.media_id, &b.linked_key))
        });
        let mut next_index: HashMap<&str, i64> = HashMap::new();
        let indexes: Vec<i64> = structural
            .iter()
            .chain(&embedded)
            .map(|o| {
                let i = next_index.entry(o.field_path.as_str()).or_insert(0);
                *i += 1;
                *i - 1
            })
            .collect();
        drop(next_index);
        let mut out: Vec<Occurrence> = structural.into_iter().chain(embedded).collect();
        for (o, i) in out.iter_mut().zip(indexes) {
            o.occurrence_index = i;
        }
        out.sort();
        (out, work)
    }
}

/// Extracts the references of an entry's data under `rules`: the structural ones as
/// occurrences, the strings that may name media as candidates.
pub fn extract(fields: &[ExtractionField], data: &Map<String, Json>, rules: &Rules) -> Extracted {
    if rules.version == 1 {
        return v1::extract(fields, data);
    }
    walk::extract(fields, data, &rules.public)
}

#[cfg(test)]
mod tests;
