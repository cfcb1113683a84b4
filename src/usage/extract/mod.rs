//! Extraction of media references from an entry's field values under the reference rules.
//! Pure: field definitions and JSON values in, structural occurrences and candidate strings out;
//! the candidates become occurrences once a lookup says which media items they name.
//!
//! `text` reads one string (the spellings a browser reads), `path` builds field paths lazily,
//! `v1` keeps the first rules (for upgrades from indexes built under them).

mod path;
mod text;
mod v1;

use std::collections::{BTreeSet, HashMap};
use std::rc::Rc;

use serde::Serialize;
use serde_json::{Map, Value as Json};
use sha2::Digest;

use crate::model::field::{Field, FieldType};
use crate::model::ident::Ident;
use path::{PathId, Paths};
pub use path::{MAX_KEY_CHARS, MAX_PATH_BYTES};
use text::{Public, Scanner};
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
}

/// A field that can hold media references, with its media sub-fields for repeaters.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ExtractionField {
    pub slug: Ident,
    pub field_type: FieldType,
    /// The `image` and `file` sub-fields of a repeater, sorted by slug.
    pub media_sub_fields: Vec<MediaSubField>,
}

/// A repeater sub-field that holds a media reference.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MediaSubField {
    pub slug: Ident,
    /// [`FieldType::Image`] or [`FieldType::File`].
    pub field_type: FieldType,
}

/// How a field or sub-field of this type holds a media reference, if it does (portable text
/// and repeaters hold them inside their values).
fn reference_type(t: FieldType) -> Option<(ReferenceType, Option<&'static str>)> {
    match t {
        FieldType::Image => Some((ReferenceType::ImageField, Some("image"))),
        FieldType::File => Some((ReferenceType::FileField, None)),
        _ => None,
    }
}

/// The extraction schema of a collection: extraction fields sorted by slug.
pub fn extraction_fields(fields: &[Field]) -> Vec<ExtractionField> {
    let mut out: Vec<ExtractionField> = fields
        .iter()
        .filter_map(|f| match f.field_type {
            FieldType::Image | FieldType::File | FieldType::PortableText => {
                Some(ExtractionField { slug: f.slug.clone(), field_type: f.field_type, media_sub_fields: Vec::new() })
            }
            FieldType::Repeater => {
                let mut subs: Vec<MediaSubField> = f
                    .sub_fields
                    .iter()
                    .filter(|s| reference_type(s.field_type).is_some())
                    .map(|s| MediaSubField { slug: s.slug.clone(), field_type: s.field_type })
                    .collect();
                subs.sort_by(|a, b| a.slug.cmp(&b.slug));
                subs.dedup_by(|a, b| a.slug == b.slug);
                (!subs.is_empty()).then(|| ExtractionField {
                    slug: f.slug.clone(),
                    field_type: FieldType::Repeater,
                    media_sub_fields: subs,
                })
            }
            _ => None,
        })
        .collect();
    out.sort_by(|a, b| a.slug.cmp(&b.slug));
    out
}

/// Whether adding this field changes what the extractor sees (schema changes that matter).
pub fn is_extraction_field(f: &Field) -> bool {
    !extraction_fields(std::slice::from_ref(f)).is_empty()
}

/// Normalises a MIME type: lower-cased, parameters stripped; `None` unless it has a `/`.
pub fn normalize_mime(raw: Option<&str>) -> Option<String> {
    let m = raw?.split(';').next()?.trim().to_ascii_lowercase();
    (m.contains('/') && !m.starts_with('/') && !m.ends_with('/')).then_some(m)
}

const DOCUMENT_TYPES: &[&str] = &[
    "application/pdf",
    "application/msword",
    "application/rtf",
    "application/vnd.ms-excel",
    "application/vnd.ms-powerpoint",
];
const ARCHIVE_TYPES: &[&str] = &[
    "application/zip",
    "application/gzip",
    "application/x-tar",
    "application/x-7z-compressed",
    "application/x-rar-compressed",
    "application/vnd.rar",
];

/// The media kind of a normalised MIME type.
pub fn media_kind(mime: &str) -> &'static str {
    if mime.starts_with("image/") {
        "image"
    } else if mime.starts_with("video/") {
        "video"
    } else if mime.starts_with("audio/") {
        "audio"
    } else if mime.starts_with("font/") || mime.starts_with("application/font-") {
        "font"
    } else if mime.starts_with("text/") {
        "text"
    } else if DOCUMENT_TYPES.contains(&mime) || mime.starts_with("application/vnd.openxmlformats-officedocument.") {
        "document"
    } else if ARCHIVE_TYPES.contains(&mime) {
        "archive"
    } else {
        "other"
    }
}

