//! Extraction of media references from an entry's field values.
//! Pure: field definitions and JSON values in, occurrences out.

use serde::Serialize;
use serde_json::{Map, Value as Json};

use crate::model::field::{Field, FieldType};
use crate::model::ident::Ident;

/// How a reference was found.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum ReferenceType {
    ImageField,
    FileField,
    PortableTextImage,
}

impl ReferenceType {
    pub fn as_str(self) -> &'static str {
        match self {
            ReferenceType::ImageField => "image_field",
            ReferenceType::FileField => "file_field",
            ReferenceType::PortableTextImage => "portable_text_image",
        }
    }
}

/// One media reference at one place in an entry.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Occurrence {
    pub field_slug: String,
    pub field_path: String,
    /// Always 0 in this version of the extractor.
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

/// Extracts every media reference of an entry's data. Duplicates are removed; the result is
/// sorted so equal inputs give equal outputs.
pub fn extract(fields: &[ExtractionField], data: &Map<String, Json>) -> Vec<Occurrence> {
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
    let asset = block.get("asset")?.as_object()?;
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
    let r = Reference { provider, id, mime };
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

    fn run(data: Json) -> Vec<Occurrence> {
        extract(&schema(), data.as_object().unwrap())
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
        assert_eq!(extract(&doubled, json!({"hero": "m1"}).as_object().unwrap()).len(), 1);
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
}
