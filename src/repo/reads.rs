//! The read paths: "Used in" pages, usage counts, and the safe media delete, all starting from
//! the occurrences' media index through the `_emdash_media_usage_current` and `…_eligible` views.

use serde::Deserialize;

use crate::exec::guard::{guarded_batch, Guard};
use crate::exec::{Error, Executor, Statement};
use crate::repo::uses;
use crate::sql::Fragment;

const USAGE_PAGE: &str = include_str!("../sql/usage/usage_page.sql");
const COUNT_ENTRIES: &str = include_str!("../sql/usage/count_entries.sql");
const GUARD_MEDIA_UNUSED: &str = include_str!("../sql/usage/guard_media_unused.sql");
const UNINDEXED_USERS: &str = include_str!("../sql/usage/unindexed_users.sql");
const MEDIA_USAGE_ENTRIES: &str = include_str!("../sql/usage/media_usage_entries.sql");

/// One eligible occurrence of a media item, with its entry's display metadata.
#[derive(Debug, Clone, Deserialize)]
pub struct UsageRow {
    pub collection_slug: String,
    pub content_id: String,
    pub source_variant: String,
    pub content_slug: Option<String>,
    pub content_title: Option<String>,
    pub content_status: Option<String>,
    pub locale: Option<String>,
    pub content_deleted_at: Option<String>,
    pub field_slug: String,
    pub field_path: String,
    pub occurrence_index: i64,
    pub reference_type: String,
    pub content_scheduled_at: Option<String>,
}

/// The occurrences of up to `limit` entries that use `media_id`, after `(collection, content)`.
pub async fn usage_page<E: Executor>(
    exec: &E,
    media_id: &str,
    after: Option<(String, String)>,
    limit: u32,
) -> Result<Vec<UsageRow>, Error> {
    let (c, id) = after.unzip();
    exec.query(Statement::new(USAGE_PAGE).bind(media_id).bind(c).bind(id).bind(i64::from(limit))).await
}

/// For each of `media_ids`, the distinct entries that use it as summaries count uses: entries
/// outside the trash whose current projection uses it, and entries too large to index that list
/// it (one statement, whatever the number of ids; an id nothing uses counts 0).
pub async fn count_entries<E: Executor>(exec: &E, media_ids: &[String]) -> Result<Vec<(String, i64)>, Error> {
    #[derive(Deserialize)]
    struct N {
        media_id: String,
        n: i64,
    }
    let ids = serde_json::to_string(media_ids).map_err(|e| Error::Decode(e.to_string()))?;
    let rows: Vec<N> = exec
        .query(Statement::new(uses::render(COUNT_ENTRIES, &Fragment::row_column("j", "value"), &[])).bind(ids))
        .await?;
    Ok(rows.into_iter().map(|r| (r.media_id, r.n)).collect())
}

/// How a safe media delete ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SafeDelete {
    /// Moved to the trash.
    Trashed,
    /// No such media row, it is in the trash already, or it is not the caller's to delete.
    Missing,
    /// A current occurrence references it, or coverage cannot prove it unused.
    Refused,
}

/// Moves a media item to the trash only if, at that instant, no current occurrence references it
/// and every collection's coverage is complete under the deployed reference rules (`rules_id`):
/// the check and the move are one guarded batch. The move takes only an item of `only_own`'s
/// (below editor: the caller's own; `None`: any), else it is [`SafeDelete::Missing`].
pub async fn trash_media_if_unused<E: Executor>(
    exec: &E,
    media_id: &str,
    rules_id: &str,
    only_own: Option<&str>,
) -> Result<SafeDelete, Error> {
    // ?1 is the guard's own row; the rule reads the item at ?2 and the rules at ?3.
    let sql = crate::repo::media::render_unused_and_proven(GUARD_MEDIA_UNUSED, &Fragment::parameter(2), 3);
    let guard = Guard::new(sql).bind(media_id).bind(rules_id);
    match guarded_batch(exec, guard, vec![crate::repo::media::trash_statement(media_id, only_own)]).await {
        Ok(outcomes) if outcomes.first().is_some_and(|o| o.changes > 0) => Ok(SafeDelete::Trashed),
        Ok(_) => Ok(SafeDelete::Missing),
        Err(Error::Stale) => Ok(SafeDelete::Refused),
        Err(e) => Err(e),
    }
}

/// An entry whose current projection references a media item.
#[derive(Debug, Clone, Deserialize)]
pub struct UsingEntry {
    pub collection_slug: String,
    pub content_id: String,
    pub content_slug: Option<String>,
    /// 0 for an entry too large to index (its references are known, not their paths).
    pub indexed: i64,
    /// How many distinct entries reference the media (the same on every row).
    pub total: i64,
}

/// An entry too large to index that references a media item.
#[derive(Debug, Clone, Deserialize, PartialEq)]
pub struct UnindexedUser {
    pub collection_slug: String,
    pub content_id: String,
}

/// Up to `limit` entries too large to index whose failed work rows list the media.
pub async fn unindexed_users<E: Executor>(exec: &E, media_id: &str, limit: u32) -> Result<Vec<UnindexedUser>, Error> {
    exec.query(
        Statement::new(uses::render(UNINDEXED_USERS, &Fragment::parameter(1), &[]))
            .bind(media_id)
            .bind(i64::from(limit)),
    )
    .await
}

/// Up to `limit` entries (of registered collections, trashed included) whose current projection
/// references the media, or that are too large to index and reference it, with the total count.
pub async fn entries_using_media<E: Executor>(exec: &E, media_id: &str, limit: u32) -> Result<Vec<UsingEntry>, Error> {
    exec.query(
        Statement::new(uses::render(MEDIA_USAGE_ENTRIES, &Fragment::parameter(1), &[]))
            .bind(media_id)
            .bind(i64::from(limit)),
    )
    .await
}
