//! `/media/**`: the media library's metadata, where its files are served ([`file_url`]), and
//! `GET`/`HEAD /media/file/{key}` (the stored bytes, cacheable for a year). Uploads are
//! [`upload`](super::upload)'s.

use serde_json::{json, Value as Json};

use super::error::ApiError;
use super::input::{self, json_body, Issues, Obj};
use super::{Ctx, Reply, Request, Response};
use crate::exec::{self, Executor};
use crate::model::auth::Role;
use crate::model::state::CoverageStatus;
use crate::repo::media::{self as repo, Media, NewMedia, Purged};
use crate::repo::reads::{self as usage_repo, SafeDelete};
use crate::storage::{serve, valid_key};
use crate::usage::sitemap::encode_segment;

/// The URL a stored file is served at: under `MEDIA_PUBLIC_URL` when set, else the file route
/// (EmDash's form, `media/file/[...key]`): each path segment of the key percent-encoded (RFC 3986
/// unreserved characters kept), the `/` between them kept. A key with an empty, `.` or `..`
/// segment would be collapsed or resolved by URL parsers, moving the URL off the key (or out of
/// `MEDIA_PUBLIC_URL`): its slashes are encoded too (`%2F`), one segment the file route also
/// takes. `None` for a key that is itself `.` or `..` (which no URL can name; such keys can no
/// longer be registered).
pub fn file_url(public_url: Option<&str>, key: &str) -> Option<String> {
    let segments: Vec<&str> = key.split('/').collect();
    let path = if segments.iter().any(|s| matches!(*s, "" | "." | "..")) {
        if matches!(key, "." | "..") {
            return None;
        }
        encode_segment(key)
    } else {
        segments.into_iter().map(encode_segment).collect::<Vec<_>>().join("/")
    };
    Some(match public_url {
        Some(base) => format!("{}/{path}", base.trim_end_matches('/')),
        None => format!("{}/media/file/{path}", super::BASE_PATH),
    })
}

/// Whether a storage key can be registered: not `.` or `..`, which no file URL can name.
pub fn nameable_key(key: &str) -> bool {
    !matches!(key, "." | "..")
}

/// A media row as the API shows it; `url` is where its file is served (see [`file_url`]; `null`
/// for a key no URL can name).
pub fn media_json(m: &Media, public_url: Option<&str>) -> Json {
    json!({
        "url": file_url(public_url, &m.storage_key),
        "id": m.id,
        "filename": m.filename,
        "mimeType": m.mime_type,
        "size": m.size,
        "width": m.width,
        "height": m.height,
        "alt": m.alt,
        "caption": m.caption,
        "storageKey": m.storage_key,
        "status": m.status,
        "createdAt": m.created_at,
        "deletedAt": m.deleted_at,
    })
}

/// The most rows a filtered list page examines (a page may then hold fewer items than asked,
/// with a cursor to go on from): what a page reads stays bounded whatever the library holds.
pub const LIST_WINDOW: u32 = 200;
/// The most entries counted per item by `include=usage` (`usageCountCapped` says when reached).
pub const USAGE_COUNT_CAP: u32 = 100;
/// The most ids a bulk delete takes.
pub const BULK_MAX_IDS: usize = 100;
/// The entries a bulk delete names per item it refuses.
pub const BULK_ENTRIES: u32 = 5;

