//! Media usage endpoints: "Used in", usage counts, coverage status, the work queue and the
//! tick log; and the after-write projection every content write triggers.

use serde_json::{json, Value as Json};

use super::error::ApiError;
use super::input::{self, json_body, query, Issues, Obj};
use super::{queue, schema};
use super::{Ctx, Reply, Request};
use crate::clock::FnClock;
use crate::exec::meter::Metered;
use crate::exec::Executor;
use crate::lifecycle::deletion::lane::DeletionLane;
use crate::model::auth::Role;
use crate::model::collection::Collection;
use crate::model::state::{CaptureState, CoverageStatus, QueueState};
use crate::repo::capture::{self, CoverageRow};
use crate::repo::daily;
use crate::repo::media as media_repo;
use crate::repo::reads::{self, UsageRow};
use crate::repo::repair as repair_repo;
use crate::repo::work::{self, WorkRow};
use crate::tick;
use crate::usage::cost::CpuWork;
use crate::usage::coverage::{aggregate, CollectionCoverage};
use crate::usage::extract::ReferenceType;
use crate::usage::project;
use crate::usage::repair::RepairLane;

/// Projects the entry a request just wrote, so "Used in" is current when the response returns.
/// A failure here never fails the write: the work row stays queued for the cron tick. A request
/// that read `body_bytes` of entry data (and extracted them for admission) projects inline only
/// when both fit the tick's CPU budget by the cost model: a heavier write leaves its projection
/// to the ticks, where it runs alone.
pub async fn after_write<E: Executor>(ctx: &Ctx<'_, E>, c: &Collection, content_id: &str, body_bytes: usize) {
    if 2.0 * CpuWork::entry(body_bytes as u64, 0, 0).ms() > ctx.config.background.cpu_ms {
        return;
    }
    match project::process_next(ctx.exec, Some((&c.id, content_id)), &ctx.config.background.projection).await {
        Ok(Some(project::JobOutcome::Failed { code, .. })) => {
            ctx.log(format!("projection of {}/{content_id} failed: {code}", c.slug));
        }
        Ok(_) => {}
        Err(e) => ctx.log(format!("projection of {}/{content_id} deferred to the cron tick: {e}", c.slug)),
    }
}

/// Overall coverage and the per-collection rows it was computed from.
pub async fn coverage<E: Executor>(ctx: &Ctx<'_, E>) -> Result<(CoverageStatus, Vec<CoverageRow>), ApiError> {
    let rows = capture::coverage_rows(ctx.exec).await?;
    let rules = &ctx.config.background.projection.rules;
    let cov: Vec<CollectionCoverage> = rows.iter().map(|r| CollectionCoverage::of(r, rules)).collect();
    Ok((aggregate(&cov), rows))
}

/// Rows of each kind a status read counts at most per repair run, so what one read costs does
/// not grow with what is in progress: a figure that reaches it is flagged capped (at least that
/// many are left), and its estimate is then a lower bound. (A collection deletion's figures are
/// counters on its tombstone: nothing is counted at read time.)
pub const STATUS_COUNT_CAP: u32 = 1_000;
/// Deletions of collections and repair runs the status lists at most (oldest first; `…More`
/// says there are others); each repair run costs a counting statement.
pub const STATUS_PAGE: u32 = 5;
/// Field deletions the status lists at most (one row each, nothing counted).
pub const STATUS_FIELD_DELETIONS: u32 = 20;

/// The first `page` of `rows` (read with one more) and whether there were more.
fn first_page<T>(mut rows: Vec<T>, page: u32) -> (Vec<T>, bool) {
    let more = rows.len() > page as usize;
    rows.truncate(page as usize);
    (rows, more)
}

