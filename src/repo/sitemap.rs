//! Reads for the image sitemaps: published entry counts, a page of entries, and the local
//! images their live projections use.

use serde::Deserialize;

use crate::exec::{Error, Executor, Statement};
use crate::model::collection::Collection;
use crate::sql::{render, Fragment};

const COUNT_PUBLISHED_ARM: &str = include_str!("../sql/sitemap/count_published_arm.sql");
const ENTRIES_PAGE: &str = include_str!("../sql/sitemap/entries_page.sql");
const PAGE_IMAGES: &str = include_str!("../sql/sitemap/page_images.sql");

#[derive(Debug, Clone, Deserialize)]
pub struct PublishedCount {
    pub collection: String,
    pub n: i64,
}

/// Arms per `UNION ALL` statement: SQLite allows 500 terms in a compound select, and 400 arms
/// of ~120 bytes stay far below D1's 100 KB statement limit.
const ARMS_PER_STATEMENT: usize = 400;

/// Published, non-trashed entries per collection: one small count per collection, joined by
/// `UNION ALL` into as few statements as the limits allow, run as one batch.
pub async fn published_counts<E: Executor>(exec: &E, collections: &[Collection]) -> Result<Vec<PublishedCount>, Error> {
    let stmts: Vec<Statement> = collections
        .chunks(ARMS_PER_STATEMENT)
        .map(|chunk| {
            let arms: Vec<String> = chunk
                .iter()
                .map(|c| {
                    render(
                        COUNT_PUBLISHED_ARM,
                        &[("name", &Fragment::literal(&c.slug)), ("table", &Fragment::content_table(&c.slug))],
                    )
                })
                .collect();
            Statement::new(arms.join("\nUNION ALL\n"))
        })
        .collect();
    if stmts.is_empty() {
        return Ok(Vec::new());
    }
    let mut out = Vec::new();
    for outcome in exec.batch(stmts).await? {
        out.extend(outcome.decode::<PublishedCount>()?);
    }
    Ok(out)
}

#[derive(Debug, Clone, Deserialize)]
pub struct SitemapEntry {
    pub id: String,
    pub slug: Option<String>,
    pub locale: String,
    pub updated_at: String,
}

/// One page of published, non-trashed entries (by id) and the local images their live
/// (`columns`) projections use, read in one batch so both come from the same snapshot.
pub async fn page<E: Executor>(
    exec: &E,
    c: &Collection,
    limit: u32,
    offset: u64,
) -> Result<(Vec<SitemapEntry>, Vec<EntryImage>), Error> {
    let entries = Statement::new(render(ENTRIES_PAGE, &[("table", &Fragment::content_table(&c.slug))]))
        .bind(i64::from(limit))
        .bind(offset as i64);
    let images = Statement::new(render(PAGE_IMAGES, &[("table", &Fragment::content_table(&c.slug))]))
        .bind(c.id.as_str())
        .bind(i64::from(limit))
        .bind(offset as i64);
    let outcomes = exec.batch(vec![entries, images]).await?;
    let entries = outcomes.first().map(|o| o.decode()).transpose()?.unwrap_or_default();
    let images = outcomes.get(1).map(|o| o.decode()).transpose()?.unwrap_or_default();
    Ok((entries, images))
}

#[derive(Debug, Clone, Deserialize)]
pub struct EntryImage {
    pub content_id: String,
    pub storage_key: String,
    /// 1 when the media was uploaded (its bytes are in the media bucket), else 0.
    pub uploaded: i64,
}