pub async fn create<E: Executor>(ctx: &Ctx<'_, E>, req: &Request) -> Result<Reply, ApiError> {
    let body = json_body(req)?;
    let mut issues = Issues::default();
    let allowed = ["filename", "mimeType", "size", "width", "height", "alt", "storageKey"];
    let Some(obj) = Obj::new(&mut issues, "", &body, &allowed) else {
        return Err(issues.finish().unwrap_err());
    };
    let filename = obj.string(&mut issues, "filename", true, 1, 255);
    let mime_type = obj.string(&mut issues, "mimeType", true, 3, 255);
    if mime_type.as_deref().is_some_and(|m| !is_mime_type(m)) {
        issues.add("mimeType", "Expected a MIME type such as image/jpeg");
    }
    let max = crate::model::MAX_SAFE_INTEGER;
    let size = obj.integer(&mut issues, "size", 0, max);
    let width = obj.integer(&mut issues, "width", 0, 1_000_000);
    let height = obj.integer(&mut issues, "height", 0, 1_000_000);
    let alt = obj.string(&mut issues, "alt", false, 0, 1000);
    let storage_key = obj.string(&mut issues, "storageKey", true, 1, 1024);
    if storage_key.as_deref().is_some_and(|k| k.chars().any(char::is_control)) {
        issues.add("storageKey", "Must not contain control characters");
    }
    if storage_key.as_deref().is_some_and(|k| !nameable_key(k)) {
        issues.add("storageKey", "Must not be . or .. (no file URL can name it)");
    }
    issues.finish()?;
    let new = NewMedia {
        filename: filename.unwrap_or_default(),
        mime_type: mime_type.unwrap_or_default().to_ascii_lowercase(),
        size,
        width,
        height,
        alt,
        caption: None,
        storage_key: storage_key.unwrap_or_default(),
        content_hash: None,
    };
    let key = new.storage_key.clone();
    // Content may link to this key already (the client chose it): the ticks re-check it all.
    match repo::insert_linkable(ctx.exec, new).await {
        Ok(m) => Ok((201, json!({"item": media_json(&m, ctx.config.media_public_url.as_deref())}))),
        // Name the item that holds the key, so that a client whose first try committed unseen
        // (an error after the write) can recognise its own registration.
        Err(exec::Error::Unique(_)) => {
            let existing = repo::id_by_storage_key(ctx.exec, &key).await?;
            Err(ApiError::conflict("Media with this storageKey already exists")
                .with_details(json!({"id": existing, "storageKey": key})))
        }
        Err(e) => Err(e.into()),
    }
}

pub async fn get<E: Executor>(ctx: &Ctx<'_, E>, id: &str, req: &Request) -> Result<Reply, ApiError> {
    let m = repo::get(ctx.exec, id).await?.ok_or_else(|| ApiError::not_found("Media not found"))?;
    let mut item = media_json(&m, ctx.config.media_public_url.as_deref());
    if input::query_flag(req, "includeUsage") {
        item["usage"] = super::usage::usage_summary(ctx, &m.id).await?;
    }
    Ok((200, json!({ "item": item })))
}

/// `GET /media`: the library (or, with `trashed=true`, the trash), newest first. Filters:
/// `search` (a part of the file name), `usage=used|unused` (by the safe delete's rule; editors
/// and admins only, by the route's access rule; `unused` only while coverage is complete, else
/// 409 `MEDIA_USAGE_COVERAGE_INCOMPLETE`), and `include=usage` adds each item's `usageCount`
/// (entries using it, up to [`USAGE_COUNT_CAP`]) for an editor or admin; below editor the counts
/// are left out (they count drafts), as `GET /media/{id}?includeUsage=1` leaves out its count.
/// A filtered page examines at most [`LIST_WINDOW`] items, so it may hold fewer than `limit` (even
/// none) with a `nextCursor` to go on from.
pub async fn list<E: Executor>(ctx: &Ctx<'_, E>, req: &Request) -> Result<Reply, ApiError> {
    let mut issues = Issues::default();
    let limit = input::limit(req, &mut issues);
    let after = input::cursor(req, &mut issues)?;
    let used = match input::query(req, "usage") {
        None => None,
        Some("used") => Some(true),
        Some("unused") => Some(false),
        Some(_) => {
            issues.add("usage", "Expected used or unused");
            None
        }
    };
    let include_usage = match input::query(req, "include") {
        None => false,
        Some("usage") => true,
        Some(_) => {
            issues.add("include", "Expected usage");
            false
        }
    };
    let search = input::query(req, "search").map(str::to_owned);
    if search.as_deref().is_some_and(|q| q.is_empty() || q.chars().count() > 255) {
        issues.add("search", "Expected 1 to 255 characters");
    }
    issues.finish()?;
    if used == Some(false) {
        // "Unused" is a claim only complete coverage proves (the safe delete's rule).
        let (status, _) = super::usage::coverage(ctx).await?;
        if status != CoverageStatus::Complete {
            return Err(coverage_incomplete(status));
        }
    }
    let shelf = if input::query_flag(req, "trashed") { repo::Shelf::Trash } else { repo::Shelf::Library };
    let filtered = search.is_some() || used.is_some();
    let window = if filtered { LIST_WINDOW.max(limit + 1) } else { limit + 1 };
    let may_read_usage = ctx.principal.as_ref().is_some_and(|p| p.role >= Role::Editor);
    let count_usage_up_to = (include_usage && may_read_usage).then_some(USAGE_COUNT_CAP);
    let filter = repo::ListFilter { search, used, count_usage_up_to };
    let rows = repo::list(ctx.exec, shelf, after, window, &filter).await?;
    let key = |m: &Media| input::encode_cursor(&m.created_at, &m.id);
    let last_examined = (rows.len() == window as usize).then(|| rows.last().map(|r| key(&r.media))).flatten();
    let mut matched: Vec<repo::Listed> = rows.into_iter().filter(|r| r.matches != 0).collect();
    let next = if matched.len() > limit as usize {
        matched.truncate(limit as usize);
        matched.last().map(|r| key(&r.media))
    } else {
        last_examined
    };
    let public_url = ctx.config.media_public_url.as_deref();
    let items: Vec<Json> = matched
        .iter()
        .map(|r| {
            let mut item = media_json(&r.media, public_url);
            if let Some(n) = r.usage_count {
                item["usageCount"] = json!(n);
                item["usageCountCapped"] = json!(n >= i64::from(USAGE_COUNT_CAP));
            }
            item
        })
        .collect();
    Ok((200, input::page(items, next)))
}

