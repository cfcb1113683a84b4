//! `/content/{collection}/**`: entries, draft revisions, publish state and trash.

use serde_json::{json, Map, Value as Json};

use super::error::ApiError;
use super::input::{self, json_body, query, query_flag, Issues, Obj};
use super::schema;
use super::usage;
use super::{Ctx, Reply, Request};
use crate::exec::{self, Executor, Row, Value};
use crate::model::auth::Principal;
use crate::model::collection::Collection;
use crate::model::content::{check_locale, check_slug, parse_rev, rev_token, Status};
use crate::model::field::{Field, SYSTEM_COLUMNS};
use crate::model::ident::Ident;
use crate::repo::content::{self as repo, ListQuery, NewEntry, Transition, Update};
use crate::repo::encode::{from_column, to_column};
use crate::usage::admission;

fn not_found() -> ApiError {
    ApiError::not_found("Entry not found")
}

/// The author whose entries alone the caller may change (`None`: any entry).
fn only_own<'c, E>(ctx: &'c Ctx<'_, E>) -> Option<&'c str> {
    ctx.principal.as_ref().and_then(Principal::only_own)
}

/// 403 when the caller may change only its own entries and `row` is not one of them (an entry
/// without an author is nobody's own).
fn check_owner<E>(ctx: &Ctx<'_, E>, row: &Row) -> Result<(), ApiError> {
    match only_own(ctx) {
        Some(me) if row.get("author_id").and_then(Json::as_str) != Some(me) => {
            Err(ApiError::new(403, "FORBIDDEN", "Only editors and admins may change entries authored by someone else"))
        }
        _ => Ok(()),
    }
}

/// Maps write failures: a taken (slug, locale) is a 409; a content table dropped by a
/// collection deletion after the request found the collection is the capture fence's 409 (the
/// collection was fenced before its table went); anything else as usual (a missing system table
/// is an internal error).
fn write_error(e: exec::Error) -> ApiError {
    match e {
        e if is_taken_slug(&e) => ApiError::conflict("An entry with this slug already exists in this locale"),
        e if e.is_missing_content_table() => exec::Error::CaptureInactive.into(),
        // A field deleted after the request read it: its column is out of reach, nothing was
        // written, and the retry is judged against the fields as they are now. (A system column
        // gone is a broken database.)
        e if e.missing_column().is_some_and(|c| !SYSTEM_COLUMNS.contains(&c)) => {
            ApiError::conflict("A field this write names was deleted meanwhile; reload the collection and retry")
        }
        other => other.into(),
    }
}

/// The write was refused because another entry holds its (slug, locale).
fn is_taken_slug(e: &exec::Error) -> bool {
    matches!(e, exec::Error::Unique(msg) if msg.contains(".slug"))
}

/// The API view of a content row: system columns in camelCase, fields under `data`.
fn item_json(row: &Row, fields: &[Field]) -> Json {
    let get = |k: &str| row.get(k).cloned().unwrap_or(Json::Null);
    let mut data = Map::new();
    for f in fields {
        data.insert(f.slug.as_str().to_owned(), from_column(f, &get(f.slug.as_str())));
    }
    json!({
        "id": get("id"),
        "slug": get("slug"),
        "status": get("status"),
        "locale": get("locale"),
        "translationGroup": get("translation_group"),
        "authorId": get("author_id"),
        "version": get("version"),
        "data": data,
        "createdAt": get("created_at"),
        "updatedAt": get("updated_at"),
        "publishedAt": get("published_at"),
        "scheduledAt": get("scheduled_at"),
        "deletedAt": get("deleted_at"),
        "liveRevisionId": get("live_revision_id"),
        "draftRevisionId": get("draft_revision_id"),
    })
}

fn item_reply(status: u16, row: &Row, c: &Collection) -> Reply {
    let version = row.get("version").and_then(Json::as_i64).unwrap_or_default();
    (status, json!({"item": item_json(row, &c.fields), "_rev": rev_token(version)}))
}

fn row_version(row: &Row) -> i64 {
    row.get("version").and_then(Json::as_i64).unwrap_or_default()
}

/// Validates `data` against the collection's fields; returns the columns to write.
fn data_columns(c: &Collection, issues: &mut Issues, data: &Map<String, Json>, creating: bool) -> Vec<(Ident, Value)> {
    let mut cols = Vec::new();
    for (key, value) in data {
        match c.field(key) {
            None => issues.add(format!("data.{key}"), "Unknown field"),
            Some(f) => match to_column(f, value) {
                Ok(v) => cols.push((f.slug.clone(), v)),
                Err(msg) => issues.add(format!("data.{key}"), msg),
            },
        }
    }
    if creating {
        for f in c.fields.iter().filter(|f| f.required && !data.contains_key(f.slug.as_str())) {
            issues.add(format!("data.{}", f.slug), "Required");
        }
    }
    cols
}