/// `GET /admin/media-usage/status?day=`: coverage, deletions (of collections and of fields) and
/// repair runs in progress with what they have left (a deletion's from the counters its lane
/// keeps, a run's counted up to [`STATUS_COUNT_CAP`]) and an
/// estimate of when they finish, the tick budget, and the daily budget's use on `day` (a UTC
/// date; default: the database's today). At most a page of each list: one read costs a bounded
/// number of statements and rows whatever is in progress.
pub async fn status<E: Executor>(ctx: &Ctx<'_, E>, req: &Request) -> Result<Reply, ApiError> {
    let mut issues = Issues::default();
    let day = query(req, "day");
    if day.is_some_and(|d| !is_day(d)) {
        issues.add("day", "Expected a date, YYYY-MM-DD");
    }
    issues.finish()?;
    let (overall, rows) = coverage(ctx).await?;
    let collections: Vec<Json> = rows
        .iter()
        .map(|r| {
            let effective = CollectionCoverage::of(r, &ctx.config.background.projection.rules).effective();
            json!({
                "collection": r.collection,
                "collectionId": r.collection_id,
                "status": effective,
                "storedStatus": r.status,
                "captureState": r.capture_state,
                "changeEpoch": r.change_epoch.unwrap_or(0),
                "reconciliationRequired": r.reconciliation_required.unwrap_or(0) != 0,
                "lastErrorCode": r.last_error_code,
                "rulesVersion": r.rules_version,
            })
        })
        .collect();
    let budget = &ctx.config.tick_budget;
    let used = daily::usage(ctx.exec, day).await?;
    let estimate = |rows_to_write: u64, capped: bool| {
        let e = budget.estimate(rows_to_write, &used.day, used.rows_written);
        json!({"rowsToWrite": e.rows_to_write, "ticks": e.ticks, "days": e.days, "finishDay": e.finish_day, "atLeast": capped})
    };
    let cap = u64::from(STATUS_COUNT_CAP);
    let mut deletions = Vec::new();
    let (tombstones, deletions_more) =
        first_page(crate::repo::deletion::in_progress(ctx.exec, STATUS_PAGE + 1).await?, STATUS_PAGE);
    for t in tombstones {
        // Until the lane has counted every kind, the figure is what it has counted: a lower bound.
        let left = t.left();
        let counting = !t.counted();
        deletions.push(json!({
            "collection": t.collection_slug,
            "collectionId": t.collection_id,
            "phase": t.phase,
            "state": t.lease.state,
            "attemptCount": t.lease.attempt_count,
            "nextAttemptAt": t.lease.next_attempt_at,
            "leaseExpiresAt": t.lease.lease_expires_at,
            "lastErrorCode": t.lease.last_error_code,
            "rowsLeft": left.iter().map(|(_, n)| n).sum::<u64>(),
            "rowsLeftCapped": counting,
            "counting": counting,
            "estimate": estimate(DeletionLane::rows_to_write(&left), counting),
        }));
    }
    let (field_rows, field_deletions_more) = first_page(
        crate::repo::field_deletion::in_progress(ctx.exec, STATUS_FIELD_DELETIONS + 1).await?,
        STATUS_FIELD_DELETIONS,
    );
    let field_deletions: Vec<Json> = field_rows
        .iter()
        .map(|d| {
            json!({
                "collection": d.collection_slug,
                "collectionId": d.collection_id,
                "field": d.field_slug,
                "fieldId": d.field_id,
                "phase": d.phase,
                "state": d.lease.state,
                "attemptCount": d.lease.attempt_count,
                "nextAttemptAt": d.lease.next_attempt_at,
                "leaseExpiresAt": d.lease.lease_expires_at,
                "lastErrorCode": d.lease.last_error_code,
            })
        })
        .collect();
    let mut repairs = Vec::new();
    let (runs, repairs_more) = first_page(repair_repo::list_runs(ctx.exec, STATUS_PAGE + 1).await?, STATUS_PAGE);
    for run in runs {
        let left = repair_repo::remaining(ctx.exec, &run, STATUS_COUNT_CAP).await?;
        let capped = left.entries >= cap || left.queued >= cap;
        repairs.push(json!({
            "collection": run.collection_slug,
            "collectionId": run.collection_id,
            "phase": run.phase,
            "state": run.state,
            "attemptCount": run.attempt_count,
            "nextAttemptAt": run.next_attempt_at,
            "entriesLeft": left.entries,
            "queuedLeft": left.queued,
            "leftCapped": capped,
            "estimate": estimate(RepairLane::rows_to_write(&left), capped),
        }));
    }
    let (relink_rows, relinks_more) =
        first_page(crate::repo::relink::in_progress(ctx.exec, STATUS_PAGE + 1).await?, STATUS_PAGE);
    let relinks: Vec<Json> =
        relink_rows.iter().map(|r| super::relink::view(r, budget, &used.day, used.rows_written)).collect();
    let tick_budget = json!({
        "maxStatements": budget.max_statements,
        "maxMs": budget.max_ms,
        "maxRowsWritten": budget.max_rows.written,
        "maxRowsRead": budget.max_rows.read,
    });
    let limit = budget.daily_rows_written;
    let daily = json!({
        "day": used.day,
        "rowsWritten": used.rows_written,
        "rowsRead": used.rows_read,
        "ticks": used.ticks,
        "budget": limit,
        "remaining": (limit > 0).then(|| limit.saturating_sub(used.rows_written)),
        "spent": limit > 0 && used.rows_written >= limit,
    });
    Ok((
        200,
        json!({
            "status": overall,
            "collections": collections,
            "deletions": deletions,
            "deletionsMore": deletions_more,
            "fieldDeletions": field_deletions,
            "fieldDeletionsMore": field_deletions_more,
            "repairs": repairs,
            "repairsMore": repairs_more,
            "relinks": relinks,
            "relinksMore": relinks_more,
            "tickBudget": tick_budget,
            "daily": daily,
        }),
    ))
}