/// Whether `id` is a usable asset id for `provider`: a trimmed, non-empty string that is not
/// URL-like and, for local media, not a path.
pub fn valid_id(id: &str, provider: &str) -> bool {
    let id = id.trim();
    if id.is_empty() || id.starts_with("//") || id.starts_with("/_emdash/api/media/file/") || is_url_like(id) {
        return false;
    }
    provider != "local" || !id.contains('/')
}

/// `^[a-z][a-z0-9+.-]*:` (case-insensitive): a URL scheme.
fn is_url_like(id: &str) -> bool {
    let mut chars = id.chars();
    if !chars.next().is_some_and(|c| c.is_ascii_alphabetic()) {
        return false;
    }
    for c in chars {
        if c == ':' {
            return true;
        }
        if !(c.is_ascii_alphanumeric() || matches!(c, '+' | '.' | '-')) {
            return false;
        }
    }
    false
}

/// A parsed media reference value.
struct Reference {
    provider: String,
    id: String,
    mime: Option<String>,
}

/// An image/file value: a bare string is a legacy local id; an object uses `provider`
/// (default `local`) and `id`. `external` and URL-only objects are never indexed.
fn parse_reference(value: &Json) -> Option<Reference> {
    let (provider, id, mime) = match value {
        Json::String(s) => ("local".to_owned(), s.trim().to_owned(), None),
        Json::Object(o) => {
            let provider = match o.get("provider") {
                None | Some(Json::Null) => "local".to_owned(),
                Some(Json::String(p)) if !p.trim().is_empty() => p.trim().to_owned(),
                Some(Json::String(_)) => "local".to_owned(),
                Some(_) => return None,
            };
            let id = o.get("id")?.as_str()?.trim().to_owned();
            (provider, id, o.get("mimeType").and_then(Json::as_str).map(str::to_owned))
        }
        _ => return None,
    };
    if provider == "external" || !valid_id(&id, &provider) {
        return None;
    }
    Some(Reference { provider, id, mime })
}

/// A structural reference (a field value, an asset object) at a recorded path.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Structural {
    path: PathId,
    reference_type: ReferenceType,
    media_id: Option<String>,
    provider: String,
    provider_asset_id: String,
    media_kind: Option<&'static str>,
    mime_type: Option<String>,
}

fn structural(
    path: PathId,
    reference_type: ReferenceType,
    r: Reference,
    fallback_kind: Option<&'static str>,
) -> Structural {
    let mime_type = normalize_mime(r.mime.as_deref());
    let media_kind = mime_type.as_deref().map(media_kind).or(fallback_kind);
    Structural {
        path,
        reference_type,
        media_id: (r.provider == "local").then(|| r.id.clone()),
        provider: r.provider,
        provider_asset_id: r.id,
        media_kind,
        mime_type,
    }
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
    pub mime_type: Option<String>,
}

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
            let m = MediaRef { id: id.clone(), mime_type };
            lib.by_key.insert(key, m.clone());
            lib.by_id.insert(id, m);
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
    /// of `library` (one per path and item: a file URL's rather than an id's when both name it
    /// there). Indexes number the occurrences of each written path, structural ones first, so a
    /// path and an index name one occurrence whatever the data holds. Sorted, so equal inputs
    /// give equal outputs.
    pub fn resolve(&self, library: &Library) -> Vec<Occurrence> {
        self.resolve_counted(library).0
    }

    /// [`Extracted::resolve`], and the work it did: the paths it wrote out.
    pub fn resolve_counted(&self, library: &Library) -> (Vec<Occurrence>, u64) {
        let mut work = 0u64;
        let mut named: HashMap<(PathId, &str), (&MediaRef, ReferenceType)> = HashMap::new();
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
            let slot = named.entry((c.path, m.id.as_str())).or_insert((m, kind));
            if kind == ReferenceType::EmbeddedUrl {
                slot.1 = kind;
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
                }
            })
            .collect();
        structural.sort();
        structural.dedup();
        let mut embedded: Vec<Occurrence> = named
            .into_iter()
            .map(|((path, _), (m, kind))| {
                let (field_slug, field_path) = written(path);
                let mime_type = normalize_mime(m.mime_type.as_deref());
                Occurrence {
                    field_slug,
                    field_path,
                    occurrence_index: 0,
                    reference_type: kind,
                    media_id: Some(m.id.clone()),
                    provider: "local".to_owned(),
                    provider_asset_id: m.id.clone(),
                    media_kind: mime_type.as_deref().map(media_kind),
                    mime_type,
                }
            })
            .collect();
        embedded.sort_by(|a, b| (&a.field_path, &a.media_id).cmp(&(&b.field_path, &b.media_id)));
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
    let mut w = Walk {
        scanner: Scanner::new(&rules.public),
        out: Extracted::default(),
        frames: Vec::new(),
        recorded: 0,
        names: Vec::new(),
    };
    for (key, value) in data {
        w.frames.push(Frame { seg: Seg::Key(key), node: None });
        match fields.iter().find(|f| f.slug.as_str() == key) {
            Some(f) => match f.field_type {
                FieldType::Image | FieldType::File => w.media_value(f.field_type, value),
                FieldType::Repeater => match value.as_array() {
                    Some(items) => {
                        for (i, item) in items.iter().enumerate() {
                            w.enter(Seg::Index(i));
                            match item.as_object() {
                                Some(obj) => {
                                    for (k, v) in obj {
                                        w.enter(Seg::Key(k));
                                        w.object_key(k);
                                        match f.media_sub_fields.iter().find(|s| s.slug.as_str() == k) {
                                            Some(sub) => w.media_value(sub.field_type, v),
                                            None => w.value(v, false, None),
                                        }
                                        w.leave();
                                    }
                                }
                                None => w.value(item, false, None),
                            }
                            w.leave();
                        }
                    }
                    None => w.value(value, false, None),
                },
                FieldType::PortableText => w.value(value, true, None),
                _ => w.value(value, false, None),
            },
            None => w.value(value, false, None),
        }
        w.leave();
    }
    let mut out = w.out;
    out.work += w.scanner.work;
    out
}

