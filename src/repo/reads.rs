//! The read paths: "Used in" pages, usage counts, and the entries that keep a media item from its
//! delete, all starting from the occurrences' media index through the
//! `_emdash_media_usage_current` and `…_eligible` views. Nothing here writes; the safe delete's
//! move to the trash is [`crate::repo::media::trash_if_unused`].

use serde::Deserialize;

use crate::exec::{Error, Executor, Statement};
use crate::repo::uses;
use crate::sql::Fragment;

const USAGE_PAGE: &str = include_str!("../sql/usage/usage_page.sql");
const COUNT_ENTRIES: &str = include_str!("../sql/usage/count_entries.sql");
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
    /// The storage key a file URL names (`None` for every other kind).
    #[serde(default)]
    pub linked_key: Option<String>,
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