/// Whether `s` is a day as the status's `day` takes it: `YYYY-MM-DD`, month 01–12, day 01–31.
fn is_day(s: &str) -> bool {
    let b = s.as_bytes();
    let digits = |r: std::ops::Range<usize>| b.get(r.clone()).is_some_and(|d| d.iter().all(u8::is_ascii_digit));
    let number = |r: std::ops::Range<usize>| s.get(r).and_then(|n| n.parse::<u32>().ok()).unwrap_or(0);
    b.len() == 10
        && digits(0..4)
        && digits(5..7)
        && digits(8..10)
        && b[4] == b'-'
        && b[7] == b'-'
        && (1..=12).contains(&number(5..7))
        && (1..=31).contains(&number(8..10))
}

/// The `usage` block of each of `media_ids` (EmDash's media usage summary), as
/// `GET /media/{id}?includeUsage=1` and `GET /media?includeUsage=1` give it, in their order:
/// `{count, coverage: {scope, status}}` with the overall coverage, and a count (entries outside
/// the trash using the item, and entries too large to index that list it) only when coverage is
/// complete and the caller may see drafts (editor or above), else `null`. One coverage read and,
/// when counted, one statement for all the ids.
pub async fn usage_summaries<E: Executor>(ctx: &Ctx<'_, E>, media_ids: &[String]) -> Result<Vec<Json>, ApiError> {
    let (overall, _) = coverage(ctx).await?;
    let may_read_drafts = ctx.principal.as_ref().is_some_and(|p| p.role >= Role::Editor);
    let counts = if overall == CoverageStatus::Complete && may_read_drafts && !media_ids.is_empty() {
        Some(reads::count_entries(ctx.exec, media_ids).await?)
    } else {
        None
    };
    let count = |id: &String| counts.as_ref().map(|c| c.iter().find(|(m, _)| m == id).map_or(0, |(_, n)| *n));
    let coverage = json!({"scope": "all_content_collections", "status": overall});
    Ok(media_ids.iter().map(|id| json!({"count": count(id), "coverage": coverage})).collect())
}

