//! Extraction of media references from an entry's field values.
//! Pure: field definitions and JSON values in, occurrences out.

use std::collections::{BTreeMap, BTreeSet, HashMap};

use serde::Serialize;
use serde_json::{Map, Value as Json};
use sha2::Digest;

use crate::model::field::{Field, FieldType};
use crate::model::ident::Ident;

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

/// The path of the file route, after which a URL names a storage key.
pub const FILE_ROUTE: &str = "/_emdash/api/media/file/";
/// The version of the reference rules. An index built under other rules (or another
/// `MEDIA_PUBLIC_URL`) is not trusted: its coverage reads `stale` until re-projected.
pub const RULES_VERSION: u32 = 2;

/// What counts as a use: the rules version and the public URL prefix files are served under.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Rules {
    version: u32,
    /// `MEDIA_PUBLIC_URL` without its scheme and trailing `/`, then `/` (e.g.
    /// `//cdn.example.com/media/`), so `http:`, `https:` and scheme-relative URLs all match.
    public_prefix: Option<String>,
    id: String,
}

impl Rules {
    /// The rules of this version, for a deployment whose files may also be served under
    /// `media_public_url`.
    pub fn current(media_public_url: Option<&str>) -> Rules {
        let public_prefix = media_public_url.map(str::trim).filter(|u| !u.is_empty()).map(|u| {
            let without_scheme = match u.find("//") {
                Some(i) if u[..i].ends_with(':') => &u[i..],
                _ => u,
            };
            format!("{}/", without_scheme.trim_end_matches('/'))
        });
        let id = match &public_prefix {
            None => RULES_VERSION.to_string(),
            Some(p) => {
                let digest = sha2::Sha256::digest(p.as_bytes());
                format!("{RULES_VERSION}+{}", &hex::encode(digest)[..12])
            }
        };
        Rules { version: RULES_VERSION, public_prefix, id }
    }

    /// The first rules (fields, repeater sub-fields and top-level Portable Text image blocks
    /// only), which older indexes were built with; kept so upgrades from them are tested.
    pub fn v1() -> Rules {
        Rules { version: 1, public_prefix: None, id: "1".to_owned() }
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

fn occurrence(
    field_slug: &str,
    field_path: String,
    reference_type: ReferenceType,
    r: Reference,
    fallback_kind: Option<&'static str>,
) -> Occurrence {
    let mime_type = normalize_mime(r.mime.as_deref());
    let media_kind = mime_type.as_deref().map(media_kind).or(fallback_kind);
    Occurrence {
        field_slug: field_slug.to_owned(),
        field_path,
        occurrence_index: 0,
        reference_type,
        media_id: (r.provider == "local").then(|| r.id.clone()),
        provider: r.provider,
        provider_asset_id: r.id,
        media_kind,
        mime_type,
    }
}

/// What an entry's data holds: the references its structure makes (fields, asset objects),
/// and the strings that name a media item if the library has it (ids, file URLs).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Extracted {
    pub occurrences: Vec<Occurrence>,
    pub candidates: Vec<Candidate>,
}

/// A string that is a reference only if the media library has what it names.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub struct Candidate {
    pub field_slug: String,
    pub field_path: String,
    pub names: Names,
    /// The media id of the field value or asset object the string sits in, if any: a string
    /// naming that same item there is the same reference, not another one.
    pub within: Option<String>,
}

/// What a candidate string names.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub enum Names {
    /// A media id (the whole string, trimmed).
    Id(String),
    /// One file URL's storage key, in the readings it may have (as written, percent-decoded,
    /// without trailing punctuation); the first the library has wins.
    Key(Vec<String>),
}

impl Extracted {
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
    /// of `library` (one per path and item; a string naming several items has one occurrence
    /// index each). Sorted, so equal inputs give equal outputs.
    pub fn resolve(&self, library: &Library) -> Vec<Occurrence> {
        let mut out = self.occurrences.clone();
        let mut named: BTreeMap<(&str, &str), (&Candidate, &MediaRef, ReferenceType)> = BTreeMap::new();
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
            named.entry((c.field_path.as_str(), m.id.as_str())).or_insert((c, m, kind));
        }
        // Indexes on a path follow any structural occurrence there, so a path and an index name
        // one occurrence whatever the data holds.
        let mut index_on_path: HashMap<&str, i64> = HashMap::new();
        for o in &self.occurrences {
            let next = index_on_path.entry(o.field_path.as_str()).or_insert(0);
            *next = (*next).max(o.occurrence_index + 1);
        }
        for ((path, _), (c, m, kind)) in named {
            let i = index_on_path.entry(path).or_insert(0);
            let mime_type = normalize_mime(m.mime_type.as_deref());
            out.push(Occurrence {
                field_slug: c.field_slug.clone(),
                field_path: c.field_path.clone(),
                occurrence_index: *i,
                reference_type: kind,
                media_id: Some(m.id.clone()),
                provider: "local".to_owned(),
                provider_asset_id: m.id.clone(),
                media_kind: mime_type.as_deref().map(media_kind),
                mime_type,
            });
            *i += 1;
        }
        out.sort();
        out.dedup();
        out
    }
}