/// One step of the path the walk is at, borrowed from the data.
#[derive(Debug, Clone, Copy)]
enum Seg<'d> {
    Key(&'d str),
    Index(usize),
}

#[derive(Debug)]
struct Frame<'d> {
    seg: Seg<'d>,
    /// Its recorded node, once a reference was found at or below it.
    node: Option<PathId>,
}

struct Walk<'d, 'r> {
    scanner: Scanner<'r>,
    out: Extracted,
    /// The path the walk is at.
    frames: Vec<Frame<'d>>,
    /// How many frames (from the top) have their node recorded.
    recorded: usize,
    /// What the string being read names (reused).
    names: Vec<Names>,
}

impl<'d> Walk<'d, '_> {
    fn enter(&mut self, seg: Seg<'d>) {
        self.frames.push(Frame { seg, node: None });
    }

    fn leave(&mut self) {
        self.frames.pop();
        self.recorded = self.recorded.min(self.frames.len());
    }

    /// The node of the path the walk is at, recording the frames not recorded yet.
    fn here(&mut self) -> PathId {
        for n in self.recorded..self.frames.len() {
            let parent = n.checked_sub(1).and_then(|p| self.frames[p].node);
            let node = match self.frames[n].seg {
                Seg::Key(k) => {
                    self.out.work += k.len().min(4 * MAX_KEY_CHARS) as u64;
                    self.out.paths.key(parent, k)
                }
                Seg::Index(i) => self.out.paths.index(parent, i),
            };
            self.frames[n].node = Some(node);
        }
        self.recorded = self.frames.len();
        self.frames.last().and_then(|f| f.node).unwrap_or_default()
    }

    /// Candidates for what the scanner found, at the path the walk is at.
    fn push_names(&mut self, within: Option<&Rc<str>>) {
        if self.names.is_empty() {
            return;
        }
        let path = self.here();
        for names in self.names.drain(..) {
            self.out.candidates.push(Candidate { path, names, within: within.cloned() });
        }
    }

    /// An object key (below the top level): a media id when it is one.
    fn object_key(&mut self, k: &str) {
        self.scanner.key(k, &mut self.names);
        self.push_names(None);
    }

    fn push_structural(&mut self, kind: ReferenceType, r: Reference, fallback: Option<&'static str>) {
        let path = self.here();
        self.out.structural.push(structural(path, kind, r, fallback));
    }

    /// An `image`/`file` field or sub-field value: a reference by its type when it is one;
    /// the rest of it (other keys of the object, or a value that is no reference) is walked.
    fn media_value(&mut self, field_type: FieldType, value: &'d Json) {
        let parsed = reference_type(field_type).zip(parse_reference(value));
        let Some(((kind, fallback), r)) = parsed else {
            return self.value(value, false, None);
        };
        let media_id: Option<Rc<str>> = (r.provider == "local").then(|| r.id.as_str().into());
        self.push_structural(kind, r, fallback);
        if let Json::Object(o) = value {
            for (k, v) in o.iter().filter(|(k, _)| k.as_str() != "id") {
                self.enter(Seg::Key(k));
                self.object_key(k);
                self.value(v, false, media_id.as_ref());
                self.leave();
            }
        }
    }

    /// Any value, at any depth: asset objects are references; strings and keys may name media.
    fn value(&mut self, value: &'d Json, in_portable_text: bool, within: Option<&Rc<str>>) {
        match value {
            Json::String(s) => {
                self.scanner.string(s, &mut self.names);
                self.push_names(within);
            }
            Json::Array(items) => {
                for (i, item) in items.iter().enumerate() {
                    self.enter(Seg::Index(i));
                    self.value(item, in_portable_text, within);
                    self.leave();
                }
            }
            Json::Object(o) => {
                // An external value's ids are another provider's: never read as local ids.
                let skipped: &[&str] = if is_external(o) { &["id", "_ref"] } else { &[] };
                let asset = o.get("asset").and_then(Json::as_object);
                let found = asset.and_then(asset_reference);
                // The key the reference was read from (the asset id of its provider, whichever
                // provider) and the local media it names.
                let consumed: Option<(&str, Option<Rc<str>>)> =
                    found.as_ref().map(|(key, r)| (*key, (r.provider == "local").then(|| r.id.as_str().into())));
                let asset_skips: &[&str] = if asset.is_some_and(is_external) { &["id", "_ref"] } else { &[] };
                if let Some((key, r)) = found {
                    let is_image = o.get("_type").and_then(Json::as_str) == Some("image");
                    let (kind, fallback) = if in_portable_text && is_image {
                        (ReferenceType::PortableTextImage, Some("image"))
                    } else {
                        (ReferenceType::EmbeddedAsset, None)
                    };
                    self.enter(Seg::Key("asset"));
                    self.enter(Seg::Key(key));
                    self.push_structural(kind, r, fallback);
                    self.leave();
                    self.leave();
                }
                for (k, v) in o.iter().filter(|(k, _)| !skipped.contains(&k.as_str())) {
                    self.enter(Seg::Key(k));
                    self.object_key(k);
                    match (k.as_str(), asset) {
                        ("asset", Some(a)) => {
                            let inner = consumed.as_ref().and_then(|(_, m)| m.as_ref()).or(within);
                            for (ak, av) in a.iter() {
                                let skip = consumed.as_ref().is_some_and(|(key, _)| ak.as_str() == *key)
                                    || asset_skips.contains(&ak.as_str());
                                if skip {
                                    continue;
                                }
                                self.enter(Seg::Key(ak));
                                self.object_key(ak);
                                self.value(av, in_portable_text, inner);
                                self.leave();
                            }
                        }
                        _ => self.value(v, in_portable_text, within),
                    }
                    self.leave();
                }
            }
            _ => {}
        }
    }
}

/// `provider: "external"`: the object's ids are the external provider's.
fn is_external(o: &Map<String, Json>) -> bool {
    o.get("provider").and_then(Json::as_str).is_some_and(|p| p.trim() == "external")
}

/// The reference an `asset` object makes by `_ref` (else `id`), under the provider rules.
fn asset_reference(asset: &Map<String, Json>) -> Option<(&'static str, Reference)> {
    let provider = match asset.get("provider") {
        None | Some(Json::Null) => "local".to_owned(),
        Some(Json::String(p)) if !p.trim().is_empty() => p.trim().to_owned(),
        Some(Json::String(_)) => "local".to_owned(),
        Some(_) => return None,
    };
    if provider == "external" {
        return None;
    }
    let pick = |key: &str| {
        asset.get(key).and_then(Json::as_str).map(str::trim).filter(|id| valid_id(id, &provider)).map(str::to_owned)
    };
    let (id, key) = match pick("_ref") {
        Some(id) => (id, "_ref"),
        None => (pick("id")?, "id"),
    };
    let mime = asset.get("mimeType").and_then(Json::as_str).map(str::to_owned);
    Some((key, Reference { provider, id, mime }))
}

#[cfg(test)]
mod tests;