/// `GET /media/{id}/usage`: the entries whose current projection references the media.
pub async fn media_usage<E: Executor>(ctx: &Ctx<'_, E>, media_id: &str, req: &Request) -> Result<Reply, ApiError> {
    let mut issues = Issues::default();
    let limit = input::limit(req, &mut issues);
    let after = input::cursor(req, &mut issues)?;
    issues.finish()?;
    let item = media_repo::get(ctx.exec, media_id).await?.ok_or_else(|| ApiError::not_found("Media not found"))?;
    let (overall, _) = coverage(ctx).await?;
    let rows = reads::usage_page(ctx.exec, media_id, after, limit + 1).await?;
    let mut entries = group_entries(rows);
    let next = input::paginate(&mut entries, limit, |e| (e.collection.clone(), e.content_id.clone()));
    let items: Vec<Json> = entries.iter().map(|e| e.to_json(&item.storage_key)).collect();
    let unindexed: Vec<Json> = reads::unindexed_users(ctx.exec, media_id, UNINDEXED_LISTED)
        .await?
        .into_iter()
        .map(|u| json!({"collection": u.collection_slug, "contentId": u.content_id}))
        .collect();
    let coverage = json!({"scope": "all_content_collections", "status": overall});
    let mut body = input::page(items, next);
    body["unindexed"] = Json::from(unindexed);
    body["coverage"] = coverage;
    Ok((200, body))
}

/// Entries too large to index that "Used in" names at most (each page, apart from the items).
pub const UNINDEXED_LISTED: u32 = 100;

/// One occurrence as "Used in" lists it: field, path, index, reference type, and the storage key
/// a file URL names.
type Occurrence = (String, String, i64, String, Option<String>);

/// One entry's usage of a media item.
#[derive(Debug)]
struct EntryUsage {
    collection: String,
    content_id: String,
    /// Display metadata: from the draft overlay when present, else the live columns.
    meta: UsageRow,
    deleted_at: Option<String>,
    /// Every occurrence once, whichever source variants hold it.
    occurrences: Vec<Occurrence>,
    /// The occurrences of each source variant (`columns`, `draft_overlay`), as EmDash groups them.
    sources: Vec<(String, Vec<Occurrence>)>,
}

impl EntryUsage {
    /// The entry as "Used in" lists it for the item whose current file is `current_key`: each
    /// flat occurrence with its `linkedKey` (the key a file URL names; `null` for every other
    /// kind), and `versions`, the earlier files of the item the entry links to (sorted).
    fn to_json(&self, current_key: &str) -> Json {
        let ours = |ty: &str| ReferenceType::ALL.iter().map(|t| t.as_str()).find(|t| *t == ty).unwrap_or("unknown");
        // EmDash's schema names four reference types; the kinds it does not have read `unknown`
        // there (the flat `occurrences` keep them).
        let emdash = |ty: &str| match ours(ty) {
            t @ ("image_field" | "file_field" | "portable_text_image") => t,
            _ => "unknown",
        };
        let occurrences = |list: &[Occurrence], kind: &dyn Fn(&str) -> &'static str, linked: bool| {
            list.iter()
                .map(|(slug, path, index, ty, key)| {
                    let mut o = json!({"fieldSlug": slug, "fieldPath": path, "occurrenceIndex": index, "referenceType": kind(ty)});
                    if linked {
                        o["linkedKey"] = json!(key);
                    }
                    o
                })
                .collect::<Vec<_>>()
        };
        let versions: std::collections::BTreeSet<&str> =
            self.occurrences.iter().filter_map(|o| o.4.as_deref()).filter(|k| *k != current_key).collect();
        json!({
            "collection": self.collection,
            "contentId": self.content_id,
            "slug": self.meta.content_slug,
            "title": self.meta.content_title,
            "status": self.meta.content_status,
            "locale": self.meta.locale,
            "scheduledAt": self.meta.content_scheduled_at,
            "deletedAt": self.deleted_at,
            "occurrences": occurrences(&self.occurrences, &ours, true),
            "versions": versions,
            "sources": self.sources.iter().map(|(variant, list)| json!({
                "variant": variant, "occurrences": occurrences(list, &emdash, false),
            })).collect::<Vec<_>>(),
        })
    }
}

