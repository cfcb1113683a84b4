//! `/media/**`: the media library's metadata and where its files are served ([`file_url`]); what
//! becomes of an item (trash, delete, restore) is decided by [`crate::lifecycle::media`] and
//! answered here. The stored bytes are [`media_file`](super::media_file)'s, uploads
//! [`upload`](super::upload)'s.

use serde_json::{json, Value as Json};

use super::error::ApiError;
use super::input::{self, json_body, Issues, Obj};
use super::{Ctx, Reply, Request};
use crate::exec::{self, Executor};
use crate::lifecycle::media::replace::FileChange;
use crate::lifecycle::media::{self, BulkOutcome, DeleteOutcome, KeptObject, Removal, RestoreOutcome};
use crate::model::auth::{Principal, Role};
use crate::model::state::CoverageStatus;
use crate::repo::media::{self as repo, Media, MetadataUpdate, NewMedia};
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

/// A media row as the API shows it, in EmDash's media item shape (`MediaItem`: its fields, with
/// `blurhash` and `dominantColor` always `null` — no placeholders are computed — and `contentHash`
/// set for uploads only), plus `url`, where its file is served (see [`file_url`]; `null` for a
/// key no URL can name), and `deletedAt` (the trash). `authorId` is the token that registered or
/// uploaded it (`null`: registered before authors were recorded).
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
        "contentHash": m.content_hash,
        "blurhash": null,
        "dominantColor": null,
        "authorId": m.author_id,
        "createdAt": m.created_at,
        "deletedAt": m.deleted_at,
    })
}

/// The author whose media alone the caller may change or delete (`None`: any item). EmDash's
/// media RBAC: below editor, only your own uploads and registrations.
fn only_own<'c, E>(ctx: &'c Ctx<'_, E>) -> Option<&'c str> {
    ctx.principal.as_ref().and_then(Principal::only_own)
}

/// 403 when the caller may change only its own media and `m` is not one of them (an item without
/// an author is nobody's own).
fn check_owner<E>(ctx: &Ctx<'_, E>, m: &Media) -> Result<(), ApiError> {
    if media::may_change(m, only_own(ctx)) {
        Ok(())
    } else {
        Err(not_own())
    }
}

fn not_own() -> ApiError {
    ApiError::new(403, "FORBIDDEN", "Only editors and admins may change media uploaded or registered by someone else")
}

/// The most rows a filtered list page examines (a page may then hold fewer items than asked,
/// with a cursor to go on from): what a page reads stays bounded whatever the library holds.
pub const LIST_WINDOW: u32 = 200;
/// The longest `q` (a part of the file name), in characters once trimmed (EmDash's bound).
pub const Q_MAX_CHARS: usize = 200;
/// The longest `search` (the older name of that filter, untrimmed), in characters.
pub const SEARCH_MAX_CHARS: usize = 255;
/// The most entries a `mimeType` list takes.
pub const MIME_FILTERS_MAX: usize = 20;
/// The longest alt text and caption, in characters (as a registration or an upload takes them).
pub const TEXT_MAX_CHARS: usize = 1000;
/// The largest width and height, in pixels (as a registration takes them).
pub const DIMENSION_MAX: i64 = 1_000_000;
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
        author_id: ctx.principal.as_ref().map(|p| p.token_id.clone()),
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

/// The most versions an item's view shows (`versionsMore` says when it has more).
pub const VERSIONS_SHOWN: u32 = 20;
/// The most entries counted as linking to one version (`linked`).
pub const VERSION_LINKS_CAP: u32 = 100;

