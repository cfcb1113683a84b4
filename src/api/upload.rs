//! Media files: `POST /media` with `multipart/form-data` (the upload EmDash's client sends) and
//! `GET`/`HEAD /media/file/{key}` (the stored bytes, cacheable for a year).
//!
//! An upload is checked (allowlist, size, magic bytes), hashed, answered with the existing row
//! when its bytes are stored already, else stored under a new key and then registered. A refused
//! or deduplicated upload leaves no object behind: nothing is stored before the checks pass, and
//! an object whose row cannot be written is deleted before the response.

use std::pin::Pin;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::task::{Context, Poll};

use bytes::Bytes;
use futures::StreamExt;
use serde_json::json;
use sha2::{Digest, Sha256};

use super::error::ApiError;
use super::media::media_json;
use super::{BodyError, BodyStream, Ctx, Reply, Request, Response};
use crate::exec::{self, Executor};
use crate::repo::media::{self as repo, NewMedia};
use crate::storage::inspect::{self, Allowlist, Refusal, Sniffed};
use crate::storage::{serve, valid_key, PartTag, Storage, PART_BYTES};

/// Room for the form's framing and its small fields beyond the file itself.
const FORM_OVERHEAD_BYTES: u64 = 64 * 1024;
/// Each text field (`alt`, `caption`, `width`, `height`) is small: at most this many bytes are
/// read of it, and `alt`/`caption` hold at most [`MAX_TEXT_CHARS`] characters (as in JSON).
const TEXT_FIELD_BYTES: u64 = 4 * 1024;
const MAX_TEXT_CHARS: usize = 1000;
/// How a body already read is handed to the form parser.
const FEED_CHUNK_BYTES: usize = 64 * 1024;

/// What an upload may be (`MEDIA_MAX_UPLOAD_BYTES`, `MEDIA_ALLOWED_TYPES`; see
/// [`crate::settings`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UploadRules {
    pub max_bytes: u64,
    pub allowed: Allowlist,
}

impl UploadRules {
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

/// The small fields of an upload form (the file streams into an [`Incoming`]).
#[derive(Default)]
struct Form {
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

/// An upload's body taken from [`Request::body`] (native callers), as the edge would stream it.
pub fn buffered(req: &Request) -> BodyStream<'_> {
    if req.body_too_large {
        return futures::stream::once(async { Err(BodyError::TooLarge) }).boxed();
    }
    futures::stream::iter(req.body.chunks(FEED_CHUNK_BYTES).map(|c| Ok(Bytes::copy_from_slice(c)))).boxed()
}

/// Why the form parser stopped reading the body.
#[derive(Debug, thiserror::Error)]
enum FeedError {
    #[error(transparent)]
    Body(#[from] BodyError),
    /// More than [`FORM_OVERHEAD_BYTES`] of the body were neither a file nor a field's value.
    #[error("the form's framing is too long")]
    Framing,
}

/// Bytes fed to the form parser, and bytes it gave back as field values: the difference is what
/// it holds as framing (preamble, boundaries, part headers), kept within [`FORM_OVERHEAD_BYTES`].
#[derive(Default)]
struct Fed {
    fed: AtomicU64,
    delivered: AtomicU64,
}

/// Hands a body to the form parser one chunk per poll: the parser reads for as long as its stream
/// is ready, so without a pause between chunks a body that is all there (a fast client, a test)
/// would be buffered whole before the first byte of the file reaches the bucket. Before each
/// chunk the parser's framing is checked: a body of junk without a boundary, or endless part
/// headers, is refused instead of buffered.
struct Paced<'a, 'b> {
    inner: &'a mut BodyStream<'b>,
    fed: Arc<Fed>,
    /// The sizes of the last two chunks fed.
    recent: [u64; 2],
    paused: bool,
}

impl futures::Stream for Paced<'_, '_> {
    type Item = Result<Bytes, FeedError>;