/// Refuses (400, nothing written) data that one projection job could not index: more references
/// than `MEDIA_USAGE_MAX_OCCURRENCES_PER_ENTRY`, or more candidate strings or reference bytes than
/// its lookup and publish may bind (see `usage::admission`), so that nothing saved can be left
/// unindexed.
async fn admit<E: Executor>(ctx: &Ctx<'_, E>, c: &Collection, data: &Map<String, Json>) -> Result<(), ApiError> {
    let policy = &ctx.config.background.projection;
    match admission::admit(ctx.exec, &c.id, &c.fields, data, &policy.rules, policy.admission).await? {
        Ok(()) => Ok(()),
        Err(refusal) => {
            let mut issues = Issues::default();
            issues.add("data", refusal.message());
            issues.finish()
        }
    }
}

fn parse_status(obj: &Obj<'_>, issues: &mut Issues) -> Option<Status> {
    let raw = obj.string(issues, "status", false, 1, 32)?;
    match Status::parse(&raw) {
        Some(s @ (Status::Draft | Status::Published)) => Some(s),
        _ => {
            issues.add("status", "Expected \"draft\" or \"published\"");
            None
        }
    }
}

pub async fn create<E: Executor>(ctx: &Ctx<'_, E>, collection: &str, req: &Request) -> Result<Reply, ApiError> {
    let c = schema::load(ctx, collection, "collection").await?;
    let body = json_body(req)?;
    let mut issues = Issues::default();
    let Some(obj) = Obj::new(&mut issues, "", &body, &["slug", "locale", "translationGroup", "status", "data"]) else {
        return Err(issues.finish().unwrap_err());
    };
    let slug = obj.string(&mut issues, "slug", true, 1, 200);
    if let Some(Err(msg)) = slug.as_deref().map(check_slug) {
        issues.add("slug", msg);
    }
    let locale = obj.string(&mut issues, "locale", false, 1, 35).unwrap_or_else(|| "en".into());
    if let Err(msg) = check_locale(&locale) {
        issues.add("locale", msg);
    }
    let translation_group = obj.string(&mut issues, "translationGroup", false, 1, 200);
    let status = parse_status(&obj, &mut issues).unwrap_or(Status::Draft);
    let empty = Map::new();
    let data = obj.object(&mut issues, "data").unwrap_or(&empty);
    let columns = data_columns(&c, &mut issues, data, true);
    issues.finish()?;
    admit(ctx, &c, data).await?;
    let new = NewEntry {
        slug: slug.unwrap_or_default(),
        status: status.as_str(),
        locale,
        translation_group,
        author: ctx.principal.as_ref().map(|p| p.token_id.clone()),
        columns,
    };
    let (slug, locale) = (new.slug.clone(), new.locale.clone());
    let row = match repo::insert(ctx.exec, &c, new).await {
        Ok(row) => row,
        // Taken: name the entry that holds it, so that a client whose first try committed
        // unseen (an error after the write) can recognise its own entry.
        Err(e @ exec::Error::Unique(_)) if is_taken_slug(&e) => {
            let existing = repo::id_by_slug(ctx.exec, &c, &slug, &locale).await?;
            return Err(write_error(e).with_details(json!({"id": existing, "slug": slug, "locale": locale})));
        }
        Err(e) => return Err(write_error(e)),
    };
    if let Some(id) = row.get("id").and_then(Json::as_str) {
        usage::after_write(ctx, &c, id).await;
    }
    Ok(item_reply(201, &row, &c))
}

pub async fn get<E: Executor>(ctx: &Ctx<'_, E>, collection: &str, id: &str) -> Result<Reply, ApiError> {
    let c = schema::load(ctx, collection, "collection").await?;
    let row = repo::get(ctx.exec, &c, id).await?.ok_or_else(not_found)?;
    Ok(item_reply(200, &row, &c))
}

pub async fn list<E: Executor>(ctx: &Ctx<'_, E>, collection: &str, req: &Request) -> Result<Reply, ApiError> {
    let mut issues = Issues::default();
    let limit = input::limit(req, &mut issues);
    let status = query(req, "status").map(str::to_owned);
    if status.as_deref().is_some_and(|s| Status::parse(s).is_none()) {
        issues.add("status", "Expected draft, published or scheduled");
    }
    let locale = query(req, "locale").map(str::to_owned);
    if let Some(Err(msg)) = locale.as_deref().map(check_locale) {
        issues.add("locale", msg);
    }
    let after = input::cursor(req, &mut issues)?;
    issues.finish()?;
    let c = schema::load(ctx, collection, "collection").await?;
    let page = repo::list(ctx.exec, &c, &ListQuery { status, locale, after, limit }).await?;
    let mut rows = page.rows;
    let key = |r: &Row| {
        let s = |k: &str| r.get(k).and_then(Json::as_str).unwrap_or_default().to_owned();
        (s("created_at"), s("id"))
    };
    let mut next = input::paginate(&mut rows, limit, key);
    // A page that stopped at its size bound continues after its last row.
    if page.cut_by_size {
        next = rows.last().map(|r| {
            let (at, id) = key(r);
            input::encode_cursor(&at, &id)
        });
    }
    let items: Vec<Json> = rows.iter().map(|r| item_json(r, &c.fields)).collect();
    Ok((200, json!({"items": items, "nextCursor": next})))
}