/// `DELETE /media/{id}`: moves the item to the trash (row and object kept; its file is no longer
/// served; `POST /media/{id}/restore` brings it back). Refused while the media is in use or
/// coverage cannot prove it unused; `?force=true` (admins only, checked by the route's access
/// rule) trashes it regardless. `?permanent=true` (admins only) deletes row and object at once,
/// in the trash or not: only if the safe delete would take it — the rule is carried by the one
/// statement that deletes, so a retry, or a content write racing the delete, is judged at that
/// instant — or outright with `force`. The row goes first, then, for an uploaded row, its stored
/// object (before the response); an object left behind by a failure in between is reclaimed by
/// the tick's storage sweep. A row registered by JSON names an object this worker did not store:
/// that object is left alone. Retried (the item already in the trash, or already deleted), it
/// answers as the first time, or 404 once the item is gone.
pub async fn delete<E: Executor>(ctx: &Ctx<'_, E>, id: &str, req: &Request) -> Result<Reply, ApiError> {
    let not_found = || ApiError::not_found("Media not found");
    let force = input::query_flag(req, "force");
    let done = || Ok((200, json!({"deleted": true, "id": id})));
    if input::query_flag(req, "permanent") {
        let deleted = if force {
            repo::delete(ctx.exec, id).await?.ok_or_else(not_found)?
        } else {
            unless_in_use(ctx, id, Removal::Delete).await?.ok_or_else(not_found)?
        };
        forget_object(ctx, &deleted).await;
        return done();
    }
    let media = repo::get(ctx.exec, id).await?.ok_or_else(not_found)?;
    if media.deleted_at.is_some() {
        return done();
    }
    if force {
        repo::trash(ctx.exec, id).await?;
        return done();
    }
    unless_in_use(ctx, id, Removal::Trash).await?;
    done()
}

/// What [`unless_in_use`] does with an item nothing uses.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Removal {
    /// Moves it to the trash (one guarded batch).
    Trash,
    /// Deletes its row for good (one statement that carries the rule).
    Delete,
}