    fn poll_next(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        if !self.paused {
            self.paused = true;
            cx.waker().wake_by_ref();
            return Poll::Pending;
        }
        // The parser may not have handed on the last two chunks yet (it reads up to twice per
        // poll, before it hands anything on); everything before them that it holds is framing.
        let recent = self.recent[0] + self.recent[1];
        let handed_on = self.fed.delivered.load(Ordering::Relaxed);
        let held = self.fed.fed.load(Ordering::Relaxed).saturating_sub(handed_on + recent);
        if held > FORM_OVERHEAD_BYTES {
            return Poll::Ready(Some(Err(FeedError::Framing)));
        }
        let next = match self.inner.poll_next_unpin(cx) {
            Poll::Pending => return Poll::Pending,
            Poll::Ready(next) => next,
        };
        self.paused = false;
        if let Some(Ok(chunk)) = &next {
            self.fed.fed.fetch_add(chunk.len() as u64, Ordering::Relaxed);
            self.recent = [self.recent[1], chunk.len() as u64];
        }
        Poll::Ready(next.map(|n| n.map_err(FeedError::from)))
    }
}

/// What a multer error means for the caller: the body's own failure when the stream failed.
fn form_error(e: multer::Error, rules: &UploadRules) -> ApiError {
    match e {
        multer::Error::UnknownField { field_name } => {
            invalid(&field_name.unwrap_or_default(), "Unknown field; expected file, alt, caption, width or height")
        }
        multer::Error::FieldSizeExceeded { field_name, .. } if field_name.as_deref() == Some("file") => {
            rules.too_large()
        }
        multer::Error::FieldSizeExceeded { field_name, .. } => invalid(&field_name.unwrap_or_default(), "Too long"),
        multer::Error::StreamSizeExceeded { .. } => rules.too_large(),
        multer::Error::StreamReadFailed(cause) => match cause.downcast_ref::<FeedError>() {
            Some(FeedError::Body(BodyError::TooLarge)) => rules.too_large(),
            Some(FeedError::Framing) => invalid("body", "The form's boundaries and part headers exceed 64 KiB"),
            _ => invalid("body", "The body ended before the form did"),
        },
        multer::Error::IncompleteFieldData { .. } | multer::Error::IncompleteStream => {
            invalid("body", "The body ended before the form did")
        }
        _ => invalid("body", "The multipart/form-data body is malformed"),
    }
}

/// Reads the form: the small fields into a [`Form`], the file into `file` as it streams (so a
/// caller can abandon what was stored of it when this fails).
async fn read_form<'s>(
    req: &Request,
    body: &mut BodyStream<'_>,
    ctx_storage: &'s dyn Storage,
    rules: &'s UploadRules,
    now_ms: f64,
    file: &mut Option<Incoming<'s>>,
) -> Result<Form, ApiError> {
    let content_type = req.content_type.as_deref().unwrap_or_default();
    let boundary = multer::parse_boundary(content_type)
        .map_err(|_| invalid("body", "A multipart/form-data body needs a boundary"))?;
    let limits = multer::SizeLimit::new()
        .whole_stream(rules.body_limit() as u64)
        .per_field(TEXT_FIELD_BYTES)
        .for_field("file", rules.max_bytes);
    let constraints =
        multer::Constraints::new().allowed_fields(vec!["file", "alt", "caption", "width", "height"]).size_limit(limits);
    let fed = Arc::new(Fed::default());
    let paced = Paced { inner: body, fed: Arc::clone(&fed), recent: [0, 0], paused: false };
    let mut multipart = multer::Multipart::with_constraints(paced, boundary, constraints);
    let delivered = |chunk: &Bytes| fed.delivered.fetch_add(chunk.len() as u64, Ordering::Relaxed);
    let mut form = Form::default();
    let mut seen: Vec<String> = Vec::new();
    while let Some(mut field) = multipart.next_field().await.map_err(|e| form_error(e, rules))? {
        let name = field.name().unwrap_or_default().to_owned();
        if seen.contains(&name) {
            return Err(invalid(&name, "Given more than once"));
        }
        seen.push(name.clone());
        if name == "file" {
            let filename =
                field.file_name().map(base_name).filter(|f| !f.is_empty()).unwrap_or_else(|| "upload".into());
            if filename.chars().count() > 255 {
                return Err(invalid("file", "The file name is longer than 255 characters"));
            }
            let declared = field.content_type().map(ToString::to_string);
            let incoming = file.insert(Incoming::new(ctx_storage, rules, filename, declared, now_ms));
            while let Some(chunk) = field.chunk().await.map_err(|e| form_error(e, rules))? {
                delivered(&chunk);
                incoming.push(&chunk).await?;
            }
            continue;
        }
        let mut data: Vec<u8> = Vec::new();
        while let Some(chunk) = field.chunk().await.map_err(|e| form_error(e, rules))? {
            delivered(&chunk);
            data.extend_from_slice(&chunk);
        }
        let text = String::from_utf8(data).map_err(|_| invalid(&name, "Expected UTF-8 text"))?;
        let dimension = || {
            text.trim()
                .parse::<i64>()
                .ok()
                .filter(|n| (1..=1_000_000).contains(n))
                .ok_or_else(|| invalid(&name, "Expected an integer from 1 to 1000000"))
        };
        match name.as_str() {
            "alt" | "caption" => {
                if text.chars().count() > MAX_TEXT_CHARS {
                    return Err(invalid(&name, "At most 1000 characters"));
                }
                let t = Some(text.clone()).filter(|t| !t.is_empty());
                if name == "alt" {
                    form.alt = t;
                } else {
                    form.caption = t;
                }
            }
            "width" => form.width = Some(dimension()?),
            _ => form.height = Some(dimension()?),
        }
    }
    Ok(form)
}

fn refused(r: Refusal) -> ApiError {
    match r {
        Refusal::NotAllowed(t) => ApiError::new(400, "INVALID_TYPE", format!("Files of type {t} may not be uploaded")),
        Refusal::Mismatch { declared, found: Some(found) } => {
            ApiError::new(400, "INVALID_TYPE", format!("The file is declared {declared} but its content is {found}"))
        }
        Refusal::Mismatch { declared, found: None } => {
            ApiError::new(400, "INVALID_TYPE", format!("The file's content is not recognisable as {declared}"))
        }
    }
}

/// What the first bytes of a file settled: its type, an image's dimensions and its storage key.
struct Identified {
    kind: Sniffed,
    dimensions: Option<(i64, i64)>,
    key: String,
}

/// A multipart upload in progress.
struct Multipart {
    upload_id: String,
    parts: Vec<PartTag>,
}

/// An upload's file as it arrives: hashed chunk by chunk; its first [`PART_BYTES`] are held until
/// they settle its type (nothing is stored of a file that is refused); a larger file streams into
/// a multipart upload one part at a time, so at most about one part is held in memory. A file of
/// one part or less is stored by a single put once it is known not to be a duplicate.
struct Incoming<'s> {
    storage: &'s dyn Storage,
    rules: &'s UploadRules,
    filename: String,
    declared: Option<String>,
    now_ms: f64,
    hasher: Sha256,
    size: u64,
    held: Vec<u8>,
    identified: Option<Identified>,
    multipart: Option<Multipart>,
}

