//! Reads about one entry beyond the entry itself, in EmDash's shapes: its revisions
//! (`GET …/{id}/revisions`), its live data beside its draft (`GET …/{id}/compare`) and the
//! entries of its translation group (`GET …/{id}/translations`).

use serde_json::{json, Value as Json};

use super::content::{is_trashed, live_data, not_found};
use super::error::ApiError;
use super::input::{self, Issues};
use super::schema;
use super::{Ctx, Reply, Request};
use crate::exec::{Executor, Row};
use crate::model::collection::Collection;
use crate::repo::content::{self as repo, HISTORY_PAGE_BYTES};

/// The entry `id` outside the trash (EmDash reads an entry in the trash as missing).
async fn entry<E: Executor>(ctx: &Ctx<'_, E>, c: &Collection, id: &str) -> Result<Row, ApiError> {
    repo::get(ctx.exec, c, id).await?.filter(|r| !is_trashed(r)).ok_or_else(not_found)
}

fn text(row: &Row, key: &str) -> Option<String> {
    row.get(key).and_then(Json::as_str).map(str::to_owned)
}

/// A revision's stored data as the object it was saved as (`null` if it is not one).
fn revision_data(raw: &str) -> Json {
    serde_json::from_str::<Json>(raw).ok().filter(Json::is_object).unwrap_or(Json::Null)
}

/// `GET …/{id}/revisions`: the entry's revisions, newest first, as EmDash lists them
/// (`{items: [{id, collection, entryId, data, authorId, createdAt}], total}`), paged: `limit`
/// (1..100, default 50) revisions a page, fewer when their data reaches
/// [`HISTORY_PAGE_BYTES`], and `nextCursor` while more follow. An entry in the trash keeps its
/// history.
pub async fn revisions<E: Executor>(
    ctx: &Ctx<'_, E>,
    collection: &str,
    id: &str,
    req: &Request,
) -> Result<Reply, ApiError> {
    let mut issues = Issues::default();
    let limit = input::limit(req, &mut issues);
    let after = input::cursor(req, &mut issues)?;
    issues.finish()?;
    // The cursor's id is the revision's place in insertion order (a decimal, as the tick log's
    // ids), its order value the revision's id.
    let after = match after {
        None => None,
        Some((_, seq)) => Some(seq.parse::<i64>().ok().filter(|n| *n >= 0).ok_or_else(ApiError::invalid_cursor)?),
    };
    let c = schema::load(ctx, collection, "collection").await?;
    repo::get(ctx.exec, &c, id).await?.ok_or_else(not_found)?;
    let mut rows = repo::revisions_page(ctx.exec, &c, id, after, limit).await?;
    let total = repo::count_revisions(ctx.exec, &c, id).await?;
    let cut_by_size =
        rows.len() <= limit as usize && rows.last().is_some_and(|r| r.bytes_through >= HISTORY_PAGE_BYTES);
    let key = |r: &repo::HistoryRevision| (r.id.clone(), r.seq.to_string());
    let mut next = input::paginate(&mut rows, limit, key);
    // A page that stopped at its size bound continues after its last revision.
    if cut_by_size {
        next = rows.last().map(|r| input::encode_cursor(&r.id, &r.seq.to_string()));
    }
    let items: Vec<Json> = rows
        .iter()
        .map(|r| {
            json!({
                "id": r.id,
                "collection": r.collection,
                "entryId": r.entry_id,
                "data": revision_data(&r.data),
                "authorId": r.author_id,
                "createdAt": r.created_at,
            })
        })
        .collect();
    let mut body = input::page(items, next);
    body["total"] = Json::from(total);
    Ok((200, body))
}

/// `GET …/{id}/compare`: the entry's live data beside its draft's (EmDash's
/// `{hasChanges, live, draft}`). `live` is the live columns (what the entry is; every write
/// but a draft save sets them), `draft` the draft revision's data (`_slug` included when the
/// draft changes the slug), `null` without a draft; `hasChanges` says whether there is a draft
/// that is not the live revision.
pub async fn compare<E: Executor>(ctx: &Ctx<'_, E>, collection: &str, id: &str) -> Result<Reply, ApiError> {
    let c = schema::load(ctx, collection, "collection").await?;
    let row = entry(ctx, &c, id).await?;
    let draft_id = text(&row, "draft_revision_id");
    let draft = match &draft_id {
        Some(rev_id) => repo::get_revision(ctx.exec, rev_id)
            .await?
            .filter(|r| r.collection == c.slug.as_str() && r.entry_id == id)
            .map(|r| revision_data(&r.data)),
        None => None,
    };
    let has_changes = draft_id.is_some() && draft_id != text(&row, "live_revision_id");
    let live = Json::Object(live_data(&row, &c.fields));
    Ok((200, json!({"hasChanges": has_changes, "live": live, "draft": draft})))
}

/// `GET …/{id}/translations`: the entries outside the trash that share the entry's translation
/// group, by locale (EmDash's `{translationGroup, translations: [{id, locale, slug, status,
/// updatedAt}]}`), paged like other lists (`limit`, `cursor`, `nextCursor`). An entry without a
/// group is a group of its own.
pub async fn translations<E: Executor>(
    ctx: &Ctx<'_, E>,
    collection: &str,
    id: &str,
    req: &Request,
) -> Result<Reply, ApiError> {
    let mut issues = Issues::default();
    let limit = input::limit(req, &mut issues);
    let after = input::cursor(req, &mut issues)?;
    issues.finish()?;
    let c = schema::load(ctx, collection, "collection").await?;
    let row = entry(ctx, &c, id).await?;
    let summary = |id: &str, locale: Option<String>, slug: Option<String>, status: String, updated_at: String| json!({"id": id, "locale": locale, "slug": slug, "status": status, "updatedAt": updated_at});
    let Some(group) = text(&row, "translation_group") else {
        let me = summary(
            id,
            text(&row, "locale"),
            text(&row, "slug"),
            text(&row, "status").unwrap_or_default(),
            text(&row, "updated_at").unwrap_or_default(),
        );
        return Ok((200, json!({"translationGroup": id, "translations": [me]})));
    };
    let mut rows = repo::translations_page(ctx.exec, &c, &group, after, limit).await?;
    let next = input::paginate(&mut rows, limit, |t| (t.locale.clone().unwrap_or_default(), t.id.clone()));
    let translations: Vec<Json> =
        rows.into_iter().map(|t| summary(&t.id, t.locale, t.slug, t.status, t.updated_at)).collect();
    let mut body = json!({"translationGroup": group, "translations": translations});
    if let Some(next) = next {
        body["nextCursor"] = Json::from(next);
    }
    Ok((200, body))
}