/// Groups occurrence rows (ordered by entry, then source variant) into entries; a page never
/// splits an entry.
fn group_entries(rows: Vec<UsageRow>) -> Vec<EntryUsage> {
    let mut out: Vec<EntryUsage> = Vec::new();
    for row in rows {
        let same = out.last().is_some_and(|e| e.collection == row.collection_slug && e.content_id == row.content_id);
        if !same {
            out.push(EntryUsage {
                collection: row.collection_slug.clone(),
                content_id: row.content_id.clone(),
                meta: row.clone(),
                deleted_at: None,
                occurrences: Vec::new(),
                sources: Vec::new(),
            });
        }
        let Some(entry) = out.last_mut() else { continue };
        if row.source_variant == "draft_overlay" {
            entry.meta = row.clone();
        }
        if row.content_deleted_at > entry.deleted_at {
            entry.deleted_at = row.content_deleted_at.clone();
        }
        let occ = (row.field_slug, row.field_path, row.occurrence_index, row.reference_type, row.linked_key);
        if !entry.occurrences.contains(&occ) {
            entry.occurrences.push(occ.clone());
        }
        match entry.sources.last_mut() {
            Some((variant, list)) if *variant == row.source_variant => list.push(occ),
            _ => entry.sources.push((row.source_variant, vec![occ])),
        }
    }
    for e in &mut out {
        e.occurrences.sort();
    }
    out
}

/// The operator view of a work row ([`queue::row_json`] with the entry and its work version).
fn work_json(w: &WorkRow) -> Json {
    queue::row_json(
        w.lease_view(),
        [
            ("collectionId", json!(w.collection_id)),
            ("collectionSlug", json!(w.collection_slug)),
            ("contentId", json!(w.content_id)),
            ("workVersion", json!(w.work_version)),
            ("lastAttemptedAt", json!(w.last_attempted_at)),
        ],
    )
}

/// `GET /admin/media-usage/work?collection=&state=&limit=&cursor=`.
pub async fn list_work<E: Executor>(ctx: &Ctx<'_, E>, req: &Request) -> Result<Reply, ApiError> {
    let mut issues = Issues::default();
    let limit = input::limit(req, &mut issues);
    let state = match query(req, "state") {
        None => None,
        Some(raw) => {
            let parsed = QueueState::parse(raw);
            if parsed.is_none() {
                issues.add("state", "Expected pending, retry, leased or failed");
            }
            parsed
        }
    };
    let collection = query(req, "collection");
    if collection.is_none() {
        issues.add("collection", "Required");
    }
    let after = input::cursor(req, &mut issues)?;
    issues.finish()?;
    let c = schema::load(ctx, collection.unwrap_or_default(), "collection").await?;
    let mut rows = work::list_work(ctx.exec, &c, state, after, limit).await?;
    let next = input::paginate(&mut rows, limit, |w| (w.row.lease.updated_at.clone(), w.row.content_id.clone()));
    let items: Vec<Json> = rows
        .iter()
        .map(|w| {
            let mut item = work_json(&w.row);
            item["contentSlug"] = json!(w.content_slug);
            item
        })
        .collect();
    Ok((200, input::page(items, next)))
}

