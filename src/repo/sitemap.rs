//! Reads for the image sitemaps: published entry counts, a page of entries, and the local
//! images their live projections use.

use serde::Deserialize;

use super::schema::Collection;
use crate::exec::{Error, Executor, Statement};
use crate::sql::{render, Fragment};

const COUNT_PUBLISHED_ARM: &str = include_str!("../sql/sitemap/count_published_arm.sql");
const ENTRIES_PAGE: &str = include_str!("../sql/sitemap/entries_page.sql");
const PAGE_IMAGES: &str = include_str!("../sql/sitemap/page_images.sql");

#[derive(Debug, Clone, Deserialize)]
pub struct PublishedCount {
    pub collection: String,
    pub n: i64,
}

/// Published, non-trashed entries per collection, in one statement (a `UNION ALL` of one small
/// query per collection; ~120 bytes each, far below the statement size limit for any registry
/// that fits D1's column and table limits).
pub async fn published_counts<E: Executor>(exec: &E, collections: &[Collection]) -> Result<Vec<PublishedCount>, Error> {
    if collections.is_empty() {
        return Ok(Vec::new());
    }
    let arms: Vec<String> = collections
        .iter()
        .map(|c| render(COUNT_PUBLISHED_ARM, &[("name", &Fragment::literal(&c.slug)), ("table", &c.table())]))
        .collect();
    exec.query(Statement::new(arms.join("\nUNION ALL\n"))).await
}

#[derive(Debug, Clone, Deserialize)]
pub struct SitemapEntry {
    pub id: String,
    pub slug: Option<String>,
    pub locale: String,
    pub updated_at: String,
}

/// One page of published, non-trashed entries, by id.
pub async fn entries<E: Executor>(
    exec: &E,
    c: &Collection,
    limit: u32,
    offset: u64,
) -> Result<Vec<SitemapEntry>, Error> {
    let sql = render(ENTRIES_PAGE, &[("table", &c.table())]);
    exec.query(Statement::new(sql).bind(i64::from(limit)).bind(offset as i64)).await
}

#[derive(Debug, Clone, Deserialize)]
pub struct EntryImage {
    pub content_id: String,
    pub storage_key: String,
}

/// The local images the live (`columns`) projections of that page of entries use.
pub async fn images<E: Executor>(exec: &E, c: &Collection, limit: u32, offset: u64) -> Result<Vec<EntryImage>, Error> {
    let sql = render(PAGE_IMAGES, &[("table", &c.table())]);
    exec.query(Statement::new(sql).bind(c.id.as_str()).bind(i64::from(limit)).bind(offset as i64)).await
}