/// The `_rev` a client sent: `None` when absent; 400 when malformed.
fn expected_version(obj: &Obj<'_>, issues: &mut Issues) -> Option<i64> {
    let raw = obj.string(issues, "_rev", false, 1, 200)?;
    let v = parse_rev(&raw);
    if v.is_none() {
        issues.add("_rev", "Invalid revision token");
    }
    v
}

/// After a conditional write matched nothing: 404 when the entry is gone, 403 when it is not
/// the caller's to change, else 409.
async fn missing_or_conflict<E: Executor>(ctx: &Ctx<'_, E>, c: &Collection, id: &str) -> ApiError {
    match repo::get(ctx.exec, c, id).await {
        Ok(None) => not_found(),
        Ok(Some(row)) => check_owner(ctx, &row)
            .err()
            .unwrap_or_else(|| ApiError::conflict("The entry changed since it was read; reload and retry")),
        Err(e) => e.into(),
    }
}

pub async fn update<E: Executor>(
    ctx: &Ctx<'_, E>,
    collection: &str,
    id: &str,
    req: &Request,
) -> Result<Reply, ApiError> {
    let c = schema::load(ctx, collection, "collection").await?;
    let body = json_body(req)?;
    let mut issues = Issues::default();
    let Some(obj) = Obj::new(&mut issues, "", &body, &["data", "slug", "status", "draft", "_rev"]) else {
        return Err(issues.finish().unwrap_err());
    };
    let slug = obj.string(&mut issues, "slug", false, 1, 200);
    if let Some(Err(msg)) = slug.as_deref().map(check_slug) {
        issues.add("slug", msg);
    }
    let status = parse_status(&obj, &mut issues);
    let draft = obj.boolean(&mut issues, "draft").unwrap_or(false);
    let expected = expected_version(&obj, &mut issues);
    let empty = Map::new();
    let data = obj.object(&mut issues, "data").unwrap_or(&empty);
    let columns = data_columns(&c, &mut issues, data, false);
    if draft && status.is_some() {
        issues.add("status", "A draft save cannot change the status; publish instead");
    }
    issues.finish()?;
    if draft {
        return save_draft(ctx, &c, id, expected, data, slug).await;
    }
    if !data.is_empty() {
        // The live columns after this write: the stored ones with `data` laid over them.
        // (Read as part of the write: a table dropped under it is the capture fence's 409.)
        let row = repo::get(ctx.exec, &c, id).await.map_err(write_error)?.ok_or_else(not_found)?;
        check_owner(ctx, &row)?;
        let mut live = item_json(&row, &c.fields)["data"].as_object().cloned().unwrap_or_default();
        live.extend(data.iter().map(|(k, v)| (k.clone(), v.clone())));
        admit(ctx, &c, &live).await?;
    }
    let update = Update {
        expected_version: expected,
        slug,
        status: status.map(Status::as_str),
        only_own: only_own(ctx).map(str::to_owned),
        columns,
    };
    match repo::update(ctx.exec, &c, id, update).await.map_err(write_error)? {
        Some(row) => {
            usage::after_write(ctx, &c, id).await;
            Ok(item_reply(200, &row, &c))
        }
        None => Err(missing_or_conflict(ctx, &c, id).await),
    }
}

