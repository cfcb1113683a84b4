//! Scheduled publishing: an entry's `scheduled_at` (in its content table, the truth) and its row
//! in the schedule index (`_emdash_content_schedule`), which the tick's schedule lane searches for
//! due entries. Every statement that changes a schedule keeps the index row in step in the same
//! batch; a row whose entry no longer has its schedule is dropped when it comes due.

use serde::Deserialize;

use super::content::{publish_statement, Firing, Publication};
use crate::exec::guard::{guarded_batch, Guard};
use crate::exec::{Error, Executor, Row, Statement};
use crate::model::collection::Collection;
use crate::sql::{render, Fragment};

const DUE: &str = include_str!("../sql/schedule/due.sql");
const GUARD_SCHEDULE: &str = include_str!("../sql/schedule/guard_schedule.sql");
const GUARD_UNSCHEDULE: &str = include_str!("../sql/schedule/guard_unschedule.sql");
const SET: &str = include_str!("../sql/schedule/set.sql");
const CLEAR: &str = include_str!("../sql/schedule/clear.sql");
const KEEP_DRAFT_CURRENT: &str = include_str!("../sql/schedule/keep_draft_current.sql");
const UPSERT: &str = include_str!("../sql/schedule/upsert.sql");
const SETTLE: &str = include_str!("../sql/schedule/settle.sql");
const FORGET: &str = include_str!("../sql/schedule/forget.sql");
const IS_FUTURE: &str = include_str!("../sql/schedule/is_future.sql");

/// The statement that makes entry `id`'s row of the schedule index hold its schedule, when it has
/// one: in the batch of a write that leaves the entry outside the trash with a schedule (a
/// schedule, a restore).
pub fn upsert(c: &Collection, id: &str) -> Statement {
    Statement::new(render(UPSERT, &[("table", &Fragment::content_table(&c.slug))]))
        .bind(c.id.as_str())
        .bind(id)
        .bind(c.slug.as_str())
}

/// The statement that drops entry `id`'s row of the schedule index unless the entry, outside the
/// trash, still has exactly that schedule.
fn settle(c: &Collection, id: &str) -> Statement {
    Statement::new(render(SETTLE, &[("table", &Fragment::content_table(&c.slug))])).bind(c.id.as_str()).bind(id)
}

/// The batch writes that a schedule and its cancel share: the entry's draft kept current (it was
/// based on `version`), and its row of the schedule index made to mirror it.
async fn change<E: Executor>(
    exec: &E,
    c: &Collection,
    id: &str,
    version: i64,
    guard: Guard,
    write: Statement,
    index: Statement,
) -> Result<Option<Row>, Error> {
    let keep = Statement::new(render(KEEP_DRAFT_CURRENT, &[("table", &Fragment::content_table(&c.slug))]))
        .bind(id)
        .bind(version);
    match guarded_batch(exec, guard, vec![write, keep, index]).await {
        Ok(outcomes) => Ok(outcomes.into_iter().next().and_then(|o| o.rows.into_iter().next())),
        Err(Error::Stale) => Ok(None),
        Err(e) => Err(e),
    }
}

/// Schedules entry `id` for `at` (a time in the database clock's form), in one guarded batch:
/// the entry (`scheduled`, or still `published`), its draft kept current, and its row of the
/// schedule index. Only if `at` lies in the future by the database clock and the entry is
/// outside the trash, still at `version` and (with `only_own`) authored by that principal;
/// `None` otherwise (nothing written). Returns the entry's row.
pub async fn schedule<E: Executor>(
    exec: &E,
    c: &Collection,
    id: &str,
    version: i64,
    only_own: Option<&str>,
    at: &str,
) -> Result<Option<Row>, Error> {
    let table = Fragment::content_table(&c.slug);
    let guard = Guard::new(render(GUARD_SCHEDULE, &[("table", &table)])).bind(id).bind(version).bind(only_own).bind(at);
    let write = Statement::new(render(SET, &[("table", &table)])).bind(id).bind(at);
    change(exec, c, id, version, guard, write, upsert(c, id)).await
}