/// Moves the media to the trash, or deletes its row, if nothing uses it and coverage proves it —
/// checked by the statement that does it, at that instant: otherwise 409 `MEDIA_IN_USE` naming
/// the entries, or 409 `MEDIA_USAGE_COVERAGE_INCOMPLETE`; 404 when there is no such media. The
/// row deleted, if it was deleted (`None` for the trash, or when it was in the trash already).
async fn unless_in_use<E: Executor>(ctx: &Ctx<'_, E>, id: &str, removal: Removal) -> Result<Option<Purged>, ApiError> {
    let not_found = || ApiError::not_found("Media not found");
    let rules = ctx.config.background.projection.rules.id();
    // Two tries: if the rule refused but the re-check finds neither a reference nor incomplete
    // coverage, what blocked it went away in between; try once more rather than guess a reason.
    for _ in 0..2 {
        match removal {
            Removal::Delete => {
                if let Some(deleted) = repo::delete_if_unused(ctx.exec, id, rules).await? {
                    return Ok(Some(deleted));
                }
                // Refused, or gone (a retry whose first try committed unseen).
                if repo::get(ctx.exec, id).await?.is_none() {
                    return Err(not_found());
                }
            }
            Removal::Trash => match usage_repo::trash_media_if_unused(ctx.exec, id, rules).await? {
                SafeDelete::Trashed => return Ok(None),
                // Gone, or in the trash already (a retry whose first try committed unseen).
                SafeDelete::Missing => {
                    return match repo::get(ctx.exec, id).await? {
                        Some(m) if m.deleted_at.is_some() => Ok(None),
                        _ => Err(not_found()),
                    };
                }
                SafeDelete::Refused => {}
            },
        }
        refusal(ctx, id).await?;
    }
    Err(coverage_incomplete(CoverageStatus::Complete))
}

/// Why the safe delete's rule refused the media: 409 `MEDIA_IN_USE` naming the entries that use
/// it, else 409 `MEDIA_USAGE_COVERAGE_INCOMPLETE`; `Ok` when neither holds any longer.
async fn refusal<E: Executor>(ctx: &Ctx<'_, E>, id: &str) -> Result<(), ApiError> {
    let entries = usage_repo::entries_using_media(ctx.exec, id, 10).await?;
    if let Some(count) = entries.first().map(|e| e.total).filter(|n| *n > 0) {
        let list: Vec<Json> = entries
            .iter()
            .map(|e| {
                json!({
                    "collection": e.collection_slug,
                    "contentId": e.content_id,
                    "slug": e.content_slug,
                    "indexed": e.indexed != 0,
                })
            })
            .collect();
        return Err(ApiError::new(409, "MEDIA_IN_USE", format!("Media is used by {count} entries"))
            .with_details(json!({"count": count, "entries": list})));
    }
    let (status, _) = super::usage::coverage(ctx).await?;
    if status != CoverageStatus::Complete {
        return Err(coverage_incomplete(status));
    }
    Ok(())
}

/// `POST /media/{id}/restore`: brings the item back from the trash (the same id and URL; its file
/// is served again). An item not in the trash answers as it is.
pub async fn restore<E: Executor>(ctx: &Ctx<'_, E>, id: &str) -> Result<Reply, ApiError> {
    let m = match repo::restore(ctx.exec, id).await? {
        Some(m) => m,
        None => repo::get(ctx.exec, id).await?.ok_or_else(|| ApiError::not_found("Media not found"))?,
    };
    Ok((200, json!({"item": media_json(&m, ctx.config.media_public_url.as_deref())})))
}

