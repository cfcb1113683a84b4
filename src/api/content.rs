//! `/content/{collection}/**`: entries and their draft revisions (create, read, list, update,
//! duplicate); the state changes (publish, schedules, trash) are `content_state`'s.

use serde_json::{json, Map, Value as Json};

use super::error::ApiError;
use super::input::{self, json_body, query, Issues, Obj};
use super::schema;
use super::usage;
use super::{Ctx, Reply, Request};
use crate::exec::{self, Executor, Row, Value};
use crate::lifecycle::publish::row_version;
use crate::model::auth::Principal;
use crate::model::collection::Collection;
use crate::model::content::{
    check_locale, check_slug, parse_rev, rev_token, slug_source, slugify, Status, MAX_CONTENT_SLUG,
};
use crate::model::field::SYSTEM_COLUMNS;
use crate::model::ident::Ident;
use crate::repo::content::{self as repo, ListQuery, NewEntry, Update};
use crate::repo::encode::to_column;
use crate::usage::admission;

pub(super) fn not_found() -> ApiError {
    ApiError::not_found("Entry not found")
}

/// The author whose entries alone the caller may change (`None`: any entry).
pub(super) fn only_own<'c, E>(ctx: &'c Ctx<'_, E>) -> Option<&'c str> {
    ctx.principal.as_ref().and_then(Principal::only_own)
}