impl<'s> Incoming<'s> {
    fn new(
        storage: &'s dyn Storage,
        rules: &'s UploadRules,
        filename: String,
        declared: Option<String>,
        now_ms: f64,
    ) -> Self {
        Incoming {
            storage,
            rules,
            filename,
            declared,
            now_ms,
            hasher: Sha256::new(),
            size: 0,
            held: Vec::new(),
            identified: None,
            multipart: None,
        }
    }

    /// Settles the type from the bytes held (the file's first part, or all of it).
    fn identify(&mut self) -> Result<&Identified, ApiError> {
        if self.identified.is_none() {
            let kind = inspect::check(self.declared.as_deref(), &self.held, &self.rules.allowed).map_err(refused)?;
            let dimensions = inspect::dimensions(&kind.mime, &self.held);
            let key = format!("{}.{}", crate::ids::new_sortable_id(self.now_ms), kind.extension);
            self.identified = Some(Identified { kind, dimensions, key });
        }
        Ok(self.identified.as_ref().expect("identified above"))
    }

    async fn push(&mut self, chunk: &[u8]) -> Result<(), ApiError> {
        self.hasher.update(chunk);
        self.size += chunk.len() as u64;
        self.held.extend_from_slice(chunk);
        // A part is sent only once more follows it, so a file of one part is never multipart.
        while self.held.len() > PART_BYTES {
            // The first part settles the type before anything is stored.
            self.identify()?;
            let rest = self.held[PART_BYTES..].to_vec();
            self.held.truncate(PART_BYTES);
            let part = std::mem::replace(&mut self.held, rest);
            self.send_part(part).await?;
        }
        Ok(())
    }