/// A media item as `GET /media/{id}` shows it: [`media_json`] with its `versions`, newest first
/// (at most [`VERSIONS_SHOWN`], and `versionsMore: true` when there are more): each earlier file's
/// `storageKey` and `url` (still served while the item is outside the trash), `filename`,
/// `mimeType`, `size`, `width`, `height`, when it was replaced and by whom, and `linked`, how many
/// entries have a file URL to it (counted up to [`VERSION_LINKS_CAP`]).
pub async fn item_json<E: Executor>(ctx: &Ctx<'_, E>, m: &Media) -> Result<Json, ApiError> {
    let public_url = ctx.config.media_public_url.as_deref();
    let mut item = media_json(m, public_url);
    let mut versions = crate::repo::versions::list(ctx.exec, &m.id, VERSIONS_SHOWN + 1, VERSION_LINKS_CAP).await?;
    let more = versions.len() > VERSIONS_SHOWN as usize;
    versions.truncate(VERSIONS_SHOWN as usize);
    item["versions"] = versions
        .iter()
        .map(|v| {
            json!({
                "storageKey": v.storage_key,
                "url": file_url(public_url, &v.storage_key),
                "filename": v.filename,
                "mimeType": v.mime_type,
                "size": v.size,
                "width": v.width,
                "height": v.height,
                "replacedAt": v.replaced_at,
                "replacedBy": v.replaced_by,
                "linked": v.linked,
            })
        })
        .collect();
    if more {
        item["versionsMore"] = json!(true);
    }
    Ok(item)
}

pub async fn get<E: Executor>(ctx: &Ctx<'_, E>, id: &str, req: &Request) -> Result<Reply, ApiError> {
    let m = repo::get(ctx.exec, id).await?.ok_or_else(|| ApiError::not_found("Media not found"))?;
    let mut item = item_json(ctx, &m).await?;
    if input::query_flag(req, "includeUsage") {
        let mut usage = super::usage::usage_summaries(ctx, std::slice::from_ref(&m.id)).await?;
        item["usage"] = usage.pop().unwrap_or_default();
    }
    Ok((200, json!({ "item": item })))
}

/// `PUT /media/{id}` (EmDash's `mediaUpdateBody`): sets the item's `alt`, `caption`, `width` and
/// `height`, those given (each optional; strings of at most [`TEXT_MAX_CHARS`], `""` clears one;
/// integers from 1 to [`DIMENSION_MAX`]; `null` and unknown keys are refused), and answers the
/// item. Below editor only the caller's own items (else 403 `FORBIDDEN`, nothing changed): the
/// one statement that updates carries that condition. Nothing the usage index reads changes.
pub async fn update<E: Executor>(ctx: &Ctx<'_, E>, id: &str, req: &Request) -> Result<Reply, ApiError> {
    let body = json_body(req)?;
    let mut issues = Issues::default();
    let Some(obj) = Obj::new(&mut issues, "", &body, &["alt", "caption", "width", "height"]) else {
        return Err(issues.finish().unwrap_err());
    };
    let update = MetadataUpdate {
        alt: given_text(&obj, &mut issues, "alt"),
        caption: given_text(&obj, &mut issues, "caption"),
        width: given_dimension(&obj, &mut issues, "width"),
        height: given_dimension(&obj, &mut issues, "height"),
    };
    issues.finish()?;
    if let Some(m) = repo::update_metadata(ctx.exec, id, update, only_own(ctx)).await? {
        return Ok((200, json!({"item": item_json(ctx, &m).await?})));
    }
    // Nothing matched: no such item, or not the caller's (an item's author never changes).
    let m = repo::get(ctx.exec, id).await?.ok_or_else(|| ApiError::not_found("Media not found"))?;
    check_owner(ctx, &m)?;
    Err(ApiError::conflict("The media item changed while it was updated; retry"))
}

/// A string value of `key` when the body has it: at most [`TEXT_MAX_CHARS`] characters; `null` or
/// another type is an issue.
fn given_text(obj: &Obj<'_>, issues: &mut Issues, key: &str) -> Option<String> {
    match obj.raw(key)? {
        Json::String(_) => obj.string(issues, key, false, 0, TEXT_MAX_CHARS),
        _ => {
            issues.add(obj.path(key), "Expected a string");
            None
        }
    }
}

/// A width or height when the body has it: an integer from 1 to [`DIMENSION_MAX`]; `null` or
/// anything else is an issue.
fn given_dimension(obj: &Obj<'_>, issues: &mut Issues, key: &str) -> Option<i64> {
    match obj.raw(key)? {
        Json::Null => {
            issues.add(obj.path(key), format!("Expected an integer from 1 to {DIMENSION_MAX}"));
            None
        }
        _ => obj.integer(issues, key, 1, DIMENSION_MAX),
    }
}