/// `POST /admin/media-usage/work/retry {"collectionId","contentId"}`.
pub async fn retry_work<E: Executor>(ctx: &Ctx<'_, E>, req: &Request) -> Result<Reply, ApiError> {
    let body = json_body(req)?;
    let mut issues = Issues::default();
    let Some(obj) = Obj::new(&mut issues, "", &body, &["collectionId", "contentId"]) else {
        return Err(issues.finish().unwrap_err());
    };
    let collection_id = obj.string(&mut issues, "collectionId", true, 1, 2048);
    let content_id = obj.string(&mut issues, "contentId", true, 1, 2048);
    let (collection_id, content_id) = issues.finish_with(collection_id.zip(content_id))?;
    let (_, rows) = coverage(ctx).await?;
    let current = rows
        .iter()
        .find(|r| r.collection_id == collection_id && r.capture_state == Some(CaptureState::Active))
        .ok_or_else(|| ApiError::new(404, "COLLECTION_NOT_FOUND", "No actively indexed collection has this id"))?;
    let slug = schema::parse_slug(&current.collection, "collectionId")?;
    let c = crate::repo::schema::find(ctx.exec, &slug)
        .await?
        .filter(|c| c.id == collection_id)
        .ok_or_else(|| ApiError::collection_not_found(&current.collection))?;
    let observed = work::get_work(ctx.exec, &c.id, &content_id).await?;
    if let Some(w) = &observed {
        if w.row.lease.state == QueueState::Pending {
            return Ok((200, json!({"changed": false, "item": work_json(&w.row)})));
        }
        if w.row.lease.state == QueueState::Leased && w.lease_live == Some(1) {
            return Err(ApiError::new(409, "WORK_LEASE_ACTIVE", "The work item is being processed")
                .with_details(json!({"leaseExpiresAt": w.row.lease.lease_expires_at})));
        }
    } else if crate::repo::content::get(ctx.exec, &c, &content_id).await?.is_none() {
        return Err(ApiError::not_found("No work item or entry with this id"));
    }
    match work::retry_work(ctx.exec, &c, &content_id, observed.as_ref().map(|w| &w.row)).await? {
        Some(row) => Ok((200, json!({"changed": true, "item": work_json(&row)}))),
        None => Err(ApiError::new(409, "WORK_CHANGED", "The work item changed; reload and retry")),
    }
}

/// `GET /admin/media-usage/ticks?limit=&cursor=`: newest first.
pub async fn ticks<E: Executor>(ctx: &Ctx<'_, E>, req: &Request) -> Result<Reply, ApiError> {
    let mut issues = Issues::default();
    let limit = input::limit(req, &mut issues);
    let before = match input::cursor(req, &mut issues)? {
        Some((_, id)) => Some(
            id.parse::<i64>()
                .ok()
                .filter(|id| (0..=crate::model::MAX_SAFE_INTEGER).contains(id))
                .ok_or_else(ApiError::invalid_cursor)?,
        ),
        None => None,
    };
    issues.finish()?;
    let mut rows = crate::repo::ticks::list_ticks(ctx.exec, before, limit).await?;
    let next = input::paginate(&mut rows, limit, |t| (t.started_at.clone(), t.id.to_string()));
    let items: Vec<Json> = rows
        .iter()
        .map(|t| {
            json!({
                "id": t.id,
                "startedAt": t.started_at,
                "lane": t.lane,
                "outcome": t.outcome,
                "statements": t.statements,
                "rowsWritten": t.rows_written,
                "rowsRead": t.rows_read,
                "budgetDay": t.budget_day,
                "durationMs": t.duration_ms,
                "details": t.details.as_deref().and_then(|d| serde_json::from_str::<Json>(d).ok()),
            })
        })
        .collect();
    Ok((200, input::page(items, next)))
}

