//! Media files: `POST /media` with `multipart/form-data` (the upload EmDash's client sends) and
//! `GET /media/file/{key}` (the stored bytes, cacheable for a year).
//!
//! An upload is checked (allowlist, size, magic bytes), hashed, answered with the existing row
//! when its bytes are stored already, else stored under a new key and then registered. A refused
//! or deduplicated upload leaves no object behind: nothing is stored before the checks pass, and
//! an object whose row cannot be written is deleted before the response.

use std::convert::Infallible;

use serde_json::json;
use sha2::{Digest, Sha256};

use super::error::ApiError;
use super::media::media_json;
use super::{Ctx, Reply, Request, Response};
use crate::exec::{self, Executor};
use crate::repo::media::{self as repo, NewMedia};
use crate::storage::inspect::{self, Allowlist, Refusal};
use crate::storage::serve;

/// Default `MEDIA_MAX_UPLOAD_BYTES`: 50 MiB.
pub const DEFAULT_MAX_UPLOAD_BYTES: u64 = 50 * 1024 * 1024;
/// Room for the form's framing and its small fields beyond the file itself.
const FORM_OVERHEAD_BYTES: u64 = 64 * 1024;
/// Each text field (`alt`, `caption`, `width`, `height`) is small: at most this many bytes are
/// read of it, and `alt`/`caption` hold at most [`MAX_TEXT_CHARS`] characters (as in JSON).
const TEXT_FIELD_BYTES: u64 = 4 * 1024;
const MAX_TEXT_CHARS: usize = 1000;
/// How the buffered body is handed to the form parser.
const FEED_CHUNK_BYTES: usize = 64 * 1024;

/// What an upload may be.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UploadRules {
    pub max_bytes: u64,
    pub allowed: Allowlist,
}

impl Default for UploadRules {
    fn default() -> Self {
        UploadRules { max_bytes: DEFAULT_MAX_UPLOAD_BYTES, allowed: Allowlist::default() }
    }
}

impl UploadRules {
    /// Reads `MEDIA_MAX_UPLOAD_BYTES` (a positive integer; anything else is the default) and
    /// `MEDIA_ALLOWED_TYPES`.
    pub fn from_settings(max_bytes: Option<&str>, allowed: Option<&str>) -> UploadRules {
        UploadRules {
            max_bytes: max_bytes
                .and_then(|v| v.trim().parse::<u64>().ok())
                .filter(|n| *n > 0)
                .unwrap_or(DEFAULT_MAX_UPLOAD_BYTES),
            allowed: Allowlist::from_setting(allowed),
        }
    }

    /// The most body bytes an upload request may have.
    pub fn body_limit(&self) -> usize {
        usize::try_from(self.max_bytes.saturating_add(FORM_OVERHEAD_BYTES)).unwrap_or(usize::MAX)
    }

    fn too_large(&self) -> ApiError {
        ApiError::new(
            413,
            "PAYLOAD_TOO_LARGE",
            format!("The file exceeds the upload limit of {} bytes", self.max_bytes),
        )
    }
}

/// Whether the request body is a multipart form.
pub fn is_multipart(req: &Request) -> bool {
    req.content_type.as_deref().is_some_and(|t| inspect::essence(t) == "multipart/form-data")
}

/// The URL a stored file is served at: under `MEDIA_PUBLIC_URL` when set, else the file route.
pub fn file_url(public_url: Option<&str>, key: &str) -> String {
    let encoded: String = key
        .bytes()
        .map(|b| match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'.' | b'_' | b'~' => (b as char).to_string(),
            _ => format!("%{b:02X}"),
        })
        .collect();
    match public_url {
        Some(base) => format!("{}/{encoded}", base.trim_end_matches('/')),
        None => format!("{}/media/file/{encoded}", super::BASE_PATH),
    }
}

/// The parts of an upload form.
#[derive(Default)]
struct Form {
    file: Option<(String, Option<String>, Vec<u8>)>,
    alt: Option<String>,
    caption: Option<String>,
    width: Option<i64>,
    height: Option<i64>,
}

fn invalid(path: &str, message: &str) -> ApiError {
    ApiError::validation(vec![super::error::Issue { path: path.to_owned(), message: message.to_owned() }])
}

/// A file name as the browser sent it, without any directory part.
fn base_name(name: &str) -> String {
    name.rsplit(['/', '\\']).next().unwrap_or_default().chars().filter(|c| !c.is_control()).collect()
}