/// `GET /media`: the library (or, with `trashed=true`, the trash), newest first, as EmDash's
/// "List Media" answers it (and its client's `mediaList` asks: `mimeType`, `limit`, `cursor`,
/// `includeUsage=1`). Filters: `mimeType` (a comma-separated list of types, each whole or
/// `type/*`), `q` (a part of the file name, case-insensitive; `search` is its older name, and
/// given both, a name must contain both),
/// `usage=used|unused` (by what blocks a delete, `uses/blocks_delete.sql`; editors and admins only, by the route's access
/// rule; `unused` only while coverage is complete, else 409 `MEDIA_USAGE_COVERAGE_INCOMPLETE`).
/// `includeUsage=1` gives each item EmDash's `usage` summary, by exactly the rules of
/// `GET /media/{id}?includeUsage=1` (a count only for an editor or admin while coverage is
/// complete). `include=usage` adds each item's `usageCount` (entries that count as a use, as
/// the item's `usage.count` counts them, `uses/counts_as_use.sql`, up to [`USAGE_COUNT_CAP`])
/// for an editor or admin; below editor those counts
/// are left out (they count drafts). A filtered page examines at most [`LIST_WINDOW`] items, so it
/// may hold fewer than `limit` (even none) with a `nextCursor` to go on from; the last page has no
/// `nextCursor` (EmDash's list leaves it out).
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
    let name_parts = name_parts(req, &mut issues);
    let mime_types = input::query(req, "mimeType").and_then(|raw| mime_filters(raw, &mut issues));
    issues.finish()?;
    if used == Some(false) {
        // "Unused" is a claim only complete coverage proves (the safe delete's rule).
        let (status, _) = super::usage::coverage(ctx).await?;
        if status != CoverageStatus::Complete {
            return Err(coverage_incomplete(status));
        }
    }
    let shelf = if input::query_flag(req, "trashed") { repo::Shelf::Trash } else { repo::Shelf::Library };
    let filtered = !name_parts.is_empty() || used.is_some() || mime_types.is_some();
    let window = if filtered { LIST_WINDOW.max(limit + 1) } else { limit + 1 };
    let may_read_usage = ctx.principal.as_ref().is_some_and(|p| p.role >= Role::Editor);
    let count_usage_up_to = (include_usage && may_read_usage).then_some(USAGE_COUNT_CAP);
    let filter = repo::ListFilter { name_parts, mime_types, used, count_usage_up_to };
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
    let mut items: Vec<Json> = matched
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
    if input::query_flag(req, "includeUsage") {
        let ids: Vec<String> = matched.iter().map(|r| r.media.id.clone()).collect();
        let summaries = super::usage::usage_summaries(ctx, &ids).await?;
        for (item, usage) in items.iter_mut().zip(summaries) {
            item["usage"] = usage;
        }
    }
    Ok((200, input::page(items, next)))
}

/// The file-name filter: the parts of the name asked for, each case-insensitive: `q` (EmDash's:
/// at most [`Q_MAX_CHARS`] characters and not only spaces; the spaces around it are trimmed) and
/// `search` (its older name: 1 to [`SEARCH_MAX_CHARS`] characters, untrimmed). Given both, a name
/// must contain both.
fn name_parts(req: &Request, issues: &mut Issues) -> Vec<String> {
    let mut parts = Vec::new();
    if let Some(q) = input::query(req, "q") {
        let trimmed = q.trim_matches(|c: char| c.is_ascii_whitespace());
        if trimmed.is_empty() || q.chars().count() > Q_MAX_CHARS {
            issues.add("q", format!("Expected 1 to {Q_MAX_CHARS} characters, not only spaces"));
        } else {
            parts.push(trimmed.to_owned());
        }
    }
    if let Some(search) = input::query(req, "search") {
        if search.is_empty() || search.chars().count() > SEARCH_MAX_CHARS {
            issues.add("search", format!("Expected 1 to {SEARCH_MAX_CHARS} characters"));
        } else {
            parts.push(search.to_owned());
        }
    }
    parts
}

/// The longest `mimeType` list, in characters.
pub const MIME_FILTER_MAX_CHARS: usize = 2048;