/// `POST /media/bulk-delete {ids}`: moves to the trash, in one statement, each item (at most
/// [`BULK_MAX_IDS`]) that the safe delete would take, and answers per id: `trashed` (an item
/// already in the trash too), `in_use` (with up to [`BULK_ENTRIES`] entries using it),
/// `coverage_incomplete` (nothing uses it that the index knows of, but coverage cannot prove
/// it), or `not_found`.
pub async fn bulk_delete<E: Executor>(ctx: &Ctx<'_, E>, req: &Request) -> Result<Reply, ApiError> {
    let body = json_body(req)?;
    let mut issues = Issues::default();
    let Some(obj) = Obj::new(&mut issues, "", &body, &["ids"]) else {
        return Err(issues.finish().unwrap_err());
    };
    let mut ids: Vec<String> = Vec::new();
    if let Some(items) = obj.array(&mut issues, "ids", true) {
        if !(1..=BULK_MAX_IDS).contains(&items.len()) {
            issues.add("ids", format!("Expected 1 to {BULK_MAX_IDS} ids"));
        }
        for (i, item) in items.iter().enumerate() {
            match item.as_str() {
                Some(s) if (1..=255).contains(&s.chars().count()) => {
                    if !ids.iter().any(|x| x == s) {
                        ids.push(s.to_owned());
                    }
                }
                _ => issues.add(format!("ids[{i}]"), "Expected a media id (1 to 255 characters)"),
            }
        }
    }
    issues.finish()?;
    let rules = ctx.config.background.projection.rules.id();
    let moved = repo::bulk_trash(ctx.exec, &ids, rules).await?;
    let rest: Vec<String> = ids.iter().filter(|id| !moved.contains(id)).cloned().collect();
    let statuses = if rest.is_empty() { Vec::new() } else { repo::bulk_status(ctx.exec, &rest, BULK_ENTRIES).await? };
    let items: Vec<Json> = ids
        .iter()
        .map(|id| {
            if moved.contains(id) {
                return json!({"id": id, "status": "trashed"});
            }
            let Some(s) = statuses.iter().find(|s| &s.id == id) else {
                return json!({"id": id, "status": "not_found"});
            };
            let entries: Vec<Json> = serde_json::from_str::<Vec<(String, String, Option<String>)>>(&s.entries)
                .unwrap_or_default()
                .into_iter()
                .map(|(collection, content_id, slug)| json!({"collection": collection, "contentId": content_id, "slug": slug}))
                .collect();
            match (s.found != 0, s.trashed != 0) {
                (false, _) => json!({"id": id, "status": "not_found"}),
                (true, true) => json!({"id": id, "status": "trashed"}),
                (true, false) if !entries.is_empty() || s.unindexed_use != 0 => {
                    json!({"id": id, "status": "in_use", "entries": entries})
                }
                (true, false) => json!({"id": id, "status": "coverage_incomplete"}),
            }
        })
        .collect();
    let trashed = items.iter().filter(|i| i["status"] == "trashed").count();
    Ok((200, json!({"items": items, "trashed": trashed})))
}

/// Deletes a deleted row's stored object, if an object store is bound and this worker stored it.
/// A failure is logged, not answered: the row is gone, and the storage sweep reclaims objects it
/// stored that no uploaded row names.
async fn forget_object<E: Executor>(ctx: &Ctx<'_, E>, deleted: &Purged) {
    let Some(storage) = ctx.storage else { return };
    // Whether this worker stored the object is read from the row the delete returned, not from
    // the object: only an upload sets `content_hash`, and an upload's key is one the worker made
    // up (a new random id) and stored the object under itself, while a JSON registration names a
    // key of the client's choosing (perhaps another application's file in the same bucket). So
    // the row alone is sound, and it costs no storage operation, where checking the object's
    // marker would cost a head (and the head and the delete would still not be atomic). A marked
    // object a JSON row happens to name is not deleted here either: the storage sweep takes it
    // (no uploaded row names it).
    if !deleted.uploaded() {
        return;
    }
    let key = &deleted.storage_key;
    if let Err(e) = storage.delete(std::slice::from_ref(key)).await {
        ctx.log(format!("the object {key} of a deleted media row stays until the storage sweep: {e}"));
    }
}

fn coverage_incomplete(status: CoverageStatus) -> ApiError {
    ApiError::new(
        409,
        "MEDIA_USAGE_COVERAGE_INCOMPLETE",
        "The media usage index cannot prove this media unused; retry when coverage is complete",
    )
    .with_details(json!({"coverage": {"status": status}}))
}

