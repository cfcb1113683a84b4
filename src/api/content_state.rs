//! `/content/{collection}/{id}/…` state changes: publish and unpublish, schedules, the trash
//! (trash, restore, permanent delete) and discarding a draft. Each answers the entry as it is
//! after the change (or as it already was: a retry is answered, not refused), and brings the
//! index up to date in the same request.

use serde_json::{json, Value as Json};

use super::content::{check_owner, is_trashed, item_reply, missing_or_conflict, not_found, only_own, write_error};
use super::error::ApiError;
use super::input::{json_body, query_flag, Issues, Obj};
use super::schema;
use super::usage;
use super::{Ctx, Reply, Request};
use crate::exec::{Executor, Row};
use crate::lifecycle::publish::{self as publication, row_version};
use crate::model::collection::Collection;
use crate::model::time;
use crate::repo::content::{self as repo, Transition};
use crate::repo::schedule as schedule_repo;

pub async fn publish<E: Executor>(ctx: &Ctx<'_, E>, collection: &str, id: &str) -> Result<Reply, ApiError> {
    let c = schema::load(ctx, collection, "collection").await?;
    let row = repo::get(ctx.exec, &c, id).await?.ok_or_else(not_found)?;
    check_owner(ctx, &row)?;
    let publication = match publication::prepare(ctx.exec, &c, &row, &ctx.config.background.projection).await? {
        Ok(p) => p,
        Err(refusal) => return Err(refused(&refusal)),
    };
    match repo::publish(ctx.exec, &c, id, row_version(&row), only_own(ctx), publication).await.map_err(write_error)? {
        Some(row) => {
            usage::after_write(ctx, &c, id, 0).await;
            Ok(item_reply(200, &row, &c))
        }
        None => Err(missing_or_conflict(ctx, &c, id).await),
    }
}

/// A publish refused before anything was written: a stale or missing draft is a 409, a draft the
/// index could not take or whose values no longer fit the fields a 400.
fn refused(refusal: &publication::Refusal) -> ApiError {
    let mut issues = Issues::default();
    match refusal {
        publication::Refusal::StaleDraft | publication::Refusal::MissingDraft => {
            return ApiError::conflict(refusal.message())
        }
        publication::Refusal::Admission(refusal) => issues.add("data", refusal.message()),
        publication::Refusal::Invalid(invalid) => {
            for (path, msg) in invalid {
                issues.add(path.clone(), msg.clone());
            }
        }
    }
    issues.finish().err().unwrap_or_else(|| ApiError::invalid("data", refusal.message()))
}

/// An entry a schedule may change: outside the trash (as EmDash's schedule routes find no trashed
/// entry; 404) and the caller's to change (403).
async fn schedulable<E: Executor>(ctx: &Ctx<'_, E>, c: &Collection, id: &str) -> Result<Row, ApiError> {
    let row = repo::get(ctx.exec, c, id)
        .await?
        .filter(|row| row.get("deleted_at").is_none_or(Json::is_null))
        .ok_or_else(not_found)?;
    check_owner(ctx, &row)?;
    Ok(row)
}

fn is_scheduled(row: &Row) -> bool {
    row.get("scheduled_at").is_some_and(|at| !at.is_null())
}

/// `POST /content/{c}/{id}/schedule {"scheduledAt"}`: schedules the entry's publication for that
/// time (ISO 8601 with a zone, or a date; in the future by the database clock, EmDash's rule),
/// stored in UTC. A published entry stays published (its draft is what the schedule publishes),
/// any other becomes `scheduled`; the tick's schedule lane publishes it once the time has come.
pub async fn schedule<E: Executor>(
    ctx: &Ctx<'_, E>,
    collection: &str,
    id: &str,
    req: &Request,
) -> Result<Reply, ApiError> {
    let c = schema::load(ctx, collection, "collection").await?;
    let body = json_body(req)?;
    let mut issues = Issues::default();
    let Some(obj) = Obj::new(&mut issues, "", &body, &["scheduledAt"]) else {
        return Err(issues.finish().unwrap_err());
    };
    let at = obj
        .string(&mut issues, "scheduledAt", true, 1, 64)
        .and_then(|raw| time::canonical(&raw).map_err(|msg| issues.add("scheduledAt", msg)).ok());
    let at = issues.finish_with(at)?;
    let row = schedulable(ctx, &c, id).await?;
    match schedule_repo::schedule(ctx.exec, &c, id, row_version(&row), only_own(ctx), &at).await.map_err(write_error)? {
        Some(row) => {
            usage::after_write(ctx, &c, id, 0).await;
            Ok(item_reply(200, &row, &c))
        }
        None if !schedule_repo::is_future(ctx.exec, &at).await? => {
            Err(ApiError::invalid("scheduledAt", "Must lie in the future"))
        }
        None => {
            schedulable(ctx, &c, id).await?;
            Err(ApiError::conflict("The entry changed since it was read; retry"))
        }
    }
}

/// `DELETE /content/{c}/{id}/schedule`: cancels the entry's schedule; a published entry stays
/// published, any other goes back to `draft` (EmDash's rule). An entry without a schedule is
/// answered as it is.
pub async fn unschedule<E: Executor>(ctx: &Ctx<'_, E>, collection: &str, id: &str) -> Result<Reply, ApiError> {
    let c = schema::load(ctx, collection, "collection").await?;
    let row = schedulable(ctx, &c, id).await?;
    match schedule_repo::unschedule(ctx.exec, &c, id, row_version(&row), only_own(ctx)).await.map_err(write_error)? {
        Some(row) => {
            usage::after_write(ctx, &c, id, 0).await;
            Ok(item_reply(200, &row, &c))
        }
        None => {
            // Not scheduled (or its schedule ended meanwhile: published by the tick, cancelled).
            let row = schedulable(ctx, &c, id).await?;
            if is_scheduled(&row) {
                Err(ApiError::conflict("The entry changed since it was read; retry"))
            } else {
                Ok(item_reply(200, &row, &c))
            }
        }
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
            usage::after_write(ctx, &c, id, 0).await;
            Ok(item_reply(200, &row, &c))
        }
        // Not the caller's to change, or already in the target state: then answer with the
        // entry as it is.
        None => {
            let row = repo::get(ctx.exec, &c, id).await?.ok_or_else(not_found)?;
            // A draft is discarded only outside the trash (EmDash reads such an entry as missing).
            if t == Transition::DiscardDraft && is_trashed(&row) {
                return Err(not_found());
            }
            check_owner(ctx, &row)?;
            if t == Transition::DiscardDraft {
                // A retry whose first try discarded the draft but died before its projection:
                // the draft's uses leave "Used in" now rather than at the next tick.
                usage::after_write(ctx, &c, id, 0).await;
            }
            Ok(item_reply(200, &row, &c))
        }
    }
}

/// `POST …/{id}/discard-draft`: drops the entry's draft revision (the live columns never held
/// it), so the draft's references leave "Used in" in the same request; an entry without a draft
/// is answered as it is. Ownership as for updates; an entry in the trash is not found.
pub async fn discard_draft<E: Executor>(ctx: &Ctx<'_, E>, collection: &str, id: &str) -> Result<Reply, ApiError> {
    transition(ctx, collection, id, Transition::DiscardDraft).await
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
        usage::after_write(ctx, &c, id, 0).await;
        Ok((200, json!({"deleted": true, "id": id})))
    } else {
        Err(not_found())
    }
}