    /// Sends the next part, starting the multipart upload with the first.
    async fn send_part(&mut self, part: Vec<u8>) -> Result<(), ApiError> {
        let identified = self.identified.as_ref().expect("identified before the first part");
        let key = identified.key.as_str();
        if self.multipart.is_none() {
            let upload_id = self
                .storage
                .begin_multipart(key, &identified.kind.mime)
                .await
                .map_err(|e| ApiError::internal(format!("starting the upload of {key}: {e}")))?;
            self.multipart = Some(Multipart { upload_id, parts: Vec::new() });
        }
        let multipart = self.multipart.as_mut().expect("started above");
        let number = u16::try_from(multipart.parts.len() + 1).map_err(|_| self.rules.too_large())?;
        let tag = self
            .storage
            .put_part(key, &multipart.upload_id, number, part)
            .await
            .map_err(|e| ApiError::internal(format!("storing part {number} of {key}: {e}")))?;
        multipart.parts.push(tag);
        Ok(())
    }

    /// Gives up what is unfinished: a multipart upload not completed is aborted (its parts never
    /// become an object).
    async fn abandon<E>(&mut self, ctx: &Ctx<'_, E>) {
        if let (Some(m), Some(id)) = (self.multipart.take(), &self.identified) {
            if let Err(e) = self.storage.abort_multipart(&id.key, &m.upload_id).await {
                ctx.log(format!("could not abort the upload of {}: {e}; R2 expires its parts", id.key));
            }
        }
    }

    /// Stores the rest: the last part and the completion, or the whole file in one put.
    async fn store(&mut self) -> Result<(), ApiError> {
        let sha256: [u8; 32] = self.hasher.clone().finalize().into();
        let held = std::mem::take(&mut self.held);
        let stored = if self.multipart.is_some() {
            self.send_part(held).await?;
            let m = self.multipart.as_ref().expect("checked above");
            let key = &self.identified.as_ref().expect("identified before storing").key;
            let completed = self.storage.complete_multipart(key, &m.upload_id, m.parts.clone()).await;
            if completed.is_ok() {
                self.multipart = None;
            }
            completed
        } else {
            let identified = self.identified.as_ref().expect("identified before storing");
            self.storage.put(&identified.key, held, &identified.kind.mime, sha256).await
        };
        let key = &self.identified.as_ref().expect("identified before storing").key;
        stored.map_err(|e| ApiError::internal(format!("storing {key}: {e}")))
    }
}

/// `POST /media` with `multipart/form-data`: streams the file into the bucket and registers it
/// (201), or answers with the media row that already holds these bytes (200, `deduplicated`).
/// Whatever happens, no object (or unfinished upload) this request made is left behind unless a
/// row references it.
pub async fn upload<E: Executor>(ctx: &Ctx<'_, E>, req: &Request, mut body: BodyStream<'_>) -> Result<Reply, ApiError> {
    let rules = &ctx.config.uploads;
    let Some(storage) = ctx.storage else {
        return Err(ApiError::new(
            503,
            "MEDIA_STORAGE_UNAVAILABLE",
            "No media bucket is bound; register files by JSON",
        ));
    };
    let mut file = None;
    let form = read_form(req, &mut body, storage, rules, (ctx.config.clock)(), &mut file).await;
    if form.as_ref().is_err_and(|e| e.status != 413) {
        drain(&mut body).await;
    }
    let reply = match (form, file.as_mut()) {
        (Ok(form), Some(file)) => register(ctx, form, file).await,
        (Ok(_), None) => Err(invalid("file", "Required: the file to upload")),
        (Err(e), _) => Err(e),
    };
    // A duplicate, a refusal or a failure leaves an upload unfinished: its parts go.
    if let Some(mut file) = file {
        file.abandon(ctx).await;
    }
    reply
}

/// Reads the rest of a refused upload's body, keeping nothing (at most its limit: past it the
/// stream ends), so that a client still sending receives the answer rather than a connection
/// reset. A file over the limit is the exception: it is answered 413 without reading the rest.
async fn drain(body: &mut BodyStream<'_>) {
    while let Some(Ok(_)) = body.next().await {}
}