/// `mimeType`, EmDash's comma-separated list, as the list's filter entries: each without the
/// spaces and tabs around it and its parameters (`;…`), lower-cased, a whole type
/// (`application/pdf`) or, from `type/*` or `type/`, the prefix `type/`. Empty entries are
/// skipped (as EmDash does); no entry at all, more than [`MIME_FILTERS_MAX`], one that is not a
/// MIME type, or a list over [`MIME_FILTER_MAX_CHARS`] is an issue.
fn mime_filters(raw: &str, issues: &mut Issues) -> Option<Vec<String>> {
    let blank = [' ', '\t'];
    let mut out: Vec<String> = Vec::new();
    for entry in raw.split(',').map(|e| e.trim_matches(blank)).filter(|e| !e.is_empty()) {
        let entry = entry.split(';').next().unwrap_or_default().trim_matches(blank).to_ascii_lowercase();
        let prefix = entry.strip_suffix("/*").or_else(|| entry.strip_suffix('/'));
        let valid = match prefix {
            Some(kind) => is_mime_type(&format!("{kind}/x")),
            None => is_mime_type(&entry),
        };
        if !valid {
            issues.add(
                "mimeType",
                "Expected a comma-separated list of MIME types: type/subtype, or type/* for every subtype",
            );
            return None;
        }
        out.push(prefix.map_or_else(|| entry.clone(), |kind| format!("{kind}/")));
    }
    if out.is_empty() || out.len() > MIME_FILTERS_MAX || raw.chars().count() > MIME_FILTER_MAX_CHARS {
        issues.add(
            "mimeType",
            format!("Expected 1 to {MIME_FILTERS_MAX} MIME types in at most {MIME_FILTER_MAX_CHARS} characters"),
        );
        return None;
    }
    Some(out)
}

/// `DELETE /media/{id}`: moves the item to the trash (row and object kept; its file is no longer
/// served; `POST /media/{id}/restore` brings it back). Below editor only the caller's own items
/// (EmDash's `media:delete_own`; else 403 `FORBIDDEN`, nothing changed). Refused while the media
/// is in use or coverage cannot prove it unused; `?force=true` (admins only, checked by the
/// route's access rule) trashes it regardless. `?permanent=true` (admins only) deletes row and object at once,
/// in the trash or not: only if the safe delete would take it — the rule is carried by the one
/// statement that deletes, so a retry, or a content write racing the delete, is judged at that
/// instant — or outright with `force`. The row goes first, then, for an uploaded row, its stored
/// object (before the response); an object left behind by a failure in between is reclaimed by
/// the tick's storage sweep. A row registered by JSON names an object this worker did not store:
/// that object is left alone. Retried (the item already in the trash, or already deleted), it
/// answers as the first time, or 404 once the item is gone.
pub async fn delete<E: Executor>(ctx: &Ctx<'_, E>, id: &str, req: &Request) -> Result<Reply, ApiError> {
    let force = input::query_flag(req, "force");
    let removal = if input::query_flag(req, "permanent") {
        Removal::Permanent { force }
    } else {
        Removal::Trash { force, only_own: only_own(ctx) }
    };
    let rules = &ctx.config.background.projection.rules;
    let outcome = media::delete(ctx.exec, ctx.storage, rules, id, removal).await?;
    // The row is gone: an object left behind is logged, not answered.
    if let DeleteOutcome::Deleted { kept: Some(KeptObject { key, error }) } = &outcome {
        ctx.log(format!("the object {key} of a deleted media row stays until the storage sweep: {error}"));
    }
    delete_answer(id, outcome)
}

/// What `DELETE /media/{id}` answers for each outcome.
fn delete_answer(id: &str, outcome: DeleteOutcome) -> Result<Reply, ApiError> {
    match outcome {
        DeleteOutcome::Trashed | DeleteOutcome::Deleted { .. } => Ok((200, json!({"deleted": true, "id": id}))),
        DeleteOutcome::NotFound => Err(ApiError::not_found("Media not found")),
        DeleteOutcome::NotOwn => Err(not_own()),
        DeleteOutcome::InUse { count, entries } => {
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
            Err(ApiError::new(409, "MEDIA_IN_USE", format!("Media is used by {count} entries"))
                .with_details(json!({"count": count, "entries": list})))
        }
        DeleteOutcome::CoverageIncomplete { status } => Err(coverage_incomplete(status)),
        DeleteOutcome::Changed => Err(ApiError::conflict("The media item changed while it was deleted; retry")),
    }
}

