//! `/media/{id}/relink`: start a relink of an item's links (`lifecycle::media::relink`) and read
//! its progress; and the relink as the API and the status show it, with its ETA.

use serde_json::{json, Value as Json};

use super::error::ApiError;
use super::input::{json_body, Issues, Obj};
use super::{Ctx, Reply, Request};
use crate::exec::Executor;
use crate::lifecycle::media::relink::{self, RelinkLane};
use crate::repo::daily;
use crate::repo::relink::Relink;
use crate::tick;

/// `POST /media/{id}/relink` (an empty body, or none): starts rewriting every file URL of the
/// item's earlier keys to its current key (`lifecycle::media::relink`), 202 with the relink; a
/// relink of the item in progress answers 200 with that one, so a retried request never starts
/// two. 404 for an unknown item, 409 `CONFLICT` for one in the trash.
pub async fn start<E: Executor>(ctx: &Ctx<'_, E>, id: &str, req: &Request) -> Result<Reply, ApiError> {
    if !req.body.iter().all(u8::is_ascii_whitespace) {
        let body = json_body(req)?;
        let mut issues = Issues::default();
        if Obj::new(&mut issues, "", &body, &[]).is_none() {
            return Err(issues.finish().unwrap_err());
        }
        issues.finish()?;
    }
    let requested_by = ctx.principal.as_ref().map(|p| p.token_id.as_str());
    match relink::start(ctx.exec, id, requested_by).await? {
        relink::StartOutcome::Started(r) => Ok((202, json!({"item": json_of(ctx, &r).await?}))),
        relink::StartOutcome::InProgress(r) => Ok((200, json!({"item": json_of(ctx, &r).await?}))),
        relink::StartOutcome::NotFound => Err(ApiError::not_found("Media not found")),
        relink::StartOutcome::Trashed => {
            Err(ApiError::conflict("The media item is in the trash; restore it before updating its links"))
        }
    }
}

/// `GET /media/{id}/relink`: the item's latest relink, with its progress (404 when it has none).
pub async fn get<E: Executor>(ctx: &Ctx<'_, E>, id: &str) -> Result<Reply, ApiError> {
    match crate::repo::relink::latest(ctx.exec, id).await? {
        Some(r) => Ok((200, json!({"item": json_of(ctx, &r).await?}))),
        None => Err(ApiError::not_found("No relink of this media item")),
    }
}

/// How often the cron tick runs, in seconds (`wrangler.toml`'s `*/2 * * * *`): a relink's ETA
/// in time is its ticks at this interval (continuations only make it sooner).
pub const CRON_INTERVAL_SECONDS: u64 = 120;
/// Statements a tick spends besides a relink's entries: its log, the continuation, the daily
/// read, the relink's claim, its keys and its release.
const RELINK_TICK_OVERHEAD: u64 = 6;
/// The statements an entry takes in the ticks that relink it: its write (a live revision and
/// update, and a draft's) and its share of the step and of its projection's group job. Measured:
/// 5 entries a tick at the default 40 statements, the work lane projecting the last tick's
/// (`npm run bench`).
const TICK_STATEMENTS_PER_ENTRY: u64 = 7;

/// A relink as the API shows it, with its ETA under `budget` (the daily budget's use `written`
/// on `day`): ticks by the rows its entries write and by the statements an entry takes, at least
/// one entry a tick, and that many cron intervals.
pub fn view(r: &Relink, budget: &tick::budget::Budget, day: &str, written: u64) -> Json {
    let finished = r.finished_at.is_some();
    let left = if finished { 0 } else { u64::try_from(r.entries_left).unwrap_or(0) };
    let capped = !finished && r.entries_left_capped != 0;
    let e = budget.estimate(RelinkLane::rows_to_write(left), day, written);
    let per_tick = (budget.max_statements.saturating_sub(RELINK_TICK_OVERHEAD) / TICK_STATEMENTS_PER_ENTRY).max(1);
    let ticks = e.ticks.max(left.div_ceil(per_tick));
    json!({
        "id": r.id,
        "mediaId": r.media_id,
        "state": relink::state_word(r),
        "entriesDone": r.entries_done,
        "entriesChanged": r.entries_changed,
        "entriesUnsettled": r.entries_unsettled,
        "entriesLeft": left,
        "entriesLeftCapped": capped,
        "conflicts": r.conflicts,
        "lastErrorCode": r.lease.last_error_code,
        "startedAt": r.started_at,
        "finishedAt": r.finished_at,
        "requestedBy": r.requested_by,
        "eta": {
            "ticks": ticks,
            "seconds": ticks * CRON_INTERVAL_SECONDS,
            "days": e.days,
            "finishDay": e.finish_day,
            "atLeast": capped,
        },
    })
}

/// [`view`] under the tick budget, with today's use of the daily budget read.
async fn json_of<E: Executor>(ctx: &Ctx<'_, E>, r: &Relink) -> Result<Json, ApiError> {
    let used = daily::usage(ctx.exec, None).await?;
    Ok(view(r, &ctx.config.tick_budget, &used.day, used.rows_written))
}