/// Cancels entry `id`'s schedule, in one guarded batch: the entry (back to `draft`, or still
/// `published`), its draft kept current, and its row of the schedule index dropped. Only if the
/// entry is outside the trash, scheduled, still at `version` and (with `only_own`) authored by
/// that principal; `None` otherwise (nothing written). Returns the entry's row.
pub async fn unschedule<E: Executor>(
    exec: &E,
    c: &Collection,
    id: &str,
    version: i64,
    only_own: Option<&str>,
) -> Result<Option<Row>, Error> {
    let table = Fragment::content_table(&c.slug);
    let guard = Guard::new(render(GUARD_UNSCHEDULE, &[("table", &table)])).bind(id).bind(version).bind(only_own);
    let write = Statement::new(render(CLEAR, &[("table", &table)])).bind(id);
    change(exec, c, id, version, guard, write, settle(c, id)).await
}

#[derive(Deserialize)]
struct IsFuture {
    future: Option<i64>,
}

/// Whether `at` (in the database clock's form) lies after the database clock's now.
pub async fn is_future<E: Executor>(exec: &E, at: &str) -> Result<bool, Error> {
    Ok(exec.query_first::<IsFuture>(Statement::new(IS_FUTURE).bind(at)).await?.and_then(|r| r.future) == Some(1))
}

/// A row of the schedule index: an entry and the time it is to be published.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
pub struct Due {
    pub collection_id: String,
    pub collection_slug: String,
    pub content_id: String,
    pub scheduled_at: String,
}

/// The earliest schedule due by `now` (the tick's time; `None`: the database clock's, which it
/// never precedes) after `after` in due order (`None`: from the earliest), by one search of the
/// index.
pub async fn next_due<E: Executor>(exec: &E, now: Option<&str>, after: Option<&Due>) -> Result<Option<Due>, Error> {
    let stmt = Statement::new(DUE)
        .bind(now)
        .bind(after.map(|d| d.scheduled_at.as_str()))
        .bind(after.map(|d| d.collection_id.as_str()))
        .bind(after.map(|d| d.content_id.as_str()));
    exec.query_first(stmt).await
}

/// Publishes the entry a due schedule names, in one batch: the publish ([`publish_statement`],
/// which fires only while the entry, outside the trash, is still at `version` and scheduled for
/// exactly `due.scheduled_at`, and that time has come by `now`), whose capture trigger queues the
/// entry's projection in the same statement, then the index row dropped unless the entry still
/// has that schedule. Returns the published row (`None`: the entry moved on; its row then stays
/// while it still has the schedule).
pub async fn publish_due<E: Executor>(
    exec: &E,
    c: &Collection,
    due: &Due,
    version: i64,
    now: Option<&str>,
    publication: Publication,
) -> Result<Option<Row>, Error> {
    let firing = Firing { scheduled_at: &due.scheduled_at, now };
    let publish = publish_statement(c, &due.content_id, version, None, Some(firing), publication);
    let outcomes = exec.batch(vec![publish, settle(c, &due.content_id)]).await?;
    Ok(outcomes.into_iter().next().and_then(|o| o.rows.into_iter().next()))
}

/// Drops the index row of a due schedule whose entry no longer has it (published, unscheduled,
/// trashed or deleted since); a row whose entry still has it stays. Whether it was dropped.
pub async fn settle_due<E: Executor>(exec: &E, c: &Collection, due: &Due) -> Result<bool, Error> {
    Ok(exec.run(settle(c, &due.content_id)).await?.changes > 0)
}

/// Drops the index row of a due schedule whatever its entry holds (its collection is gone, or its
/// publish was refused), unless it was made again for another time meanwhile. Whether it was
/// dropped.
pub async fn forget<E: Executor>(exec: &E, due: &Due) -> Result<bool, Error> {
    let stmt = Statement::new(FORGET)
        .bind(due.collection_id.as_str())
        .bind(due.content_id.as_str())
        .bind(due.scheduled_at.as_str());
    Ok(exec.run(stmt).await?.changes > 0)
}
