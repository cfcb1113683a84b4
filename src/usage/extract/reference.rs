//! What a value is as a media reference: a field value or an `asset` object parsed under the
//! provider rules (local ids, other providers, never `external`), and the media kind of its MIME
//! type.

use serde_json::{Map, Value as Json};

use super::path::PathId;
use super::ReferenceType;
use crate::model::field::FieldType;

/// How a field or sub-field of this type holds a media reference, if it does (portable text
/// and repeaters hold them inside their values).
pub(super) fn reference_type(t: FieldType) -> Option<(ReferenceType, Option<&'static str>)> {
    match t {
        FieldType::Image => Some((ReferenceType::ImageField, Some("image"))),
        FieldType::File => Some((ReferenceType::FileField, None)),
        _ => None,
    }
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
pub(super) struct Reference {
    pub(super) provider: String,
    pub(super) id: String,
    pub(super) mime: Option<String>,
}

/// An image/file value: a bare string is a legacy local id; an object uses `provider`
/// (default `local`) and `id`. `external` and URL-only objects are never indexed.
pub(super) fn parse_reference(value: &Json) -> Option<Reference> {
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
pub(super) struct Structural {
    pub(super) path: PathId,
    pub(super) reference_type: ReferenceType,
    pub(super) media_id: Option<String>,
    pub(super) provider: String,
    pub(super) provider_asset_id: String,
    pub(super) media_kind: Option<&'static str>,
    pub(super) mime_type: Option<String>,
}

pub(super) fn structural(
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

/// `provider: "external"`: the object's ids are the external provider's.
pub(super) fn is_external(o: &Map<String, Json>) -> bool {
    o.get("provider").and_then(Json::as_str).is_some_and(|p| p.trim() == "external")
}

/// The reference an `asset` object makes by `_ref` (else `id`), under the provider rules.
pub(super) fn asset_reference(asset: &Map<String, Json>) -> Option<(&'static str, Reference)> {
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