/// Settles a fully read upload: the existing row for the same bytes, or the file stored and its
/// row inserted (a stored object whose row cannot be written is deleted again).
async fn register<E: Executor>(ctx: &Ctx<'_, E>, form: Form, file: &mut Incoming<'_>) -> Result<Reply, ApiError> {
    let identified = file.identify()?;
    let (kind, read, key) = (identified.kind.clone(), identified.dimensions, identified.key.clone());
    let hash = hex::encode(file.hasher.clone().finalize());
    let public_url = ctx.config.media_public_url.as_deref();
    let deduplicated = |m: &repo::Media| (200, json!({"item": media_json(m, public_url), "deduplicated": true}));
    if let Some(existing) = repo::by_hash(ctx.exec, &hash).await? {
        return Ok(deduplicated(&existing));
    }
    let (width, height) = match (form.width, form.height) {
        (Some(w), Some(h)) => (Some(w), Some(h)),
        (w, h) => (w.or(read.map(|d| d.0)), h.or(read.map(|d| d.1))),
    };
    file.store().await?;
    let new = NewMedia {
        filename: file.filename.clone(),
        mime_type: kind.mime,
        size: i64::try_from(file.size).ok(),
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
        if let Err(e) = ctx.storage.expect("stored above").delete(std::slice::from_ref(&key)).await {
            ctx.log(format!("could not delete the unregistered object {key}: {e}; the storage sweep will"));
        }
    }
    match inserted {
        Ok(m) => Ok((201, json!({"item": media_json(&m, public_url)}))),
        // The same bytes were registered by a concurrent upload.
        Err(exec::Error::Unique(_)) => match repo::by_hash(ctx.exec, &hash).await? {
            Some(existing) => Ok(deduplicated(&existing)),
            None => Err(ApiError::conflict("The upload raced another change; retry it")),
        },
        Err(e) => Err(e.into()),
    }
}

/// `GET /media/file/{key}` (public): the stored bytes with their type, entity tag and a year of
/// caching; `If-None-Match` → 304, `Range` → 206 (416 when it cannot be served). `HEAD` answers
/// exactly as `GET` would, `Content-Length` included, without reading the object.
///
/// Only objects this worker stored are served: those carrying the storage marker. An unmarked
/// object (another application's file in a shared bucket, or one a client named by a JSON
/// registration) is 404 — except an object uploaded before the marker existed, which an uploaded
/// media row (`content_hash` set) names: one statement decides that, on the unmarked path only.
/// A JSON registration never makes an unmarked object servable.
pub async fn file<E: Executor>(ctx: &Ctx<'_, E>, key: &str, req: &Request) -> Result<Response, ApiError> {
    let not_found = || ApiError::not_found("No stored file has this key");
    let storage = ctx.storage.ok_or_else(not_found)?;
    // The route gives one path segment as sent; a key R2 would refuse outright is simply absent.
    if !valid_key(key) {
        return Err(not_found());
    }
    let object = storage
        .head(key)
        .await
        .map_err(|e| ApiError::internal(format!("reading {key}: {e}")))?
        .ok_or_else(not_found)?;
    if !object.marked && !repo::uploaded_key(ctx.exec, key).await? {
        return Err(not_found());
    }
    let plan = serve::plan(&object, req.if_none_match.as_deref(), req.range.as_deref());
    let mut headers = plan.headers;
    let body = if req.method == "HEAD" {
        // The length the `GET` would send: the edge has it set from the body there (the bytes
        // served; an empty body for a 416; none at all for a 304).
        let length = match plan.body {
            Some((_, length)) => Some(length),
            None if plan.status == 304 => None,
            None => Some(0),
        };
        if let Some(length) = length {
            headers.push(("content-length", length.to_string()));
        }
        None
    } else {
        plan.body.map(|(offset, length)| (key.to_owned(), offset, length))
    };
    Ok(Response {
        no_store: false,
        headers,
        object: body,
        ..Response::raw(plan.status, "application/octet-stream", String::new())
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_body_limit_is_the_file_and_the_form_framing() {
        let rules = UploadRules { max_bytes: 1000, allowed: Allowlist::default() };
        assert_eq!(rules.body_limit(), 1000 + 65_536);
        assert_eq!(UploadRules { max_bytes: u64::MAX, ..rules }.body_limit(), usize::MAX);
    }

    #[test]
    fn file_urls_encode_the_key_as_one_segment() {
        assert_eq!(file_url(None, "abc.png"), "/_emdash/api/media/file/abc.png");
        assert_eq!(file_url(None, "a b/c.png"), "/_emdash/api/media/file/a%20b%2Fc.png");
        assert_eq!(file_url(Some("https://cdn.example/m/"), "k.png"), "https://cdn.example/m/k.png");
        assert_eq!(file_url(Some("https://cdn.example/m"), "k~_-.png"), "https://cdn.example/m/k~_-.png");
    }
}
