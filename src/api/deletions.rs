//! Collection deletions for operators: list them by state, and retry one that failed or waits.

use serde_json::{json, Value as Json};

use super::error::ApiError;
use super::input::{self, json_body, query, Issues, Obj};
use super::{queue, Ctx, Reply, Request};
use crate::exec::Executor;
use crate::model::state::QueueState;
use crate::repo::deletion::{self as repo, Tombstone};

/// The operator view of a tombstone ([`queue::row_json`] with the collection and its phase):
/// every field always present (`null` when empty), never the lease token.
pub fn deletion_json(t: &Tombstone) -> Json {
    queue::row_json(
        t.lease_view(),
        [
            ("collectionId", json!(t.collection_id)),
            ("collectionSlug", json!(t.collection_slug)),
            ("phase", json!(t.phase)),
        ],
    )
}

/// `GET /admin/media-usage/collection-deletions?state=&limit=&cursor=`: deletions in one state
/// (default `failed`), most recently updated first.
pub async fn list<E: Executor>(ctx: &Ctx<'_, E>, req: &Request) -> Result<Reply, ApiError> {
    let mut issues = Issues::default();
    let limit = input::limit(req, &mut issues);
    let state = match query(req, "state") {
        None => QueueState::Failed,
        Some(raw) => QueueState::parse(raw).unwrap_or_else(|| {
            issues.add("state", "Expected pending, retry, leased or failed");
            QueueState::Failed
        }),
    };
    let after = input::cursor(req, &mut issues)?;
    issues.finish()?;
    let mut rows = repo::list(ctx.exec, state, after, limit).await?;
    let next = input::paginate(&mut rows, limit, |t| (t.lease.updated_at.clone(), t.collection_id.clone()));
    Ok((200, input::page(rows.iter().map(deletion_json).collect::<Vec<_>>(), next)))
}

/// `POST /admin/media-usage/collection-deletions/retry {"collectionId"}`: reopens a failed,
/// retrying or expired deletion as `pending`, due now, attempts reset, at the same phase, its
/// cleanup batch small again.
pub async fn retry<E: Executor>(ctx: &Ctx<'_, E>, req: &Request) -> Result<Reply, ApiError> {
    let body = json_body(req)?;
    let mut issues = Issues::default();
    let Some(obj) = Obj::new(&mut issues, "", &body, &["collectionId"]) else {
        return Err(issues.finish().unwrap_err());
    };
    let collection_id = obj.string(&mut issues, "collectionId", true, 1, 2048);
    let collection_id = issues.finish_with(collection_id)?;
    let Some(current) = repo::get(ctx.exec, &collection_id).await? else {
        return Err(ApiError::not_found("No collection deletion has this collection id"));
    };
    if current.lease_is_live() {
        return Err(ApiError::new(409, "WORK_LEASE_ACTIVE", "The collection deletion is being processed")
            .with_details(json!({"leaseExpiresAt": current.row.lease.lease_expires_at})));
    }
    match repo::retry(ctx.exec, &collection_id, ctx.config.background.cleanup.start()).await? {
        Some(row) => Ok((200, json!({"changed": true, "item": deletion_json(&row)}))),
        None => Err(ApiError::new(
            409,
            "WORK_CHANGED",
            "The collection deletion is not failed, retrying or expired (it may already be pending)",
        )),
    }
}
