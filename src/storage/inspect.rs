//! What an uploaded file is: its declared type against the allowlist and against its magic bytes,
//! the extension of its storage key, and an image's dimensions from its header. Pure.

/// The default allowlist (`MEDIA_ALLOWED_TYPES` replaces it): images, video, audio, PDF and
/// office documents — types whose content can be recognised by its magic bytes.
pub const DEFAULT_ALLOWED_TYPES: &[&str] = &[
    "image/jpeg",
    "image/png",
    "image/gif",
    "image/webp",
    "image/avif",
    "video/mp4",
    "video/webm",
    "video/quicktime",
    "audio/mpeg",
    "audio/wav",
    "audio/ogg",
    "audio/mp4",
    "audio/flac",
    "application/pdf",
    "application/msword",
    "application/vnd.ms-excel",
    "application/vnd.ms-powerpoint",
    "application/vnd.openxmlformats-officedocument.wordprocessingml.document",
    "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet",
    "application/vnd.openxmlformats-officedocument.presentationml.presentation",
    "application/vnd.oasis.opendocument.text",
    "application/vnd.oasis.opendocument.spreadsheet",
    "application/vnd.oasis.opendocument.presentation",
];

/// Which types may be uploaded: exact `type/subtype` entries or `type/*`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Allowlist(Vec<String>);

impl Default for Allowlist {
    fn default() -> Self {
        Allowlist(DEFAULT_ALLOWED_TYPES.iter().map(|s| (*s).to_owned()).collect())
    }
}

impl Allowlist {
    /// An allowlist of lower-case `type/subtype` or `type/*` entries (`MEDIA_ALLOWED_TYPES`, as
    /// [`crate::settings`] reads it).
    pub fn new(entries: Vec<String>) -> Allowlist {
        Allowlist(entries)
    }

    pub fn allows(&self, mime: &str) -> bool {
        self.0.iter().any(|a| match a.strip_suffix("/*") {
            Some(top) => mime.split_once('/').is_some_and(|(t, _)| t == top),
            None => a == mime,
        })
    }
}

/// A declared content type without parameters, lower-cased (`Image/PNG; x=y` → `image/png`).
pub fn essence(content_type: &str) -> String {
    content_type.split(';').next().unwrap_or_default().trim().to_ascii_lowercase()
}

/// Spellings of one type that magic-byte detection and clients disagree on.
fn canonical(mime: &str) -> &str {
    match mime {
        "audio/x-wav" | "audio/wave" | "audio/vnd.wave" => "audio/wav",
        "audio/x-flac" => "audio/flac",
        "audio/m4a" | "audio/x-m4a" => "audio/mp4",
        "image/jpg" | "image/pjpeg" => "image/jpeg",
        "audio/mp3" => "audio/mpeg",
        other => other,
    }
}

/// What the file's magic bytes say it is: its type and the extension for its storage key.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Sniffed {
    pub mime: String,
    pub extension: &'static str,
}

pub fn sniff(bytes: &[u8]) -> Option<Sniffed> {
    infer::get(bytes).map(|t| Sniffed { mime: canonical(t.mime_type()).to_owned(), extension: t.extension() })
}

/// Why a file may not be stored.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Refusal {
    /// The type is not on the allowlist.
    NotAllowed(String),
    /// The content is not what the type says (or is not recognisable at all).
    Mismatch { declared: String, found: Option<String> },
}

/// Checks a file: the declared type (`None`, empty or `application/octet-stream` means "not
/// declared": the content's type is taken) must be allowed and match the content's magic bytes.
/// Returns the type to store and the key extension.
pub fn check(declared: Option<&str>, bytes: &[u8], allow: &Allowlist) -> Result<Sniffed, Refusal> {
    let declared = declared.map(essence).filter(|d| !d.is_empty() && d != "application/octet-stream");
    let found = sniff(bytes);
    let claimed = match (&declared, &found) {
        (Some(d), _) => canonical(d).to_owned(),
        (None, Some(f)) => f.mime.clone(),
        (None, None) => return Err(Refusal::Mismatch { declared: "application/octet-stream".into(), found: None }),
    };
    if !allow.allows(&claimed) {
        return Err(Refusal::NotAllowed(claimed));
    }
    match found {
        Some(f) if f.mime == claimed => Ok(f),
        f => Err(Refusal::Mismatch { declared: claimed, found: f.map(|f| f.mime) }),
    }
}

/// An image's width and height from its header, for the types that have one.
pub fn dimensions(mime: &str, bytes: &[u8]) -> Option<(i64, i64)> {
    if !mime.starts_with("image/") {
        return None;
    }
    let size = imagesize::blob_size(bytes).ok()?;
    Some((i64::try_from(size.width).ok()?, i64::try_from(size.height).ok()?))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A 3×2 PNG (signature, IHDR).
    pub(crate) fn png(w: u32, h: u32) -> Vec<u8> {
        let mut b = b"\x89PNG\r\n\x1a\n\0\0\0\rIHDR".to_vec();
        b.extend_from_slice(&w.to_be_bytes());
        b.extend_from_slice(&h.to_be_bytes());
        b.extend_from_slice(&[8, 6, 0, 0, 0, 0, 0, 0, 0]);
        b
    }

    #[test]
    fn the_declared_type_must_be_allowed_and_match_the_content() {
        let allow = Allowlist::default();
        let png = png(3, 2);
        assert_eq!(
            check(Some("image/png"), &png, &allow).unwrap(),
            Sniffed { mime: "image/png".into(), extension: "png" }
        );
        assert_eq!(check(Some("Image/PNG; charset=x"), &png, &allow).unwrap().extension, "png");
        assert_eq!(check(None, &png, &allow).unwrap().mime, "image/png", "undeclared: the content's type");
        assert_eq!(check(Some("application/octet-stream"), &png, &allow).unwrap().mime, "image/png");
        assert_eq!(
            check(Some("image/jpeg"), &png, &allow),
            Err(Refusal::Mismatch { declared: "image/jpeg".into(), found: Some("image/png".into()) })
        );
        assert_eq!(check(Some("text/html"), b"<html></html>", &allow), Err(Refusal::NotAllowed("text/html".into())));
        assert_eq!(
            check(Some("application/pdf"), b"plain text", &allow),
            Err(Refusal::Mismatch { declared: "application/pdf".into(), found: None })
        );
        assert!(matches!(check(None, b"plain text", &allow), Err(Refusal::Mismatch { found: None, .. })));
        assert_eq!(check(Some("application/pdf"), b"%PDF-1.7\n", &allow).unwrap().extension, "pdf");
        assert_eq!(check(Some("image/jpg"), &[0xFF, 0xD8, 0xFF, 0xE0, 0, 0x10], &allow).unwrap().mime, "image/jpeg");
    }

    #[test]
    fn the_allowlist_is_configurable_with_wildcards() {
        let only_images = Allowlist::new(vec!["image/*".into(), "application/pdf".into()]);
        assert!(only_images.allows("image/png") && only_images.allows("application/pdf"));
        assert!(!only_images.allows("video/mp4") && !only_images.allows("imagex/png"));
        assert!(!Allowlist::default().allows("image/svg+xml"), "scriptable types are not allowed by default");
        assert!(!Allowlist::default().allows("text/html"));
    }

    #[test]
    fn image_dimensions_come_from_the_header() {
        assert_eq!(dimensions("image/png", &png(3, 2)), Some((3, 2)));
        assert_eq!(dimensions("application/pdf", b"%PDF-1.7"), None);
        assert_eq!(dimensions("image/png", b"\x89PNG"), None, "a truncated header has none");
    }
}
