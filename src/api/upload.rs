//! `POST /media` with `multipart/form-data` (the upload EmDash's client sends): the form read
//! as it streams, its file handed to a [`storage::upload::Incoming`](Incoming), then registered.
//!
//! An upload is checked (allowlist, size, magic bytes), hashed, answered with the existing row
//! when its bytes are stored already, else stored under a new key and then registered. A refused
//! or deduplicated upload leaves no object behind: nothing is stored before the checks pass, and
//! an object whose row cannot be written is deleted before the response. The stored file is
//! served by [`media_file::get`](super::media_file::get).

use std::pin::Pin;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::task::{Context, Poll};

use bytes::Bytes;
use futures::StreamExt;
use serde_json::json;

use super::error::ApiError;
use super::media::media_json;
use super::{BodyError, BodyStream, Ctx, Reply, Request};
use crate::exec::{self, Executor};
use crate::lifecycle::media::replace::{self, Failure, FileChange};
use crate::model::auth::Role;
use crate::repo::media::{self as repo, NewMedia};
use crate::repo::versions::NewFile;
use crate::storage::inspect::{self, Allowlist, Refusal};
use crate::storage::upload::{Incoming, UploadError};
use crate::storage::Storage;

/// Room for the form's framing and its small fields beyond the file itself.
const FORM_OVERHEAD_BYTES: u64 = 64 * 1024;
/// Each text field (`alt`, `caption`, `width`, `height`) is small: at most this many bytes are
/// read of it, and `alt`/`caption` hold at most [`MAX_TEXT_CHARS`] characters (as in JSON).
const TEXT_FIELD_BYTES: u64 = 4 * 1024;
const MAX_TEXT_CHARS: usize = 1000;
/// The fields of an upload's form.
const UPLOAD_FIELDS: &[&str] = &["file", "alt", "caption", "width", "height"];
/// The fields of a replace's form: the item keeps its alt text and caption.
const REPLACE_FIELDS: &[&str] = &["file", "filename", "width", "height"];
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