/// `GET /media/file/{key}` (public): the stored bytes with their type, entity tag and a year of
/// caching; `If-None-Match` → 304, `Range` → 206 (416 when it cannot be served). `HEAD` answers
/// exactly as `GET` would, `Content-Length` included, without reading the object.
///
/// An object is served only while an uploaded media row (`content_hash` set: this worker stored
/// the object, under a key it chose) names its key and that row is outside the trash. Whatever
/// else the bucket holds is 404: another application's file, an object a client named by a JSON
/// registration (a JSON row never makes an object servable, even one this worker once stored), the
/// file of an item in the trash, and the object of one deleted (its delete still to come, or
/// failed and waiting for the storage sweep). One statement on the unique index of storage keys
/// decides; an object uploaded before the storage marker existed is served by the same rule.
pub async fn file<E: Executor>(ctx: &Ctx<'_, E>, key: &str, req: &Request) -> Result<Response, ApiError> {
    let not_found = || ApiError::not_found("No stored file has this key");
    let storage = ctx.storage.ok_or_else(not_found)?;
    // The route gives the key decoded, slashes included; a key R2 would refuse is simply absent.
    if !valid_key(key) {
        return Err(not_found());
    }
    let object = storage
        .head(key)
        .await
        .map_err(|e| ApiError::internal(format!("reading {key}: {e}")))?
        .ok_or_else(not_found)?;
    // One statement on the unique index of storage keys.
    if !repo::key_served(ctx.exec, key).await? {
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

/// `type/subtype`, each starting with a letter or digit and made of RFC 6838 token characters.
fn is_mime_type(m: &str) -> bool {
    let part = |p: &str| {
        p.as_bytes().first().is_some_and(u8::is_ascii_alphanumeric)
            && p.bytes().all(|b| b.is_ascii_alphanumeric() || b"!#$&^_.+-".contains(&b))
    };
    m.split_once('/').is_some_and(|(t, s)| part(t) && part(s))
}

#[cfg(test)]
mod tests {
    use super::{file_url, is_mime_type};

    #[test]
    fn mime_types_are_ascii_tokens() {
        for ok in ["image/jpeg", "application/vnd.openxmlformats-officedocument.wordprocessingml.document", "a/b+c"] {
            assert!(is_mime_type(ok), "{ok}");
        }
        for bad in ["image", "/jpeg", "image/", "ā/b", "image/ jpeg", "image/jp eg", "a/b/c", "-a/b"] {
            assert!(!is_mime_type(bad), "{bad}");
        }
    }

    #[test]
    fn file_urls_encode_each_segment_of_the_key_and_keep_its_slashes() {
        let url = |public: Option<&str>, key: &str| file_url(public, key).unwrap();
        assert_eq!(url(None, "abc.png"), "/_emdash/api/media/file/abc.png");
        assert_eq!(url(None, "a b/c.png"), "/_emdash/api/media/file/a%20b/c.png");
        assert_eq!(url(None, "2026/05/ü+%.png"), "/_emdash/api/media/file/2026/05/%C3%BC%2B%25.png");
        assert_eq!(url(Some("https://cdn.example/m/"), "k.png"), "https://cdn.example/m/k.png");
        assert_eq!(url(Some("https://cdn.example/m"), "k~_-.png"), "https://cdn.example/m/k~_-.png");
        assert_eq!(url(Some("https://cdn.example/m"), "a/b c/d.png"), "https://cdn.example/m/a/b%20c/d.png");
        assert_eq!(url(None, "..a/b../.c"), "/_emdash/api/media/file/..a/b../.c", "not dot segments");
    }

    #[test]
    fn a_key_with_a_dot_or_empty_segment_is_one_segment_and_a_dot_key_has_no_url() {
        let url = |public: Option<&str>, key: &str| file_url(public, key);
        for (key, path) in [
            ("a/../b.png", "a%2F..%2Fb.png"),
            ("../b.png", "..%2Fb.png"),
            ("./b.png", ".%2Fb.png"),
            ("a/.", "a%2F."),
            ("a//b.png", "a%2F%2Fb.png"),
            ("/b.png", "%2Fb.png"),
            ("b/", "b%2F"),
        ] {
            assert_eq!(url(None, key), Some(format!("/_emdash/api/media/file/{path}")), "{key}");
            assert_eq!(
                url(Some("https://cdn.example/m/"), key),
                Some(format!("https://cdn.example/m/{path}")),
                "{key}"
            );
        }
        for key in [".", ".."] {
            assert_eq!((url(None, key), url(Some("https://cdn.example/m"), key)), (None, None), "{key}");
            assert!(!super::nameable_key(key));
        }
        assert!(super::nameable_key("..."));
    }
}
