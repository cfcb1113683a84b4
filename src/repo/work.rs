//! The durable work queue: one row per entry whose projection is due, claimed under a lease.

use serde::Deserialize;
use serde_json::json;

use super::lease::{self, Failure, LeaseState, LeaseView, WORK};
use crate::exec::guard::{guarded_batch, Guard};
use crate::exec::{Error, Executor, Statement};
use crate::ids;
use crate::model::collection::Collection;
use crate::model::state::QueueState;
use crate::sql::{render, Fragment};

const CLAIM_ENTRY_WORK: &str = include_str!("../sql/usage/claim_entry_work.sql");
const COMPLETE_WORK: &str = include_str!("../sql/usage/complete_work.sql");
const RECORD_SUCCESS: &str = include_str!("../sql/usage/record_success.sql");
const FAIL_WORK: &str = include_str!("../sql/usage/fail_work.sql");
const RECORD_FAILURE: &str = include_str!("../sql/usage/record_failure.sql");
const DELETE_OBSOLETE_WORK: &str = include_str!("../sql/usage/delete_obsolete_work.sql");
const LIST_WORK: &str = include_str!("../sql/usage/list_work.sql");
const GET_WORK: &str = include_str!("../sql/usage/get_work.sql");
const GUARD_RETRY_WORK: &str = include_str!("../sql/usage/guard_retry_work.sql");
const BUMP_EPOCH: &str = include_str!("../sql/usage/bump_epoch.sql");
const ENQUEUE_WORK: &str = include_str!("../sql/usage/enqueue_work.sql");
const CLAIM_GROUP: &str = include_str!("../sql/usage/claim_group.sql");

/// A work queue row.
#[derive(Debug, Clone, Deserialize, PartialEq)]
pub struct WorkRow {
    pub collection_id: String,
    pub content_id: String,
    pub collection_slug: String,
    pub change_epoch: i64,
    pub work_version: i64,
    /// The work version at which a job published the entry's live columns alone, leaving its
    /// draft overlay to the next job; a mark is stale once the work version moves on.
    #[serde(default)]
    pub partial_work_version: Option<i64>,
    /// Its lease and attempt columns.
    #[serde(flatten)]
    pub lease: LeaseState,
    pub last_attempted_at: Option<String>,
    pub created_at: String,
}

impl WorkRow {
    /// The entry's live columns were published at this work version: a job projects only its
    /// draft overlay.
    pub fn live_published(&self) -> bool {
        self.partial_work_version == Some(self.work_version)
    }

    /// Its lease and attempt columns.
    pub fn lease_view(&self) -> LeaseView<'_> {
        self.lease.view()
    }
}

/// Claims the next due work row (or the given entry's, if due) with a fresh lease of
/// [`WORK`]'s length. An expired lease counts as a due row: its holder died.
pub async fn claim<E: Executor>(exec: &E, key: Option<(&str, &str)>) -> Result<Option<WorkRow>, Error> {
    let stmt = match key {
        Some((cid, content)) => WORK.claim(CLAIM_ENTRY_WORK, &ids::new_id()).bind(cid).bind(content),
        // A group of one: the earliest fresh row, else the one retry or expired lease due.
        None => WORK.claim(CLAIM_GROUP, &ids::new_id()).bind(1i64),
    };
    exec.query_first(stmt).await
}

/// Claims up to `limit` fresh due work rows of one collection under `token` (a group job).
pub async fn claim_group<E: Executor>(exec: &E, token: &str, limit: u32) -> Result<Vec<WorkRow>, Error> {
    exec.query(WORK.claim(CLAIM_GROUP, token).bind(i64::from(limit))).await
}

/// The statements that end a successful job: the work row goes, coverage is updated.
pub fn completion(work: &WorkRow, draft_error: Option<&'static str>) -> [Statement; 2] {
    [
        Statement::new(COMPLETE_WORK)
            .bind(work.collection_id.as_str())
            .bind(work.content_id.as_str())
            .bind(work.lease.lease_token.clone())
            .bind(work.work_version),
        Statement::new(RECORD_SUCCESS).bind(work.collection_id.as_str()).bind(draft_error),
    ]
}

/// Completes a job that changes nothing in the index (the projection is unchanged).
pub async fn complete_unchanged<E: Executor>(exec: &E, work: &WorkRow) -> Result<(), Error> {
    exec.batch(completion(work, None).into()).await.map(drop)
}

/// Records a failed attempt: `retry` after the failure's delay, or `failed` when terminal (then
/// coverage turns `partial`).
pub async fn fail<E: Executor>(exec: &E, work: &WorkRow, failure: Failure, code: &str) -> Result<(), Error> {
    let mut stmts = vec![fail_statement(work, failure, code, None)];
    if failure.terminal {
        stmts.push(
            Statement::new(RECORD_FAILURE)
                .bind(work.collection_id.as_str())
                .bind(work.content_id.as_str())
                .bind(work.work_version)
                .bind(code),
        );
    }
    exec.batch(stmts).await.map(drop)
}