/// 403 when the caller may change only its own entries and `row` is not one of them (an entry
/// without an author is nobody's own).
pub(super) fn check_owner<E>(ctx: &Ctx<'_, E>, row: &Row) -> Result<(), ApiError> {
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
pub(super) fn write_error(e: exec::Error) -> ApiError {
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

pub(super) use crate::repo::encode::live_data;

/// The API view of a content row (EmDash's `ContentItem`): system columns in camelCase, fields
/// under `data`.
pub(super) fn item_json(row: &Row, c: &Collection) -> Json {
    let get = |k: &str| row.get(k).cloned().unwrap_or(Json::Null);
    json!({
        "id": get("id"),
        "type": c.slug.as_str(),
        "slug": get("slug"),
        "status": get("status"),
        "locale": get("locale"),
        "translationGroup": get("translation_group"),
        "authorId": get("author_id"),
        "primaryBylineId": get("primary_byline_id"),
        "version": get("version"),
        "data": live_data(row, &c.fields),
        "createdAt": get("created_at"),
        "updatedAt": get("updated_at"),
        "publishedAt": get("published_at"),
        "scheduledAt": get("scheduled_at"),
        "deletedAt": get("deleted_at"),
        "liveRevisionId": get("live_revision_id"),
        "draftRevisionId": get("draft_revision_id"),
    })
}

pub(super) fn item_reply(status: u16, row: &Row, c: &Collection) -> Reply {
    let version = row.get("version").and_then(Json::as_i64).unwrap_or_default();
    (status, json!({"item": item_json(row, c), "_rev": rev_token(version)}))
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
    let allowed = ["slug", "locale", "translationGroup", "translationOf", "status", "data"];
    let Some(obj) = Obj::new(&mut issues, "", &body, &allowed) else {
        return Err(issues.finish().unwrap_err());
    };
    // EmDash's `slug` is nullish: absent, null or empty, one is made from the title.
    let slug = obj.string(&mut issues, "slug", false, 0, MAX_CONTENT_SLUG).filter(|s| !s.is_empty());
    if let Some(Err(msg)) = slug.as_deref().map(check_slug) {
        issues.add("slug", msg);
    }
    let locale = obj.string(&mut issues, "locale", false, 1, 35).unwrap_or_else(|| "en".into());
    if let Err(msg) = check_locale(&locale) {
        issues.add("locale", msg);
    }
    let translation_group = obj.string(&mut issues, "translationGroup", false, 1, 200);
    let translation_of = obj.string(&mut issues, "translationOf", false, 1, 200);
    if translation_group.is_some() && translation_of.is_some() {
        issues.add("translationOf", "Give translationGroup or translationOf, not both");
    }
    let status = parse_status(&obj, &mut issues).unwrap_or(Status::Draft);
    let empty = Map::new();
    let data = obj.object(&mut issues, "data").unwrap_or(&empty);
    let columns = data_columns(&c, &mut issues, data, true);
    issues.finish()?;
    let translation_group = match translation_of {
        Some(source) => Some(translation_group_of(ctx, &c, &source).await?),
        None => translation_group,
    };
    admit(ctx, &c, data).await?;
    let slug_base = if slug.is_some() { None } else { made_slug_base(data) };
    let new = NewEntry {
        slug,
        slug_base,
        status: status.as_str(),
        locale,
        translation_group,
        author: ctx.principal.as_ref().map(|p| p.token_id.clone()),
        columns,
    };
    let row = insert_entry(ctx, &c, &new).await?;
    if let Some(id) = row.get("id").and_then(Json::as_str) {
        usage::after_write(ctx, &c, id, req.body.len()).await;
    }
    Ok(item_reply(201, &row, &c))
}

/// The translation group a translation of the entry `source` joins (EmDash's `translationOf`):
/// the source's group, or its id when it has none. Creating a translation needs the right to
/// change the source (403 below editor for anyone else's entry); a source that is missing or in
/// the trash is 404.
async fn translation_group_of<E: Executor>(ctx: &Ctx<'_, E>, c: &Collection, source: &str) -> Result<String, ApiError> {
    let row = repo::get(ctx.exec, c, source)
        .await?
        .filter(|r| !is_trashed(r))
        .ok_or_else(|| ApiError::not_found("Translation source not found"))?;
    check_owner(ctx, &row)?;
    let own = |k: &str| row.get(k).and_then(Json::as_str).map(str::to_owned);
    Ok(own("translation_group").or_else(|| own("id")).unwrap_or_else(|| source.to_owned()))
}

/// The base of the slug made for an entry created without one: its title (or name) slugified,
/// `None` when that leaves nothing.
fn made_slug_base(data: &Map<String, Json>) -> Option<String> {
    slug_source(data).map(slugify).filter(|s| !s.is_empty())
}

/// Inserts a new entry. A given slug that is taken is a 409 naming the entry that holds it, so
/// that a client whose first try committed unseen (an error after the write) can recognise its
/// own entry; a made slug that is taken (see [`repo::SLUG_ATTEMPTS`]) is tried again with the
/// next suffix, a bounded number of times, then a 409.
async fn insert_entry<E: Executor>(ctx: &Ctx<'_, E>, c: &Collection, new: &NewEntry) -> Result<Row, ApiError> {
    let mut attempt = 0;
    loop {
        match repo::insert(ctx.exec, c, new, attempt).await {
            Ok(row) => return Ok(row),
            Err(e @ exec::Error::Unique(_)) if is_taken_slug(&e) => match &new.slug {
                Some(slug) => {
                    let existing = repo::id_by_slug(ctx.exec, c, slug, &new.locale).await?;
                    let details = json!({"id": existing, "slug": slug, "locale": new.locale});
                    return Err(write_error(e).with_details(details));
                }
                None if attempt + 1 < repo::SLUG_ATTEMPTS => attempt += 1,
                None => return Err(write_error(e)),
            },
            Err(e) => return Err(write_error(e)),
        }
    }
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
    let items: Vec<Json> = rows.iter().map(|r| item_json(r, &c)).collect();
    Ok((200, input::page(items, next)))
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
pub(super) async fn missing_or_conflict<E: Executor>(ctx: &Ctx<'_, E>, c: &Collection, id: &str) -> ApiError {
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
        let mut live = live_data(&row, &c.fields);
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
            usage::after_write(ctx, &c, id, req.body.len()).await;
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
    let mut draft = previous.unwrap_or_else(|| live_data(&row, &c.fields));
    for (k, v) in data {
        draft.insert(k.clone(), v.clone());
    }
    if let Some(s) = slug {
        draft.insert("_slug".into(), Json::String(s));
    }
    admit(ctx, c, &draft).await?;
    let draft = Json::Object(draft);
    // What admission extracted and the projection would read again.
    let draft_bytes = draft.to_string().len();
    match repo::save_draft(ctx.exec, c, id, version, only_own(ctx), &draft, ctx.config.max_revisions)
        .await
        .map_err(write_error)?
    {
        Some(row) => {
            usage::after_write(ctx, c, id, draft_bytes).await;
            Ok(item_reply(200, &row, c))
        }
        None => Err(missing_or_conflict(ctx, c, id).await),
    }
}

pub(super) fn is_trashed(row: &Row) -> bool {
    row.get("deleted_at").is_some_and(|d| !d.is_null())
}

/// `POST …/{id}/duplicate`: a new draft entry with the live data of an entry outside the trash
/// (not its draft), its `title` (else `name`) suffixed ` (Copy)` and a slug made from that, in
/// the same locale and a translation group of its own, authored by the caller (EmDash's
/// duplicate). Below editor only one's own entries may be duplicated. The copy is admitted and
/// indexed like any new entry.
pub async fn duplicate<E: Executor>(ctx: &Ctx<'_, E>, collection: &str, id: &str) -> Result<Reply, ApiError> {
    let c = schema::load(ctx, collection, "collection").await?;
    let row = repo::get(ctx.exec, &c, id).await?.filter(|r| !is_trashed(r)).ok_or_else(not_found)?;
    check_owner(ctx, &row)?;
    let mut data = live_data(&row, &c.fields);
    data.retain(|_, v| !v.is_null());
    if let Some(key) = ["title", "name"].into_iter().find(|k| data.get(*k).is_some_and(Json::is_string)) {
        let copy = format!("{} (Copy)", data[key].as_str().unwrap_or_default());
        data.insert(key.to_owned(), Json::String(copy));
    }
    let mut issues = Issues::default();
    let columns = data_columns(&c, &mut issues, &data, false);
    issues.finish()?;
    admit(ctx, &c, &data).await?;
    let new = NewEntry {
        slug: None,
        slug_base: made_slug_base(&data),
        status: Status::Draft.as_str(),
        locale: row.get("locale").and_then(Json::as_str).unwrap_or("en").to_owned(),
        translation_group: None,
        author: ctx.principal.as_ref().map(|p| p.token_id.clone()),
        columns,
    };
    let copy = insert_entry(ctx, &c, &new).await?;
    if let Some(copy_id) = copy.get("id").and_then(Json::as_str) {
        usage::after_write(ctx, &c, copy_id, 0).await;
    }
    Ok(item_reply(201, &copy, &c))
}