/// The small fields of an upload form, and the file's name (the file streams into an
/// [`Incoming`]).
#[derive(Default)]
struct Form {
    filename: String,
    /// A replace's `filename` field: the item's new file name (`None`: kept).
    new_filename: Option<String>,
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
fn form_error(e: multer::Error, rules: &UploadRules, fields: &[&str]) -> ApiError {
    match e {
        multer::Error::UnknownField { field_name } => {
            let (last, rest) = fields.split_last().unwrap_or((&"file", &[]));
            let expected = format!("Unknown field; expected {} or {last}", rest.join(", "));
            invalid(&field_name.unwrap_or_default(), &expected)
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
    fields: &[&str],
    file: &mut Option<Incoming<'s>>,
) -> Result<Form, ApiError> {
    let content_type = req.content_type.as_deref().unwrap_or_default();
    let boundary = multer::parse_boundary(content_type)
        .map_err(|_| invalid("body", "A multipart/form-data body needs a boundary"))?;
    let limits = multer::SizeLimit::new()
        .whole_stream(rules.body_limit() as u64)
        .per_field(TEXT_FIELD_BYTES)
        .for_field("file", rules.max_bytes);
    let constraints = multer::Constraints::new().allowed_fields(fields.to_vec()).size_limit(limits);
    let fed = Arc::new(Fed::default());
    let paced = Paced { inner: body, fed: Arc::clone(&fed), recent: [0, 0], paused: false };
    let mut multipart = multer::Multipart::with_constraints(paced, boundary, constraints);
    let delivered = |chunk: &Bytes| fed.delivered.fetch_add(chunk.len() as u64, Ordering::Relaxed);
    let mut form = Form::default();
    let mut seen: Vec<String> = Vec::new();
    while let Some(mut field) = multipart.next_field().await.map_err(|e| form_error(e, rules, fields))? {
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
            form.filename = filename;
            let incoming = file.insert(Incoming::new(ctx_storage, &rules.allowed, declared, now_ms));
            while let Some(chunk) = field.chunk().await.map_err(|e| form_error(e, rules, fields))? {
                delivered(&chunk);
                incoming.push(&chunk).await.map_err(|e| upload_error(e, rules))?;
            }
            continue;
        }
        let mut data: Vec<u8> = Vec::new();
        while let Some(chunk) = field.chunk().await.map_err(|e| form_error(e, rules, fields))? {
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
            "filename" => {
                let value = text.trim();
                if value.is_empty() || value.chars().count() > 255 || value.chars().any(char::is_control) {
                    return Err(invalid("filename", "Expected a file name of 1 to 255 characters"));
                }
                form.new_filename = Some(value.to_owned());
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

/// What a file the store could not take means for the caller: a refusal is a 400, too many parts
/// the file's 413, a store failure a 500 (whose cause is only logged).
fn upload_error(e: UploadError, rules: &UploadRules) -> ApiError {
    match e {
        UploadError::Refused(r) => refused(r),
        UploadError::TooManyParts => rules.too_large(),
        e @ UploadError::Store { .. } => ApiError::internal(e.to_string()),
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
    let form = read_form(req, &mut body, storage, rules, (ctx.config.clock)(), UPLOAD_FIELDS, &mut file).await;
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
        if let Err(e) = file.abandon().await {
            ctx.log(format!("{e}; R2 expires its parts"));
        }
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
/// row inserted (a stored object whose row was certainly not written is deleted again; an insert
/// that may have committed is looked up first).
async fn register<E: Executor>(ctx: &Ctx<'_, E>, form: Form, file: &mut Incoming<'_>) -> Result<Reply, ApiError> {
    let rules = &ctx.config.uploads;
    let identified = file.identify().map_err(|e| upload_error(e, rules))?;
    let (kind, read, key) = (identified.kind.clone(), identified.dimensions, identified.key.clone());
    let hash = hex::encode(file.sha256());
    let public_url = ctx.config.media_public_url.as_deref();
    if let Some(reply) = already_stored(ctx, &hash).await? {
        return Ok(reply);
    }
    let (width, height) = match (form.width, form.height) {
        (Some(w), Some(h)) => (Some(w), Some(h)),
        (w, h) => (w.or(read.map(|d| d.0)), h.or(read.map(|d| d.1))),
    };
    file.store().await.map_err(|e| upload_error(e, rules))?;
    let new = NewMedia {
        filename: form.filename,
        mime_type: kind.mime,
        size: i64::try_from(file.size()).ok(),
        width,
        height,
        alt: form.alt,
        caption: form.caption,
        storage_key: key.clone(),
        content_hash: Some(hash.clone()),
        author_id: ctx.principal.as_ref().map(|p| p.token_id.clone()),
    };
    let inserted = match repo::insert(ctx.exec, new).await {
        // The insert may have committed before the error (D1 lost the connection after it):
        // the row the database holds decides. Unable to tell, the object stays: the storage
        // sweep deletes it once no uploaded row names it, and deleting it under a committed row
        // would lose the file.
        Err(e) if e.may_have_committed() => match repo::by_hash(ctx.exec, &hash).await {
            Ok(Some(m)) if m.storage_key == key => Ok(m),
            Ok(_) => Err(e),
            Err(lookup) => {
                ctx.log(format!("the object {key} stays for the storage sweep: its row is unknown ({lookup})"));
                return Err(e.into());
            }
        },
        other => other,
    };
    if inserted.is_err() {
        // Nothing may stay behind that no row references.
        if let Err(e) = ctx.storage.expect("stored above").delete(std::slice::from_ref(&key)).await {
            ctx.log(format!("could not delete the unregistered object {key}: {e}; the storage sweep will"));
        }
    }
    match inserted {
        Ok(m) => Ok((201, json!({"item": media_json(&m, public_url)}))),
        // The same bytes were registered by a concurrent upload.
        Err(exec::Error::Unique(_)) => already_stored(ctx, &hash)
            .await?
            .ok_or_else(|| ApiError::conflict("The upload raced another change; retry it")),
        Err(e) => Err(e.into()),
    }
}

/// The answer to an upload whose bytes (SHA-256 `hash`, hex) a media row holds already: that row
/// (200, `deduplicated`), brought back from the trash when it is there — which needs an editor,
/// as the restore route does (below editor: 403 `FORBIDDEN`, the item left in the trash). `None`
/// when no row holds them: the upload is a new one. A trashed row is restored only by a statement
/// that finds it still in the trash; one purged meanwhile is looked up again (and is then gone:
/// the upload is a new one), so the answer never names a row that is gone.
async fn already_stored<E: Executor>(ctx: &Ctx<'_, E>, hash: &str) -> Result<Option<Reply>, ApiError> {
    let public_url = ctx.config.media_public_url.as_deref();
    let deduplicated = |m: &repo::Media| (200, json!({"item": media_json(m, public_url), "deduplicated": true}));
    let may_restore = ctx.principal.as_ref().is_some_and(|p| p.role >= Role::Editor);
    // A row restored or purged between the look-up and the restore is looked up again; a third
    // race in a row is answered as one.
    for _ in 0..LOOKS {
        let Some(existing) = repo::by_hash(ctx.exec, hash).await? else { return Ok(None) };
        if existing.deleted_at.is_none() {
            return Ok(Some(deduplicated(&existing)));
        }
        if !may_restore {
            return Err(ApiError::new(
                403,
                "FORBIDDEN",
                "This file is in the media trash; restoring it needs an editor",
            )
            .with_details(json!({"id": existing.id})));
        }
        if let Some(restored) = repo::restore(ctx.exec, &existing.id).await? {
            return Ok(Some(deduplicated(&restored)));
        }
    }
    Err(ApiError::conflict("The upload raced another change; retry it"))
}

/// `POST /media/{id}/replace` with `multipart/form-data` (a `file`, and optionally `filename`,
/// `width`, `height`): the item takes the file under a new key, as an upload stores it (the same
/// checks, streaming and marker), and its current file becomes a version (see
/// [`replace::replace`]). Refused before the body is read: an unknown item (404), another
/// author's (403), an item in the trash (409). Bytes identical to the item's current file answer
/// the item unchanged (a retry after a lost answer); bytes that are another item's current file
/// are 409 `CONFLICT` naming it; neither stores anything. No object this request stored is left
/// behind unless a row names it, or a failure left that unknown (the storage sweep then takes it
/// once no row names it).
pub async fn replace_file<E: Executor>(
    ctx: &Ctx<'_, E>,
    id: &str,
    req: &Request,
    mut body: BodyStream<'_>,
) -> Result<Reply, ApiError> {
    let rules = &ctx.config.uploads;
    let Some(storage) = ctx.storage else {
        return Err(ApiError::new(503, "MEDIA_STORAGE_UNAVAILABLE", "No media bucket is bound"));
    };
    if !is_multipart(req) {
        return Err(invalid("body", "Expected a multipart/form-data body with the new file"));
    }
    let only_own = ctx.principal.as_ref().and_then(crate::model::auth::Principal::only_own);
    let item = match replace::changeable(ctx.exec, id, only_own).await? {
        Ok(m) => m,
        Err(refused) => {
            drain(&mut body).await;
            return super::media::file_change_answer(ctx, refused).await;
        }
    };
    let mut file = None;
    let form = read_form(req, &mut body, storage, rules, (ctx.config.clock)(), REPLACE_FIELDS, &mut file).await;
    if form.as_ref().is_err_and(|e| e.status != 413) {
        drain(&mut body).await;
    }
    let reply = match (form, file.as_mut()) {
        (Ok(form), Some(file)) => take_file(ctx, &item, form, file).await,
        (Ok(_), None) => Err(invalid("file", "Required: the new file")),
        (Err(e), _) => Err(e),
    };
    if let Some(mut file) = file {
        if let Err(e) = file.abandon().await {
            ctx.log(format!("{e}; R2 expires its parts"));
        }
    }
    reply
}

/// Settles a fully read replace: the item unchanged (the same bytes), refused (another item's
/// bytes), or the file stored and taken by the item (its object deleted again when the item
/// certainly did not take it).
async fn take_file<E: Executor>(
    ctx: &Ctx<'_, E>,
    item: &repo::Media,
    form: Form,
    file: &mut Incoming<'_>,
) -> Result<Reply, ApiError> {
    let rules = &ctx.config.uploads;
    let identified = file.identify().map_err(|e| upload_error(e, rules))?;
    let (kind, read, key) = (identified.kind.clone(), identified.dimensions, identified.key.clone());
    let hash = hex::encode(file.sha256());
    if item.content_hash.as_deref() == Some(hash.as_str()) {
        return super::media::file_change_answer(ctx, FileChange::Unchanged(item.clone())).await;
    }
    if let Some(holder) = repo::by_hash(ctx.exec, &hash).await?.filter(|h| h.id != item.id) {
        return super::media::file_change_answer(ctx, FileChange::HeldBy { id: holder.id }).await;
    }
    let (width, height) = match (form.width, form.height) {
        (Some(w), Some(h)) => (Some(w), Some(h)),
        (w, h) => (w.or(read.map(|d| d.0)), h.or(read.map(|d| d.1))),
    };
    file.store().await.map_err(|e| upload_error(e, rules))?;
    let new = NewFile {
        storage_key: key.clone(),
        mime_type: kind.mime,
        size: i64::try_from(file.size()).ok(),
        width,
        height,
        content_hash: hash,
        filename: form.new_filename,
    };
    let by = ctx.principal.as_ref().map(|p| p.token_id.as_str());
    let outcome = replace::replace(ctx.exec, item, new, by).await;
    let certainly_unnamed = match &outcome {
        Ok(FileChange::Changed(_)) => false,
        Ok(_) | Err(Failure::NotCommitted(_)) => true,
        Err(Failure::Unknown(e)) => {
            ctx.log(format!(
                "the object {key} stays for the storage sweep: whether its item names it is unknown ({e})"
            ));
            false
        }
    };
    if certainly_unnamed {
        if let Err(e) = ctx.storage.expect("stored above").delete(std::slice::from_ref(&key)).await {
            ctx.log(format!("could not delete the unused object {key}: {e}; the storage sweep will"));
        }
    }
    match outcome {
        Ok(change) => super::media::file_change_answer(ctx, change).await,
        Err(Failure::NotCommitted(e) | Failure::Unknown(e)) => Err(e.into()),
    }
}

/// How often [`already_stored`] looks the bytes up before it gives up.
const LOOKS: usize = 3;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_body_limit_is_the_file_and_the_form_framing() {
        let rules = UploadRules { max_bytes: 1000, allowed: Allowlist::default() };
        assert_eq!(rules.body_limit(), 1000 + 65_536);
        assert_eq!(UploadRules { max_bytes: u64::MAX, ..rules }.body_limit(), usize::MAX);
    }
}