/// `POST /media/{id}/restore`: brings the item back from the trash (the same id and URL; its file
/// is served again). An item not in the trash answers as it is.
pub async fn restore<E: Executor>(ctx: &Ctx<'_, E>, id: &str) -> Result<Reply, ApiError> {
    restore_answer(media::restore(ctx.exec, id).await?, ctx.config.media_public_url.as_deref())
}

/// `POST /media/{id}/revert {"version": "<storageKey>"}` (strict body): the item's version of that
/// key becomes its current file again, and its current file a version (as a replace does; the
/// same permissions and refusals). Reverting to the current file answers the item unchanged (a
/// retry after a lost answer); a key that is no version of this item is 404.
pub async fn revert<E: Executor>(ctx: &Ctx<'_, E>, id: &str, req: &Request) -> Result<Reply, ApiError> {
    let body = json_body(req)?;
    let mut issues = Issues::default();
    let Some(obj) = Obj::new(&mut issues, "", &body, &["version"]) else {
        return Err(issues.finish().unwrap_err());
    };
    let version = obj.string(&mut issues, "version", true, 1, 1024);
    issues.finish()?;
    let version = version.unwrap_or_default();
    let by = ctx.principal.as_ref().map(|p| p.token_id.as_str());
    let change = media::replace::revert(ctx.exec, id, &version, only_own(ctx), by).await?;
    file_change_answer(ctx, change).await
}

/// What a replace or a revert answers for each outcome: the item as `GET /media/{id}` shows it
/// (200), or why not.
pub async fn file_change_answer<E: Executor>(ctx: &Ctx<'_, E>, change: FileChange) -> Result<Reply, ApiError> {
    match change {
        FileChange::Changed(m) | FileChange::Unchanged(m) => Ok((200, json!({"item": item_json(ctx, &m).await?}))),
        FileChange::NotFound => Err(ApiError::not_found("Media not found")),
        FileChange::NotOwn => Err(not_own()),
        FileChange::InTrash => Err(ApiError::conflict("The media item is in the trash; restore it first")),
        FileChange::NoSuchVersion => Err(ApiError::not_found("The media item has no version of this storage key")),
        FileChange::HeldBy { id } => {
            Err(ApiError::conflict("Another media item's file has these bytes").with_details(json!({"id": id})))
        }
        FileChange::Raced => Err(ApiError::conflict("The media item's file changed meanwhile; retry")),
    }
}

/// What `POST /media/{id}/restore` answers for each outcome.
fn restore_answer(outcome: RestoreOutcome, public_url: Option<&str>) -> Result<Reply, ApiError> {
    match outcome {
        RestoreOutcome::Restored(m) | RestoreOutcome::NotInTrash(m) => {
            Ok((200, json!({"item": media_json(&m, public_url)})))
        }
        RestoreOutcome::NotFound => Err(ApiError::not_found("Media not found")),
    }
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
    let outcomes = media::bulk_trash(ctx.exec, rules, &ids, BULK_ENTRIES).await?;
    let items: Vec<Json> = outcomes.into_iter().map(|(id, outcome)| bulk_item(&id, outcome)).collect();
    let trashed = items.iter().filter(|i| i["status"] == "trashed").count();
    Ok((200, json!({"items": items, "trashed": trashed})))
}