/// `POST /admin/media-usage/repair` `{"scope":"collection","collection":<slug>}` or
/// `{"scope":"all"}`: starts a repair run per collection, does at most one tick budget of the
/// work, and answers with the coverage reached (`running` while ticks must continue).
pub async fn repair<E: Executor>(ctx: &Ctx<'_, E>, req: &Request) -> Result<Reply, ApiError> {
    let body = json_body(req)?;
    let mut issues = Issues::default();
    let Some(obj) = Obj::new(&mut issues, "", &body, &["scope", "collection"]) else {
        return Err(issues.finish().unwrap_err());
    };
    let scope = obj.string(&mut issues, "scope", true, 1, 32);
    let collection = obj.string(&mut issues, "collection", false, 1, 63);
    match scope.as_deref() {
        Some("collection") if collection.is_none() => issues.add("collection", "Required"),
        Some("all") if obj.has("collection") => issues.add("collection", "Not allowed with scope \"all\""),
        Some("collection" | "all") | None => {}
        Some(_) => issues.add("scope", "Expected \"collection\" or \"all\""),
    }
    issues.finish()?;
    let targets = match collection {
        Some(slug) => vec![schema::load(ctx, &slug, "collection").await?],
        None => crate::repo::schema::load(ctx.exec, None).await?,
    };
    let clock = FnClock(ctx.config.clock);
    // Starting the runs counts against the same budget as the work done after it.
    let metered = Metered::new(ctx.exec, clock);
    let ids: Vec<&str> = targets.iter().map(|c| c.id.as_str()).collect();
    // A repair redoes what failed for good: the deletions of these collections' fields too.
    let cleanup = ctx.config.background.cleanup;
    metered.execute(crate::repo::field_deletion::reopen_statement(&ids, cleanup.start())).await?;
    let started = repair_repo::begin(&metered, &ids, ctx.config.background.projection.rules.id()).await?;
    if started == 0 && scope.as_deref() == Some("collection") {
        let slug = targets.first().map(|c| c.slug.as_str()).unwrap_or_default();
        return Err(ApiError::new(404, "COLLECTION_NOT_FOUND", format!("Collection '{slug}' is not actively indexed")));
    }
    // The index's lanes only: sweeping the object store is the cron ticks' work, not a repair's.
    let report = tick::run_lanes(
        &metered,
        &clock,
        ctx.config.tick_budget,
        &ctx.config.background,
        None,
        &tick::TickTime::database(),
    )
    .await;
    if let Some(e) = report.error {
        ctx.log(format!("repair request stopped early: {e}"));
    }
    let (_, rows) = coverage(ctx).await?;
    let mine: Vec<&CoverageRow> = rows.iter().filter(|r| ids.contains(&r.collection_id.as_str())).collect();
    let cov: Vec<CollectionCoverage> =
        mine.iter().map(|r| CollectionCoverage::of(r, &ctx.config.background.projection.rules)).collect();
    let collections: Vec<Json> = mine
        .iter()
        .zip(&cov)
        .map(|(r, c)| {
            json!({
                "collection": r.collection,
                "collectionId": r.collection_id,
                "status": c.effective(),
                "reconciliationRequired": c.reconciliation_required,
                "lastErrorCode": r.last_error_code,
                "indexedSourceCount": r.indexed_source_count,
                "failedSourceCount": r.failed_source_count,
                "skippedSourceCount": 0,
                "deletedSourceCount": 0,
                "startedAt": r.started_at,
                "completedAt": r.completed_at,
            })
        })
        .collect();
    Ok((
        200,
        json!({
            "status": aggregate(&cov),
            "started": started,
            "statements": metered.usage().statements,
            "indexedSourceCount": mine.iter().filter_map(|r| r.indexed_source_count).sum::<i64>(),
            "failedSourceCount": mine.iter().filter_map(|r| r.failed_source_count).sum::<i64>(),
            // EmDash counts sources its scan skipped on a lost race and sources its orphan pass
            // deleted; here both are queued as work instead (the work list shows them).
            "skippedSourceCount": 0,
            "deletedSourceCount": 0,
            "collections": collections,
        }),
    ))
}