async fn read_form(req: &Request, rules: &UploadRules) -> Result<Form, ApiError> {
    if req.body_too_large {
        return Err(rules.too_large());
    }
    let content_type = req.content_type.as_deref().unwrap_or_default();
    let boundary = multer::parse_boundary(content_type)
        .map_err(|_| invalid("body", "A multipart/form-data body needs a boundary"))?;
    // Fed in small chunks, so the parser's buffer stays small; the file part is gathered once.
    let stream = futures::stream::iter(
        req.body.chunks(FEED_CHUNK_BYTES).map(|c| Ok::<_, Infallible>(bytes::Bytes::copy_from_slice(c))),
    );
    let limits = multer::SizeLimit::new().per_field(TEXT_FIELD_BYTES).for_field("file", rules.max_bytes);
    let constraints =
        multer::Constraints::new().allowed_fields(vec!["file", "alt", "caption", "width", "height"]).size_limit(limits);
    let mut multipart = multer::Multipart::with_constraints(stream, boundary, constraints);
    let mut form = Form::default();
    let mut seen: Vec<String> = Vec::new();
    loop {
        let field = match multipart.next_field().await {
            Ok(Some(f)) => f,
            Ok(None) => break,
            Err(multer::Error::UnknownField { field_name }) => {
                let name = field_name.unwrap_or_default();
                return Err(invalid(&name, "Unknown field; expected file, alt, caption, width or height"));
            }
            Err(_) => return Err(invalid("body", "The multipart/form-data body is malformed")),
        };
        let name = field.name().unwrap_or_default().to_owned();
        if seen.contains(&name) {
            return Err(invalid(&name, "Given more than once"));
        }
        seen.push(name.clone());
        let filename = field.file_name().map(base_name);
        let declared = field.content_type().map(ToString::to_string);
        let mut field = field;
        let mut data: Vec<u8> = Vec::new();
        loop {
            match field.chunk().await {
                Ok(Some(chunk)) => data.extend_from_slice(&chunk),
                Ok(None) => break,
                Err(multer::Error::FieldSizeExceeded { field_name, .. }) if field_name.as_deref() == Some("file") => {
                    return Err(rules.too_large())
                }
                Err(multer::Error::FieldSizeExceeded { .. }) => return Err(invalid(&name, "Too long")),
                Err(_) => return Err(invalid("body", "The multipart/form-data body is malformed")),
            }
        }
        let text = || String::from_utf8(data.clone()).map_err(|_| invalid(&name, "Expected UTF-8 text"));
        let dimension = |t: String| {
            t.trim()
                .parse::<i64>()
                .ok()
                .filter(|n| (1..=1_000_000).contains(n))
                .ok_or_else(|| invalid(&name, "Expected an integer from 1 to 1000000"))
        };
        match name.as_str() {
            "file" => {
                let filename = filename.filter(|f| !f.is_empty()).unwrap_or_else(|| "upload".to_owned());
                if filename.chars().count() > 255 {
                    return Err(invalid("file", "The file name is longer than 255 characters"));
                }
                form.file = Some((filename, declared, data));
            }
            "alt" | "caption" => {
                let t = text()?;
                if t.chars().count() > MAX_TEXT_CHARS {
                    return Err(invalid(&name, "At most 1000 characters"));
                }
                let t = Some(t).filter(|t| !t.is_empty());
                if name == "alt" {
                    form.alt = t;
                } else {
                    form.caption = t;
                }
            }
            "width" => form.width = Some(dimension(text()?)?),
            _ => form.height = Some(dimension(text()?)?),
        }
    }
    Ok(form)
}