/// Extracts the references of an entry's data under `rules`: the structural ones as
/// occurrences, the strings that may name media as candidates.
pub fn extract(fields: &[ExtractionField], data: &Map<String, Json>, rules: &Rules) -> Extracted {
    if rules.version == 1 {
        return Extracted { occurrences: extract_v1(fields, data), candidates: Vec::new() };
    }
    let mut w = Walk { rules, out: Extracted::default(), field_slug: String::new() };
    for (key, value) in data {
        w.field_slug.clone_from(key);
        let path = key.clone();
        match fields.iter().find(|f| f.slug.as_str() == key) {
            Some(f) => match f.field_type {
                FieldType::Image | FieldType::File => w.media_value(&path, f.field_type, value),
                FieldType::Repeater => match value.as_array() {
                    Some(items) => {
                        for (i, item) in items.iter().enumerate() {
                            let item_path = format!("{path}[{i}]");
                            match item.as_object() {
                                Some(obj) => {
                                    for (k, v) in obj {
                                        let p = child_path(&item_path, k);
                                        match f.media_sub_fields.iter().find(|s| s.slug.as_str() == k) {
                                            Some(sub) => w.media_value(&p, sub.field_type, v),
                                            None => w.value(&p, v, false, None),
                                        }
                                    }
                                }
                                None => w.value(&item_path, item, false, None),
                            }
                        }
                    }
                    None => w.value(&path, value, false, None),
                },
                FieldType::PortableText => w.value(&path, value, true, None),
                _ => w.value(&path, value, false, None),
            },
            None => w.value(&path, value, false, None),
        }
    }
    let mut out = w.out;
    out.occurrences.sort();
    out.occurrences.dedup();
    out.candidates.sort();
    out.candidates.dedup();
    out
}

/// `parent.key` for identifier-like keys, `parent["key"]` (JSON-quoted) for any other.
fn child_path(parent: &str, key: &str) -> String {
    let plain = key.chars().next().is_some_and(|c| c.is_ascii_alphabetic() || c == '_' || c == '$')
        && key.chars().all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '$' | '-'));
    if plain {
        format!("{parent}.{key}")
    } else {
        format!("{parent}[{}]", Json::String(key.to_owned()))
    }
}

struct Walk<'a> {
    rules: &'a Rules,
    out: Extracted,
    field_slug: String,
}

impl Walk<'_> {
    /// An `image`/`file` field or sub-field value: a reference by its type when it is one;
    /// the rest of it (other keys of the object, or a value that is no reference) is walked.
    fn media_value(&mut self, path: &str, field_type: FieldType, value: &Json) {
        let parsed = reference_type(field_type).zip(parse_reference(value));
        let Some(((kind, fallback), r)) = parsed else {
            return self.value(path, value, false, None);
        };
        let media_id = (r.provider == "local").then(|| r.id.clone());
        self.out.occurrences.push(occurrence(&self.field_slug, path.to_owned(), kind, r, fallback));
        if let Json::Object(o) = value {
            for (k, v) in o.iter().filter(|(k, _)| k.as_str() != "id") {
                self.value(&child_path(path, k), v, false, media_id.as_deref());
            }
        }
    }

    /// Any value, at any depth: asset objects are references; strings may name media.
    fn value(&mut self, path: &str, value: &Json, in_portable_text: bool, within: Option<&str>) {
        match value {
            Json::String(s) => self.string(path, s, within),
            Json::Array(items) => {
                for (i, item) in items.iter().enumerate() {
                    self.value(&format!("{path}[{i}]"), item, in_portable_text, within);
                }
            }
            Json::Object(o) => {
                let asset = o.get("asset").and_then(Json::as_object);
                let found = asset.and_then(asset_reference);
                // The key the reference was read from (the asset id of its provider, whichever
                // provider) and the local media it names.
                let consumed = found.as_ref().map(|(key, r)| (*key, (r.provider == "local").then(|| r.id.clone())));
                if let Some((key, r)) = found {
                    let is_image = o.get("_type").and_then(Json::as_str) == Some("image");
                    let (kind, fallback) = if in_portable_text && is_image {
                        (ReferenceType::PortableTextImage, Some("image"))
                    } else {
                        (ReferenceType::EmbeddedAsset, None)
                    };
                    let p = format!("{path}.asset.{key}");
                    self.out.occurrences.push(occurrence(&self.field_slug, p, kind, r, fallback));
                }
                for (k, v) in o {
                    let p = child_path(path, k);
                    match (k.as_str(), asset, &consumed) {
                        ("asset", Some(a), Some((key, media))) => {
                            for (ak, av) in a.iter().filter(|(ak, _)| ak.as_str() != *key) {
                                self.value(&child_path(&p, ak), av, in_portable_text, media.as_deref().or(within));
                            }
                        }
                        _ => self.value(&p, v, in_portable_text, within),
                    }
                }
            }
            _ => {}
        }
    }

    fn string(&mut self, path: &str, s: &str, within: Option<&str>) {
        let mut push = |names: Names| {
            self.out.candidates.push(Candidate {
                field_slug: self.field_slug.clone(),
                field_path: path.to_owned(),
                names,
                within: within.map(str::to_owned),
            });
        };
        let trimmed = s.trim();
        if looks_like_id(trimmed) {
            push(Names::Id(trimmed.to_owned()));
        }
        for readings in url_keys(s, FILE_ROUTE, false) {
            push(Names::Key(readings));
        }
        if let Some(prefix) = &self.rules.public_prefix {
            for readings in url_keys(s, prefix, true) {
                push(Names::Key(readings));
            }
        }
    }
}