/// What `POST /media/bulk-delete` answers for one id.
fn bulk_item(id: &str, outcome: BulkOutcome) -> Json {
    match outcome {
        BulkOutcome::Trashed => json!({"id": id, "status": "trashed"}),
        BulkOutcome::InUse { entries } => {
            let entries: Vec<Json> = entries
                .into_iter()
                .map(|e| json!({"collection": e.collection, "contentId": e.content_id, "slug": e.slug}))
                .collect();
            json!({"id": id, "status": "in_use", "entries": entries})
        }
        BulkOutcome::CoverageIncomplete => json!({"id": id, "status": "coverage_incomplete"}),
        BulkOutcome::NotFound => json!({"id": id, "status": "not_found"}),
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
    use serde_json::json;

    use super::{bulk_item, delete_answer, file_url, is_mime_type, restore_answer};
    use crate::lifecycle::media::{BulkOutcome, DeleteOutcome, EntryRef, KeptObject, RestoreOutcome};
    use crate::model::state::CoverageStatus;
    use crate::repo::media::Media;
    use crate::repo::reads::UsingEntry;
    use crate::storage::StorageError;

    /// The status and code (`None` for a success) an answer has.
    fn status_and_code(answer: &Result<super::Reply, super::ApiError>) -> (u16, Option<&'static str>) {
        match answer {
            Ok((status, _)) => (*status, None),
            Err(e) => (e.status, Some(e.code)),
        }
    }

    #[test]
    fn each_delete_outcome_has_its_documented_answer() {
        let entry = UsingEntry {
            collection_slug: "posts".into(),
            content_id: "p1".into(),
            content_slug: Some("hello".into()),
            indexed: 0,
            total: 3,
        };
        let kept = KeptObject { key: "k".into(), error: StorageError("down".into()) };
        let cases = [
            (DeleteOutcome::Trashed, (200, None)),
            (DeleteOutcome::Deleted { kept: None }, (200, None)),
            (DeleteOutcome::Deleted { kept: Some(kept) }, (200, None)),
            (DeleteOutcome::NotFound, (404, Some("NOT_FOUND"))),
            (DeleteOutcome::NotOwn, (403, Some("FORBIDDEN"))),
            (DeleteOutcome::InUse { count: 3, entries: vec![entry] }, (409, Some("MEDIA_IN_USE"))),
            (
                DeleteOutcome::CoverageIncomplete { status: CoverageStatus::Running },
                (409, Some("MEDIA_USAGE_COVERAGE_INCOMPLETE")),
            ),
            (DeleteOutcome::Changed, (409, Some("CONFLICT"))),
        ];
        for (outcome, expected) in cases {
            let name = format!("{outcome:?}");
            let answer = delete_answer("m1", outcome);
            assert_eq!(status_and_code(&answer), expected, "{name}");
            match answer {
                Ok((_, body)) => assert_eq!(body, json!({"deleted": true, "id": "m1"}), "{name}"),
                Err(e) if e.code == "MEDIA_IN_USE" => assert_eq!(
                    e.details,
                    Some(json!({"count": 3, "entries": [
                        {"collection": "posts", "contentId": "p1", "slug": "hello", "indexed": false}
                    ]}))
                ),
                Err(e) if e.code == "MEDIA_USAGE_COVERAGE_INCOMPLETE" => {
                    assert_eq!(e.details, Some(json!({"coverage": {"status": "running"}})));
                }
                Err(_) => {}
            }
        }
    }

    #[test]
    fn each_restore_outcome_has_its_documented_answer() {
        let m = Media {
            id: "m1".into(),
            filename: "a.png".into(),
            mime_type: "image/png".into(),
            size: None,
            width: None,
            height: None,
            alt: None,
            caption: None,
            storage_key: "a.png".into(),
            status: "ready".into(),
            created_at: "2026-01-01T00:00:00.000Z".into(),
            content_hash: None,
            deleted_at: None,
            author_id: None,
        };
        for outcome in [RestoreOutcome::Restored(m.clone()), RestoreOutcome::NotInTrash(m.clone())] {
            let (status, body) = restore_answer(outcome, None).unwrap();
            assert_eq!((status, body["item"]["id"].clone()), (200, json!("m1")));
        }
        let answer = restore_answer(RestoreOutcome::NotFound, None);
        assert_eq!(status_and_code(&answer), (404, Some("NOT_FOUND")));
    }

    #[test]
    fn each_bulk_outcome_has_its_documented_status() {
        let entry = EntryRef { collection: "posts".into(), content_id: "p1".into(), slug: None };
        assert_eq!(bulk_item("a", BulkOutcome::Trashed), json!({"id": "a", "status": "trashed"}));
        assert_eq!(
            bulk_item("a", BulkOutcome::InUse { entries: vec![entry] }),
            json!({"id": "a", "status": "in_use", "entries": [{"collection": "posts", "contentId": "p1", "slug": null}]})
        );
        assert_eq!(
            bulk_item("a", BulkOutcome::InUse { entries: vec![] }),
            json!({"id": "a", "status": "in_use", "entries": []})
        );
        assert_eq!(
            bulk_item("a", BulkOutcome::CoverageIncomplete),
            json!({"id": "a", "status": "coverage_incomplete"})
        );
        assert_eq!(bulk_item("a", BulkOutcome::NotFound), json!({"id": "a", "status": "not_found"}));
    }

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