/// Stores a draft revision: the previous draft with `data` laid over it, or, when there is none
/// or it is stale (the live row was written after it), the live data with `data` laid over it
/// (a rebase: what this save does not set takes the live values).
async fn save_draft<E: Executor>(
    ctx: &Ctx<'_, E>,
    c: &Collection,
    id: &str,
    expected: Option<i64>,
    data: &Map<String, Json>,
    slug: Option<String>,
) -> Result<Reply, ApiError> {
    let row = repo::get(ctx.exec, c, id).await?.ok_or_else(not_found)?;
    check_owner(ctx, &row)?;
    let version = row_version(&row);
    if expected.is_some_and(|v| v != version) {
        return Err(ApiError::conflict("The entry changed since it was read; reload and retry"));
    }
    let previous = match row.get("draft_revision_id").and_then(Json::as_str) {
        Some(rev_id) => match repo::get_revision(ctx.exec, rev_id).await? {
            Some(r) if !r.is_stale(version) => Some(
                serde_json::from_str::<Json>(&r.data).ok().and_then(|v| v.as_object().cloned()).unwrap_or_default(),
            ),
            _ => None,
        },
        None => None,
    };
    let mut draft =
        previous.unwrap_or_else(|| item_json(&row, &c.fields)["data"].as_object().cloned().unwrap_or_default());
    for (k, v) in data {
        draft.insert(k.clone(), v.clone());
    }
    if let Some(s) = slug {
        draft.insert("_slug".into(), Json::String(s));
    }
    admit(ctx, c, &draft).await?;
    let draft = Json::Object(draft);
    match repo::save_draft(ctx.exec, c, id, version, only_own(ctx), &draft, ctx.config.max_revisions)
        .await
        .map_err(write_error)?
    {
        Some(row) => {
            usage::after_write(ctx, c, id).await;
            Ok(item_reply(200, &row, c))
        }
        None => Err(missing_or_conflict(ctx, c, id).await),
    }
}

pub async fn publish<E: Executor>(ctx: &Ctx<'_, E>, collection: &str, id: &str) -> Result<Reply, ApiError> {
    let c = schema::load(ctx, collection, "collection").await?;
    let row = repo::get(ctx.exec, &c, id).await?.ok_or_else(not_found)?;
    check_owner(ctx, &row)?;
    let mut columns = Vec::new();
    let mut slug = None;
    if let Some(rev_id) = row.get("draft_revision_id").and_then(Json::as_str) {
        let rev = repo::get_revision(ctx.exec, rev_id).await?;
        if rev.as_ref().is_some_and(|r| r.is_stale(row_version(&row))) {
            return Err(ApiError::conflict(
                "The entry changed after its draft was saved; save the draft again to rebase it on the live entry",
            ));
        }
        let draft = rev
            .filter(|r| r.collection == c.slug.as_str() && r.entry_id == id)
            .and_then(|r| serde_json::from_str::<Json>(&r.data).ok())
            .and_then(|v| v.as_object().cloned())
            .ok_or_else(|| ApiError::conflict("The entry's draft revision is missing or invalid"))?;
        admit(ctx, &c, &draft).await?;
        let mut issues = Issues::default();
        for (key, value) in &draft {
            if key == "_slug" {
                slug = value.as_str().map(str::to_owned);
            } else if let Some(f) = c.field(key) {
                match to_column(f, value) {
                    Ok(v) => columns.push((f.slug.clone(), v)),
                    Err(msg) => issues.add(format!("data.{key}"), msg),
                }
            }
        }
        issues.finish()?;
    }
    match repo::publish(ctx.exec, &c, id, row_version(&row), only_own(ctx), slug, columns).await.map_err(write_error)? {
        Some(row) => {
            usage::after_write(ctx, &c, id).await;
            Ok(item_reply(200, &row, &c))
        }
        None => Err(missing_or_conflict(ctx, &c, id).await),
    }
}

async fn transition<E: Executor>(
    ctx: &Ctx<'_, E>,
    collection: &str,
    id: &str,
    t: Transition,
) -> Result<Reply, ApiError> {
    let c = schema::load(ctx, collection, "collection").await?;
    match repo::transition(ctx.exec, &c, id, t, only_own(ctx)).await.map_err(write_error)? {
        Some(row) => {
            usage::after_write(ctx, &c, id).await;
            Ok(item_reply(200, &row, &c))
        }
        // Not the caller's to change, or already in the target state: then answer with the
        // entry as it is.
        None => {
            let row = repo::get(ctx.exec, &c, id).await?.ok_or_else(not_found)?;
            check_owner(ctx, &row)?;
            Ok(item_reply(200, &row, &c))
        }
    }
}

pub async fn unpublish<E: Executor>(ctx: &Ctx<'_, E>, collection: &str, id: &str) -> Result<Reply, ApiError> {
    transition(ctx, collection, id, Transition::Unpublish).await
}

pub async fn restore<E: Executor>(ctx: &Ctx<'_, E>, collection: &str, id: &str) -> Result<Reply, ApiError> {
    transition(ctx, collection, id, Transition::Restore).await
}

pub async fn delete<E: Executor>(
    ctx: &Ctx<'_, E>,
    collection: &str,
    id: &str,
    req: &Request,
) -> Result<Reply, ApiError> {
    if !query_flag(req, "permanent") {
        return transition(ctx, collection, id, Transition::Trash).await;
    }
    let c = schema::load(ctx, collection, "collection").await?;
    if repo::delete(ctx.exec, &c, id).await.map_err(write_error)? {
        usage::after_write(ctx, &c, id).await;
        Ok((200, json!({"deleted": true, "id": id})))
    } else {
        Err(not_found())
    }
}