/// Whether a trimmed string can be a media id: 20 to 64 letters, digits, `-` or `_`, with a
/// digit (this service's ids are 32 hex digits, EmDash's ULIDs 26 characters). Shorter words
/// and prose are never looked up.
pub fn looks_like_id(s: &str) -> bool {
    (20..=64).contains(&s.len())
        && s.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_')
        && s.bytes().any(|b| b.is_ascii_digit())
}

/// The longest storage key the API accepts.
const MAX_KEY_BYTES: usize = 1024;

/// Characters that end a URL in text, HTML attributes, Markdown and JSON.
fn ends_url(c: char) -> bool {
    c.is_whitespace()
        || matches!(c, '"' | '\'' | '<' | '>' | '(' | ')' | '[' | ']' | '{' | '}' | '?' | '#' | '\\' | '|' | '^' | '`')
}

/// The storage keys of the URLs in `s` that start with `prefix` (followed by one path segment,
/// or by a path when `slashes`): for each, its readings as written, without trailing
/// punctuation, and percent-decoded. Keys that only share a prefix with a stored key are other
/// keys: readings are compared whole.
fn url_keys(s: &str, prefix: &str, slashes: bool) -> Vec<Vec<String>> {
    let mut out = Vec::new();
    for (at, _) in s.match_indices(prefix) {
        let rest = &s[at + prefix.len()..];
        let end = rest.find(|c: char| ends_url(c) || (!slashes && c == '/')).unwrap_or(rest.len());
        let run = &rest[..end];
        let mut readings: Vec<String> = Vec::new();
        let trimmed = run.trim_end_matches(['.', ',', ';', ':', '!']);
        for r in [run, trimmed] {
            for reading in [Some(r.to_owned()), percent_decode(r)].into_iter().flatten() {
                if !reading.is_empty() && reading.len() <= MAX_KEY_BYTES && !readings.contains(&reading) {
                    readings.push(reading);
                }
            }
        }
        if !readings.is_empty() {
            out.push(readings);
        }
    }
    out
}

/// `%XX` sequences decoded, when there are any and the result is UTF-8.
fn percent_decode(s: &str) -> Option<String> {
    if !s.contains('%') {
        return None;
    }
    let bytes = s.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        let hex = |b: u8| (b as char).to_digit(16);
        match (bytes[i], bytes.get(i + 1).copied().and_then(hex), bytes.get(i + 2).copied().and_then(hex)) {
            (b'%', Some(h), Some(l)) => {
                out.push((h * 16 + l) as u8);
                i += 3;
            }
            (b, _, _) => {
                out.push(b);
                i += 1;
            }
        }
    }
    String::from_utf8(out).ok()
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

/// The first rules: image/file fields, repeater sub-fields and top-level Portable Text image
/// blocks. Duplicates are removed; the result is sorted.
fn extract_v1(fields: &[ExtractionField], data: &Map<String, Json>) -> Vec<Occurrence> {
    let mut out = Vec::new();
    for f in fields {
        let slug = f.slug.as_str();
        let Some(value) = data.get(slug) else { continue };
        match f.field_type {
            FieldType::Image | FieldType::File => {
                if let (Some((kind, fallback)), Some(r)) = (reference_type(f.field_type), parse_reference(value)) {
                    out.push(occurrence(slug, slug.to_owned(), kind, r, fallback));
                }
            }
            FieldType::Repeater => {
                let Some(items) = value.as_array() else { continue };
                for (i, item) in items.iter().enumerate() {
                    let Some(obj) = item.as_object() else { continue };
                    for sub in &f.media_sub_fields {
                        let Some((kind, fallback)) = reference_type(sub.field_type) else { continue };
                        if let Some(r) = obj.get(sub.slug.as_str()).and_then(parse_reference) {
                            let path = format!("{slug}[{i}].{}", sub.slug);
                            out.push(occurrence(slug, path, kind, r, fallback));
                        }
                    }
                }
            }
            FieldType::PortableText => {
                let Some(blocks) = value.as_array() else { continue };
                for (i, block) in blocks.iter().enumerate() {
                    if let Some(o) = portable_text_image(slug, i, block) {
                        out.push(o);
                    }
                }
            }
            _ => {}
        }
    }
    out.sort();
    out.dedup();
    out
}