fn fail_statement(work: &WorkRow, failure: Failure, code: &str, unindexed: Option<&str>) -> Statement {
    failure
        .statement(FAIL_WORK, code)
        .bind(work.collection_id.as_str())
        .bind(work.content_id.as_str())
        .bind(work.lease.lease_token.clone())
        .bind(work.work_version)
        .bind(unindexed)
}

/// Fails an entry over the admission limit for good, keeping the media it references
/// (`media_ids`, a JSON array): the row stays on the operator work list, but unlike other
/// failures it leaves its collection's coverage as a success would (the safe delete refuses
/// exactly those media instead), in one batch.
pub async fn fail_over_limit<E: Executor>(exec: &E, work: &WorkRow, code: &str, media_ids: &str) -> Result<(), Error> {
    let stmts = vec![
        fail_statement(work, Failure::FINAL, code, Some(media_ids)),
        Statement::new(RECORD_SUCCESS).bind(work.collection_id.as_str()).bind(None::<String>),
    ];
    exec.batch(stmts).await.map(drop)
}

/// Drops a work row whose collection no longer exists with that identity.
pub async fn delete_obsolete<E: Executor>(exec: &E, work: &WorkRow) -> Result<bool, Error> {
    let stmt = Statement::new(DELETE_OBSOLETE_WORK)
        .bind(work.collection_id.as_str())
        .bind(work.content_id.as_str())
        .bind(work.lease.lease_token.clone())
        .bind(work.collection_slug.as_str());
    Ok(exec.execute(stmt).await? > 0)
}

/// Work rows of a collection, newest first.
pub async fn list_work<E: Executor>(
    exec: &E,
    collection: &Collection,
    state: Option<QueueState>,
    after: Option<(String, String)>,
    limit: u32,
) -> Result<Vec<ListedWork>, Error> {
    let (at, id) = after.unzip();
    let sql = render(LIST_WORK, &[("table", &Fragment::content_table(&collection.slug))]);
    exec.query(
        Statement::new(sql).bind(collection.id.as_str()).bind(state).bind(at).bind(id).bind(i64::from(limit) + 1),
    )
    .await
}

/// A work row as operators see it: with the slug of its entry (`None` once the entry is gone).
#[derive(Debug, Clone, Deserialize, PartialEq)]
pub struct ListedWork {
    #[serde(flatten)]
    pub row: WorkRow,
    pub content_slug: Option<String>,
}

/// A work row with whether its lease is live by the database clock.
#[derive(Debug, Clone, Deserialize)]
pub struct WorkWithLease {
    #[serde(flatten)]
    pub row: WorkRow,
    pub lease_live: Option<i64>,
}

pub async fn get_work<E: Executor>(
    exec: &E,
    collection_id: &str,
    content_id: &str,
) -> Result<Option<WorkWithLease>, Error> {
    exec.query_first(Statement::new(GET_WORK).bind(collection_id).bind(content_id)).await
}

/// Reopens (or creates) an entry's work row as `pending` and bumps the coverage epoch, only if
/// the row is still as observed; `None` when it changed meanwhile.
pub async fn retry_work<E: Executor>(
    exec: &E,
    c: &Collection,
    content_id: &str,
    observed: Option<&WorkRow>,
) -> Result<Option<WorkRow>, Error> {
    let guard = Guard::new(GUARD_RETRY_WORK)
        .bind(c.id.as_str())
        .bind(c.slug.as_str())
        .bind(content_id)
        .bind(observed.map(|w| w.work_version))
        .bind(observed.map(|w| w.lease.state));
    let stmts = vec![Statement::new(BUMP_EPOCH).bind(c.id.as_str()), enqueue(&c.id, c.slug.as_str(), &[content_id])];
    match guarded_batch(exec, guard, stmts).await {
        Ok(_) => Ok(get_work(exec, &c.id, content_id).await?.map(|w| w.row)),
        Err(Error::Stale) => Ok(None),
        Err(e) => Err(e),
    }
}

/// Queues the entries `content_ids` of a collection for projection: a new row each, or the row
/// an entry has queued afresh under a new work version (`{requeue_work}`). One statement
/// whatever their number (one bound JSON array).
pub fn enqueue(collection_id: &str, slug: &str, content_ids: &[impl AsRef<str>]) -> Statement {
    let ids: Vec<&str> = content_ids.iter().map(AsRef::as_ref).collect();
    Statement::new(lease::render(ENQUEUE_WORK, &[])).bind(collection_id).bind(slug).bind(json!(ids).to_string())
}