/// `POST /media` with `multipart/form-data`: stores the file and registers it (201), or answers
/// with the media row that already holds these bytes (200, `deduplicated: true`).
pub async fn upload<E: Executor>(ctx: &Ctx<'_, E>, req: &Request) -> Result<Reply, ApiError> {
    let rules = &ctx.config.uploads;
    let form = read_form(req, rules).await?;
    let Some((filename, declared, bytes)) = form.file else {
        return Err(invalid("file", "Required: the file to upload"));
    };
    let kind = inspect::check(declared.as_deref(), &bytes, &rules.allowed).map_err(|r| match r {
        Refusal::NotAllowed(t) => ApiError::new(400, "INVALID_TYPE", format!("Files of type {t} may not be uploaded")),
        Refusal::Mismatch { declared, found: Some(found) } => {
            ApiError::new(400, "INVALID_TYPE", format!("The file is declared {declared} but its content is {found}"))
        }
        Refusal::Mismatch { declared, found: None } => {
            ApiError::new(400, "INVALID_TYPE", format!("The file's content is not recognisable as {declared}"))
        }
    })?;
    let Some(storage) = ctx.storage else {
        return Err(ApiError::new(
            503,
            "MEDIA_STORAGE_UNAVAILABLE",
            "No media bucket is bound; register files by JSON",
        ));
    };
    let sha256: [u8; 32] = Sha256::digest(&bytes).into();
    let hash = hex::encode(sha256);
    let public_url = ctx.config.media_public_url.as_deref();
    if let Some(existing) = repo::by_hash(ctx.exec, &hash).await? {
        return Ok((200, json!({"item": media_json(&existing, public_url), "deduplicated": true})));
    }
    let (width, height) = match (form.width, form.height) {
        (Some(w), Some(h)) => (Some(w), Some(h)),
        (w, h) => {
            let read = inspect::dimensions(&kind.mime, &bytes);
            (w.or(read.map(|d| d.0)), h.or(read.map(|d| d.1)))
        }
    };
    let key = format!("{}.{}", crate::ids::new_sortable_id((ctx.config.clock)()), kind.extension);
    let size = i64::try_from(bytes.len()).ok();
    storage
        .put(&key, bytes, &kind.mime, sha256)
        .await
        .map_err(|e| ApiError::internal(format!("storing {key}: {e}")))?;
    let new = NewMedia {
        filename,
        mime_type: kind.mime.clone(),
        size,
        width,
        height,
        alt: form.alt,
        caption: form.caption,
        storage_key: key.clone(),
        content_hash: Some(hash.clone()),
    };
    let inserted = repo::insert(ctx.exec, new).await;
    if inserted.is_err() {
        // Nothing may stay behind that no row references.
        if let Err(e) = storage.delete(std::slice::from_ref(&key)).await {
            ctx.log(format!("could not delete the unregistered object {key}: {e}; the storage sweep will"));
        }
    }
    match inserted {
        Ok(m) => Ok((201, json!({"item": media_json(&m, public_url)}))),
        // The same bytes were registered by a concurrent upload.
        Err(exec::Error::Unique(_)) => match repo::by_hash(ctx.exec, &hash).await? {
            Some(existing) => Ok((200, json!({"item": media_json(&existing, public_url), "deduplicated": true}))),
            None => Err(ApiError::conflict("The upload raced another change; retry it")),
        },
        Err(e) => Err(e.into()),
    }
}

/// `GET /media/file/{key}` (public): the stored bytes with their type, entity tag and a year of
/// caching; `If-None-Match` → 304, `Range` → 206 (416 when it cannot be served).
pub async fn file<E: Executor>(ctx: &Ctx<'_, E>, key: &str, req: &Request) -> Result<Response, ApiError> {
    let not_found = || ApiError::not_found("No stored file has this key");
    let storage = ctx.storage.ok_or_else(not_found)?;
    if key.is_empty() || key.len() > 1024 || key.contains('/') || key.chars().any(char::is_control) {
        return Err(not_found());
    }
    let object = storage
        .head(key)
        .await
        .map_err(|e| ApiError::internal(format!("reading {key}: {e}")))?
        .ok_or_else(not_found)?;
    let plan = serve::plan(&object, req.if_none_match.as_deref(), req.range.as_deref());
    Ok(Response {
        status: plan.status,
        content_type: "application/octet-stream",
        body: String::new(),
        no_store: false,
        cause: None,
        log: Vec::new(),
        headers: plan.headers,
        expose_cost: false,
        object: plan.body.map(|(offset, length)| (key.to_owned(), offset, length)),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn upload_rules_read_their_settings() {
        let default = UploadRules::from_settings(None, None);
        assert_eq!(default.max_bytes, 52_428_800, "50 MiB");
        assert_eq!(default.body_limit(), 52_428_800 + 65_536, "the file and 64 KiB of form framing");
        assert_eq!(UploadRules::from_settings(Some(" 1000 "), None).max_bytes, 1000);
        assert_eq!(UploadRules::from_settings(Some("1"), None).max_bytes, 1);
        for bad in ["0", "-1", "x", ""] {
            assert_eq!(UploadRules::from_settings(Some(bad), None).max_bytes, DEFAULT_MAX_UPLOAD_BYTES, "{bad}");
        }
        assert_eq!(UploadRules::from_settings(Some("1000"), None).body_limit(), 1000 + 65_536);
        let pdf_only = UploadRules::from_settings(None, Some("application/pdf"));
        assert!(pdf_only.allowed.allows("application/pdf") && !pdf_only.allowed.allows("image/png"));
    }

    #[test]
    fn file_urls_encode_the_key_as_one_segment() {
        assert_eq!(file_url(None, "abc.png"), "/_emdash/api/media/file/abc.png");
        assert_eq!(file_url(None, "a b/c.png"), "/_emdash/api/media/file/a%20b%2Fc.png");
        assert_eq!(file_url(Some("https://cdn.example/m/"), "k.png"), "https://cdn.example/m/k.png");
        assert_eq!(file_url(Some("https://cdn.example/m"), "k~_-.png"), "https://cdn.example/m/k~_-.png");
    }
}