fn portable_text_image(slug: &str, i: usize, block: &Json) -> Option<Occurrence> {
    if block.get("_type").and_then(Json::as_str) != Some("image") {
        return None;
    }
    let (key, r) = asset_reference(block.get("asset")?.as_object()?)?;
    Some(occurrence(slug, format!("{slug}[{i}].asset.{key}"), ReferenceType::PortableTextImage, r, Some("image")))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::field::SubField;
    use serde_json::json;

    fn field(slug: &str, t: FieldType) -> Field {
        Field {
            id: slug.into(),
            slug: Ident::parse(slug).unwrap(),
            label: slug.into(),
            field_type: t,
            required: false,
            sub_fields: vec![],
            sort_order: 0,
        }
    }

    fn schema() -> Vec<ExtractionField> {
        let mut sections = field("sections", FieldType::Repeater);
        sections.sub_fields = vec![
            SubField { slug: Ident::parse("image").unwrap(), field_type: FieldType::Image },
            SubField { slug: Ident::parse("file").unwrap(), field_type: FieldType::File },
        ];
        extraction_fields(&[
            field("title", FieldType::String),
            field("hero", FieldType::Image),
            field("attachment", FieldType::File),
            field("body", FieldType::PortableText),
            sections,
        ])
    }

    /// The occurrences under the current rules, with a library that holds nothing.
    fn run(data: Json) -> Vec<Occurrence> {
        extract(&schema(), data.as_object().unwrap(), &Rules::default()).resolve(&Library::default())
    }

    #[test]
    fn discovery_keeps_only_extraction_fields_sorted() {
        let s = schema();
        let slugs: Vec<&str> = s.iter().map(|f| f.slug.as_str()).collect();
        assert_eq!(slugs, ["attachment", "body", "hero", "sections"]);
        let sections = &s[3];
        let subs: Vec<(&str, FieldType)> =
            sections.media_sub_fields.iter().map(|s| (s.slug.as_str(), s.field_type)).collect();
        assert_eq!(subs, [("file", FieldType::File), ("image", FieldType::Image)]);
        let mut files_only = field("r", FieldType::Repeater);
        files_only.sub_fields = vec![SubField { slug: Ident::parse("f").unwrap(), field_type: FieldType::File }];
        assert!(is_extraction_field(&files_only), "a repeater of files holds references");
        let mut texts_only = field("r", FieldType::Repeater);
        texts_only.sub_fields = vec![SubField { slug: Ident::parse("t").unwrap(), field_type: FieldType::String }];
        assert!(!is_extraction_field(&texts_only));
        assert!(is_extraction_field(&field("h", FieldType::Image)));
        assert!(!is_extraction_field(&field("j", FieldType::Json)));
    }

    #[test]
    fn scenario_1_image_and_file_objects() {
        let occ = run(json!({
            "hero": {"id": "m1", "provider": "local", "mimeType": "Image/JPEG; charset=utf-8"},
            "attachment": {"id": "f1", "mimeType": "application/pdf"}
        }));
        assert_eq!(occ.len(), 2);
        let hero = occ.iter().find(|o| o.field_slug == "hero").unwrap();
        assert_eq!(
            (hero.reference_type, hero.media_id.as_deref(), hero.media_kind, hero.mime_type.as_deref()),
            (ReferenceType::ImageField, Some("m1"), Some("image"), Some("image/jpeg"))
        );
        let att = occ.iter().find(|o| o.field_slug == "attachment").unwrap();
        assert_eq!((att.reference_type, att.media_kind), (ReferenceType::FileField, Some("document")));
    }

    #[test]
    fn scenario_2_bare_strings_are_local_ids() {
        let occ = run(json!({"hero": "m1", "attachment": "f1"}));
        let hero = occ.iter().find(|o| o.field_slug == "hero").unwrap();
        assert_eq!(
            (hero.media_id.as_deref(), hero.mime_type.as_deref(), hero.media_kind),
            (Some("m1"), None, Some("image"))
        );
        let att = occ.iter().find(|o| o.field_slug == "attachment").unwrap();
        assert_eq!((att.provider.as_str(), att.media_kind), ("local", None));
    }

    #[test]
    fn scenario_3_urls_paths_blanks_and_externals_are_not_references() {
        for v in [
            json!("https://x/y.jpg"),
            json!("//cdn/y.jpg"),
            json!("/images/y.jpg"),
            json!("images/y.jpg"),
            json!("/_emdash/api/media/file/uploads/y.jpg"),
            json!("   "),
            json!({"id": 123}),
            json!({"src": "https://x/y.jpg"}),
            json!({"url": "https://x/y.jpg"}),
            json!({"provider": "external", "id": "x"}),
            json!({"id": "data:image/png;base64,AAA"}),
            json!(42),
        ] {
            assert!(run(json!({ "hero": v })).is_empty(), "{v}");
        }
    }

    #[test]
    fn scenario_4_other_providers_keep_slashes_and_have_no_media_id() {
        let occ = run(json!({"hero": {"id": "folder/cf-1", "provider": "cloudflare-images"}}));
        assert_eq!(occ.len(), 1);
        assert_eq!((occ[0].media_id.as_deref(), occ[0].provider_asset_id.as_str()), (None, "folder/cf-1"));
        assert_eq!(occ[0].provider, "cloudflare-images");
    }

    #[test]
    fn scenario_5_repeaters_index_image_and_file_sub_fields() {
        let occ = run(json!({"sections": [
            {"image": {"id": "a"}, "file": {"id": "zz", "mimeType": "application/pdf"}},
            {"image": "b"}, "junk", {"other": "c"}, {"file": "https://x/y.pdf"}
        ]}));
        let found: Vec<(&str, ReferenceType, Option<&str>)> =
            occ.iter().map(|o| (o.field_path.as_str(), o.reference_type, o.media_kind)).collect();
        assert_eq!(
            found,
            [
                ("sections[0].file", ReferenceType::FileField, Some("document")),
                ("sections[0].image", ReferenceType::ImageField, Some("image")),
                ("sections[1].image", ReferenceType::ImageField, Some("image")),
            ]
        );
        assert!(occ.iter().all(|o| o.field_slug == "sections"));
        // A bare file id has no kind until its MIME type is known, as for a top-level file field.
        let bare = run(json!({"sections": [{"file": "f1"}]}));
        assert_eq!((bare[0].reference_type, bare[0].media_kind), (ReferenceType::FileField, None));
    }

    #[test]
    fn scenario_6_portable_text_image_blocks() {
        let occ = run(json!({"body": [
            {"_type": "block", "children": []},
            {"_type": "image", "asset": {"_ref": "m1", "mimeType": "image/png"}},
            {"_type": "image", "asset": {"id": "cf", "provider": "cloudflare-images"}},
            {"_type": "image", "asset": {"url": "https://x/y.png"}},
            {"_type": "image"},
            {"_type": "image", "asset": {"_ref": "https://bad", "id": "m2"}}
        ]}));
        let got: Vec<(&str, Option<&str>, &str)> =
            occ.iter().map(|o| (o.field_path.as_str(), o.media_id.as_deref(), o.provider.as_str())).collect();
        assert_eq!(
            got,
            [
                ("body[1].asset._ref", Some("m1"), "local"),
                ("body[2].asset.id", None, "cloudflare-images"),
                ("body[5].asset.id", Some("m2"), "local"),
            ]
        );
        assert!(occ.iter().all(|o| o.reference_type == ReferenceType::PortableTextImage));
        assert_eq!(occ[0].media_kind, Some("image"));
    }

    #[test]
    fn scenario_7_same_media_in_three_places_and_dedup() {
        let occ = run(json!({
            "hero": "m1",
            "sections": [{"image": "m1"}],
            "body": [{"_type": "image", "asset": {"_ref": "m1"}}]
        }));
        assert_eq!(occ.len(), 3);
        // Duplicate field definitions produce identical tuples, which are removed.
        let mut doubled = schema();
        doubled.extend(schema());
        let once = extract(&doubled, json!({"hero": "m1"}).as_object().unwrap(), &Rules::default());
        assert_eq!(once.resolve(&Library::default()).len(), 1);
    }

    #[test]
    fn mime_normalisation_and_kinds() {
        let cases: &[(&str, Option<&str>, &str)] = &[
            ("Image/PNG", Some("image/png"), "image"),
            ("video/mp4; codecs=x", Some("video/mp4"), "video"),
            ("audio/ogg", Some("audio/ogg"), "audio"),
            ("font/woff2", Some("font/woff2"), "font"),
            ("application/font-woff", Some("application/font-woff"), "font"),
            ("text/plain", Some("text/plain"), "text"),
            ("application/msword", Some("application/msword"), "document"),
            (
                "application/vnd.openxmlformats-officedocument.wordprocessingml.document",
                Some("application/vnd.openxmlformats-officedocument.wordprocessingml.document"),
                "document",
            ),
            ("application/x-7z-compressed", Some("application/x-7z-compressed"), "archive"),
            ("application/octet-stream", Some("application/octet-stream"), "other"),
        ];
        for (raw, norm, kind) in cases {
            let n = normalize_mime(Some(raw));
            assert_eq!(n.as_deref(), *norm, "{raw}");
            assert_eq!(media_kind(n.as_deref().unwrap()), *kind, "{raw}");
        }
        assert_eq!(normalize_mime(Some("jpeg")), None);
        assert_eq!(normalize_mime(None), None);
    }

    const A: &str = "0123456789abcdef0123456789abcdef";
    const B: &str = "fedcba9876543210fedcba9876543210";
    const C: &str = "01HZX3K8Q4V6W9YB2C5D7E8F9G";

    /// A library holding A (`a.png`), B (`dir/b 1.pdf`) and C (`c.jpg`).
    fn library() -> Library {
        Library::from_rows([
            (A.to_owned(), "a.png".to_owned(), Some("image/png".to_owned())),
            (B.to_owned(), "dir/b 1.pdf".to_owned(), Some("application/pdf".to_owned())),
            (C.to_owned(), "c.jpg".to_owned(), Some("image/jpeg".to_owned())),
        ])
    }

    fn full_schema() -> Vec<ExtractionField> {
        let mut downloads = field("downloads", FieldType::Repeater);
        downloads.sub_fields = vec![SubField { slug: Ident::parse("doc").unwrap(), field_type: FieldType::File }];
        extraction_fields(&[
            field("hero", FieldType::Image),
            field("body", FieldType::PortableText),
            field("extra", FieldType::Json),
            field("title", FieldType::String),
            downloads,
        ])
    }

    fn found(data: Json, rules: &Rules) -> Vec<(String, ReferenceType, Option<String>, i64)> {
        extract(&full_schema(), data.as_object().unwrap(), rules)
            .resolve(&library())
            .into_iter()
            .map(|o| (o.field_path, o.reference_type, o.media_id, o.occurrence_index))
            .collect()
    }

    fn one(data: Json) -> (String, ReferenceType, Option<String>) {
        let all = found(data.clone(), &Rules::current(Some("https://cdn.example.com/media/")));
        assert_eq!(all.len(), 1, "{data}: {all:?}");
        let (p, t, m, _) = all.into_iter().next().unwrap();
        (p, t, m)
    }

    #[test]
    fn every_rule_at_every_position() {
        use ReferenceType::*;
        let s = |x: &str| Some(x.to_owned());
        let url_a = format!("/_emdash/api/media/file/{}", "a.png");
        let rows: Vec<(Json, &str, ReferenceType, Option<String>)> = vec![
            (json!({"hero": A}), "hero", ImageField, s(A)),
            (json!({"downloads": [{}, {}, {"doc": {"id": B}}]}), "downloads[2].doc", FileField, s(B)),
            (
                json!({"body": [{"_type": "image", "asset": {"_ref": A}}]}),
                "body[0].asset._ref",
                PortableTextImage,
                s(A),
            ),
            (
                json!({"body": [{"_type": "block", "children": [{"_type": "span"}, {"_type": "image", "asset": {"_ref": C}}]}]}),
                "body[0].children[1].asset._ref",
                PortableTextImage,
                s(C),
            ),
            (
                json!({"body": [{"_type": "gallery", "images": [{"asset": {"id": C}}]}]}),
                "body[0].images[0].asset.id",
                EmbeddedAsset,
                s(C),
            ),
            (json!({"extra": {"cover": {"asset": {"_ref": B}}}}), "extra.cover.asset._ref", EmbeddedAsset, s(B)),
            (json!({"extra": {"ogImage": A}}), "extra.ogImage", EmbeddedId, s(A)),
            (json!({"title": format!("  {C} ")}), "title", EmbeddedId, s(C)),
            (json!({"extra": {"og:image": [C]}}), "extra[\"og:image\"][0]", EmbeddedId, s(C)),
            (json!({"extra": {"ogImage": format!("https://site.example{url_a}")}}), "extra.ogImage", EmbeddedUrl, s(A)),
            (json!({"title": format!("<p><img src=\"{url_a}\"></p>")}), "title", EmbeddedUrl, s(A)),
            (json!({"title": format!("![x]({url_a}?w=200) and more")}), "title", EmbeddedUrl, s(A)),
            (json!({"title": format!("see {url_a}.")}), "title", EmbeddedUrl, s(A)),
            (json!({"title": "/_emdash/api/media/file/dir%2Fb%201.pdf"}), "title", EmbeddedUrl, s(B)),
            (json!({"title": "https://cdn.example.com/media/dir/b%201.pdf"}), "title", EmbeddedUrl, s(B)),
            (json!({"title": "//cdn.example.com/media/c.jpg#top"}), "title", EmbeddedUrl, s(C)),
            (
                json!({"body": [{"_type": "block", "markDefs": [{"_type": "link", "href": url_a}]}]}),
                "body[0].markDefs[0].href",
                EmbeddedUrl,
                s(A),
            ),
            (json!({"downloads": [{"caption": A}]}), "downloads[0].caption", EmbeddedId, s(A)),
            // A value an image field cannot hold as a reference is still read as text.
            (json!({"hero": url_a}), "hero", EmbeddedUrl, s(A)),
            (json!({"hero": {"provider": "external", "url": url_a}}), "hero.url", EmbeddedUrl, s(A)),
            // Keys that are not fields (a draft's extra data) are read too.
            (json!({"legacy": {"x": [A]}}), "legacy.x[0]", EmbeddedId, s(A)),
        ];
        for (data, path, kind, media) in rows {
            assert_eq!(one(data.clone()), (path.to_owned(), kind, media), "{data}");
        }
    }

    #[test]
    fn strings_that_name_nothing_are_not_references() {
        for data in [
            json!({"extra": {"x": "0123456789abcdef0123456789abcdee"}}),
            json!({"title": "https://elsewhere.example/media/a.png"}),
            json!({"title": "/media/file/a.png"}),
            json!({"title": "/_emdash/api/media/file/a.png2"}),
            json!({"title": "/_emdash/api/media/file/a"}),
            json!({"title": "/_emdash/api/media/file/x/a.png"}),
            json!({"title": "https://cdn.example.com/other/a.png"}),
            json!({"title": "https://cdn.example.com/media/a.png.bak"}),
            json!({"title": format!("{A}x")}),
            json!({"title": format!("id {A}")}),
            json!({"body": [{"_type": "image", "asset": {"_ref": "   "}}]}),
            json!({"body": [{"_type": "image", "asset": {"_ref": "photo-1", "provider": "external"}}]}),
            json!({"extra": {"asset": {"url": "https://x.example/a.png"}}}),
            json!({"extra": [1, true, null, 2.5]}),
        ] {
            assert_eq!(found(data.clone(), &Rules::current(Some("https://cdn.example.com/media"))), [], "{data}");
        }
    }

    #[test]
    fn the_same_item_in_its_own_object_is_one_reference() {
        let url = "/_emdash/api/media/file/a.png";
        // An image field object that also carries its URL, an asset with its URL: one each.
        assert_eq!(one(json!({"hero": {"id": A, "url": url, "alt": A}})).0, "hero");
        assert_eq!(one(json!({"extra": {"asset": {"_ref": A, "url": url}}})).0, "extra.asset._ref");
        // Another item inside the object is another reference.
        let both = found(json!({"hero": {"id": A, "caption": C}}), &Rules::default());
        assert_eq!(both.len(), 2);
        // One string naming two items: one occurrence index each; naming one twice: once.
        let text = format!("{url} /_emdash/api/media/file/c.jpg {url}");
        let got = found(json!({"title": text}), &Rules::default());
        let idx: Vec<(Option<String>, i64)> = got.into_iter().map(|(_, _, m, i)| (m, i)).collect();
        assert_eq!(idx, [(Some(A.to_owned()), 0), (Some(C.to_owned()), 1)]);
    }

    #[test]
    fn an_asset_id_of_another_provider_is_that_provider_s_reference_only() {
        // Its id is the provider's asset id, even when it equals a local media id: one
        // occurrence, of that provider, and never two on one path and index.
        let data = json!({"body": [{"_type": "image", "asset": {"provider": "cloudinary", "_ref": A, "url": C}}]});
        let occ = extract(&full_schema(), data.as_object().unwrap(), &Rules::default()).resolve(&library());
        let got: Vec<(&str, &str, Option<&str>, i64)> = occ
            .iter()
            .map(|o| (o.field_path.as_str(), o.provider.as_str(), o.media_id.as_deref(), o.occurrence_index))
            .collect();
        assert_eq!(got, [("body[0].asset._ref", "cloudinary", None, 0), ("body[0].asset.url", "local", Some(C), 0)]);
        // An asset's other id naming another item is another reference.
        let data = json!({"extra": {"asset": {"_ref": "99999999999999999999999999999999", "id": A}}});
        let got = found(data, &Rules::default());
        assert_eq!(got.len(), 2, "{got:?}");
        assert_eq!(got[1], ("extra.asset.id".to_owned(), ReferenceType::EmbeddedId, Some(A.to_owned()), 0));
        // Whatever a path holds, candidates resolved there get indexes after its structural one.
        let e = Extracted {
            occurrences: occ[..1].to_vec(),
            candidates: vec![Candidate {
                field_slug: "body".into(),
                field_path: "body[0].asset._ref".into(),
                names: Names::Id(A.into()),
                within: None,
            }],
        };
        let idx: Vec<i64> = e.resolve(&library()).iter().map(|o| o.occurrence_index).collect();
        assert_eq!(idx, [0, 1]);
    }

    #[test]
    fn candidates_are_looked_up_once_and_cost_nothing_when_unknown() {
        let data = json!({"title": format!("{A} /_emdash/api/media/file/zz.png"), "extra": [A, A, "short"]});
        let e = extract(&full_schema(), data.as_object().unwrap(), &Rules::default());
        let (ids, keys) = e.lookups();
        assert_eq!(ids.into_iter().collect::<Vec<_>>(), [A]);
        assert_eq!(keys.into_iter().collect::<Vec<_>>(), ["zz.png"]);
        assert!(e.resolve(&Library::default()).is_empty());
    }

    #[test]
    fn the_first_rules_read_fields_and_top_level_blocks_only() {
        let data = json!({
            "hero": A,
            "body": [{"_type": "image", "asset": {"_ref": B}},
                     {"_type": "block", "children": [{"_type": "image", "asset": {"_ref": C}}]}],
            "extra": {"og": C}
        });
        let v1: Vec<String> = found(data.clone(), &Rules::v1()).into_iter().map(|f| f.0).collect();
        assert_eq!(v1, ["body[0].asset._ref", "hero"]);
        assert_eq!(found(data, &Rules::default()).len(), 4);
        assert_ne!(Rules::v1().id(), Rules::default().id());
    }

    #[test]
    fn the_public_url_is_part_of_the_rules() {
        assert_eq!(Rules::default().id(), "2");
        let a = Rules::current(Some("https://cdn.example.com/media/"));
        let b = Rules::current(Some("http://cdn.example.com/media"));
        assert_eq!(a.id(), b.id(), "the scheme and a trailing slash do not matter");
        assert!(a.id().starts_with("2+") && a.id().len() == 14, "{}", a.id());
        assert_ne!(a.id(), Rules::current(Some("https://cdn2.example.com/media")).id());
        assert_eq!(Rules::current(Some("  ")).id(), "2");
        // Only a scheme's `//` starts the part that is compared; another `//` is path.
        assert_ne!(
            Rules::current(Some("cdn.example.com//media")).id(),
            Rules::current(Some("other.example.com//media")).id()
        );
    }

    #[test]
    fn a_url_key_has_each_distinct_non_empty_reading_once() {
        assert_eq!(url_keys("/_emdash/api/media/file/a.png", FILE_ROUTE, false), [["a.png"]]);
        assert_eq!(url_keys("see /_emdash/api/media/file/a.png.", FILE_ROUTE, false), [["a.png.", "a.png"]]);
        assert_eq!(
            url_keys("/_emdash/api/media/file/ and /_emdash/api/media/file/?x", FILE_ROUTE, false),
            Vec::<Vec<String>>::new()
        );
        assert_eq!(url_keys("/_emdash/api/media/file/...", FILE_ROUTE, false), [["..."]]);
        let long = format!("/_emdash/api/media/file/{}", "k".repeat(MAX_KEY_BYTES + 1));
        assert!(url_keys(&long, FILE_ROUTE, false).is_empty(), "longer than any storage key");
        assert_eq!(url_keys("//cdn/m/a/b%20c.png", "//cdn/m/", true), [["a/b%20c.png", "a/b c.png"]]);
    }

    #[test]
    fn a_blank_provider_is_local() {
        let data = json!({"extra": {"asset": {"_ref": A, "provider": "  "}}, "hero": {"id": C, "provider": ""}});
        let occ = extract(&full_schema(), data.as_object().unwrap(), &Rules::default()).resolve(&library());
        let got: Vec<(&str, Option<&str>)> = occ.iter().map(|o| (o.provider.as_str(), o.media_id.as_deref())).collect();
        assert_eq!(got, [("local", Some(A)), ("local", Some(C))]);
    }

    #[test]
    fn paths_quote_keys_that_are_not_identifiers() {
        assert_eq!(child_path("x", "_key"), "x._key");
        assert_eq!(child_path("x", "$ref"), "x.$ref");
        assert_eq!(child_path("x", "og-image2"), "x.og-image2");
        assert_eq!(child_path("x", "9lives"), "x[\"9lives\"]");
        assert_eq!(child_path("x", "-a"), "x[\"-a\"]");
        assert_eq!(child_path("x", "og:image"), "x[\"og:image\"]");
        assert_eq!(child_path("x", ""), "x[\"\"]");
    }

    #[test]
    fn file_urls_that_name_nothing_are_kept_as_pending_keys() {
        let data = json!({"title": "/_emdash/api/media/file/a.png /_emdash/api/media/file/new%20one.png. /_emdash/api/media/file/x.png", "extra": [C]});
        let e = extract(&full_schema(), data.as_object().unwrap(), &Rules::default());
        assert_eq!(
            e.pending_keys(&library()),
            ["new one.png", "new one.png.", "new%20one.png", "new%20one.png.", "x.png"]
        );
        assert_eq!(e.pending_keys(&Library::default()).len(), 6, "a.png too when the library lacks it");
    }

    #[test]
    fn ids_look_like_ids() {
        assert!(looks_like_id(A) && looks_like_id(C));
        assert!(looks_like_id(&"a1".repeat(32)));
        assert!(!looks_like_id(&"a1".repeat(33)));
        assert!(looks_like_id("aaaaaaaaaaaaaaaaaaa1") && !looks_like_id("aaaaaaaaaaaaaaaaaa1"));
        assert!(!looks_like_id("internationalization"), "no digit: a word");
        assert!(!looks_like_id("0123456789 0123456789"));
        assert!(!looks_like_id("0123456789/0123456789"));
        assert!(looks_like_id("0123456789-abcdef_0123") && looks_like_id("____________________1"));
    }

    mod properties {
        use super::*;
        use proptest::prelude::*;

        /// Strings that sometimes are ids, keys, file URLs or look-alikes.
        fn text() -> impl Strategy<Value = String> {
            prop_oneof![
                Just(A.to_owned()),
                Just(C.to_owned()),
                Just(format!(" {B} ")),
                Just("/_emdash/api/media/file/a.png".to_owned()),
                Just("https://x.example/_emdash/api/media/file/dir%2Fb%201.pdf?x#y".to_owned()),
                Just("//cdn.example.com/media/c.jpg".to_owned()),
                Just("/_emdash/api/media/file/".to_owned()),
                Just("/_emdash/api/media/file/%".to_owned()),
                Just("/_emdash/api/media/file/%e9%ff".to_owned()),
                any::<String>(),
                "[a-f0-9]{20,40}",
                "(/_emdash/api/media/file/|//cdn.example.com/media/)?[a-z%./ ()0-9é]{0,12}",
            ]
        }

        fn document() -> impl Strategy<Value = Json> {
            let leaf = prop_oneof![
                Just(Json::Null),
                any::<bool>().prop_map(Json::Bool),
                any::<i32>().prop_map(|n| json!(n)),
                text().prop_map(Json::String),
            ];
            leaf.prop_recursive(6, 64, 6, |inner| {
                prop_oneof![
                    prop::collection::vec(inner.clone(), 0..6).prop_map(Json::Array),
                    prop::collection::btree_map(
                        prop_oneof![
                            Just("_type".to_owned()),
                            Just("asset".to_owned()),
                            Just("_ref".to_owned()),
                            Just("id".to_owned()),
                            Just("provider".to_owned()),
                            Just("children".to_owned()),
                            "[a-z:\" ]{1,6}",
                        ],
                        inner.clone(),
                        0..6
                    )
                    .prop_map(|m| Json::Object(m.into_iter().collect())),
                    inner.prop_map(|v| json!({"_type": "image", "asset": {"_ref": v}})),
                ]
            })
        }

        proptest! {
            #![proptest_config(ProptestConfig { cases: 512, ..ProptestConfig::default() })]

            /// Any document, in any field: extraction never panics, gives the same answer twice,
            /// and every occurrence it resolves names a path into the data.
            #[test]
            fn extraction_is_total_and_deterministic(
                hero in document(), body in document(), extra in document(), downloads in document(),
            ) {
                let data = json!({"hero": hero, "body": body, "extra": extra, "downloads": downloads});
                let data = data.as_object().unwrap();
                let rules = Rules::current(Some("https://cdn.example.com/media"));
                let first = extract(&full_schema(), data, &rules);
                prop_assert_eq!(&first, &extract(&full_schema(), data, &rules));
                let occ = first.resolve(&library());
                prop_assert_eq!(&occ, &first.resolve(&library()));
                for o in &occ {
                    prop_assert!(data.contains_key(&o.field_slug));
                    prop_assert!(o.field_path.starts_with(&o.field_slug));
                    if matches!(o.reference_type, ReferenceType::EmbeddedId | ReferenceType::EmbeddedUrl) {
                        prop_assert!(o.media_id.is_some());
                    }
                }
                let mut keys: Vec<(&str, i64)> = occ.iter().map(|o| (o.field_path.as_str(), o.occurrence_index)).collect();
                keys.dedup();
                prop_assert_eq!(keys.len(), occ.len(), "a path and index name one occurrence");
                let _ = extract(&full_schema(), data, &Rules::v1());
            }
        }
    }
}
