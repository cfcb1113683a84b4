//! Reads for the image sitemaps: the pages that hold published entries, a page of entries, and
//! the local images their live projections use.

use serde::Deserialize;

use crate::exec::{Error, Executor, Statement, MAX_COMPOUND_SELECT};
use crate::model::collection::Collection;
use crate::sql::{render, Fragment};

const PAGES_ARM: &str = include_str!("../sql/sitemap/pages_arm.sql");
const ENTRIES_PAGE: &str = include_str!("../sql/sitemap/entries_page.sql");
const PAGE_IMAGES: &str = include_str!("../sql/sitemap/page_images.sql");

/// A sitemap page that holds at least one published entry.
#[derive(Debug, Clone, Deserialize)]
pub struct PublishedPage {
    pub collection: String,
    pub page: i64,
}

/// Arms per `UNION ALL` statement: D1 allows only a few terms in a compound select
/// ([`MAX_COMPOUND_SELECT`]), so a site with many collections reads its sitemap index in several
/// statements of one batch.
const ARMS_PER_STATEMENT: usize = MAX_COMPOUND_SELECT as usize;

/// The pages (rowid ranges of `span` rowids, at most `max_page`) of each collection that hold a
/// published, non-trashed entry, in collection order then page order: one arm per collection,
/// joined by `UNION ALL` into as few statements as the limits allow, run as one batch. Each page
/// listed costs one index seek; nothing is counted.
pub async fn published_pages<E: Executor>(
    exec: &E,
    collections: &[Collection],
    span: u32,
    max_page: u32,
) -> Result<Vec<PublishedPage>, Error> {
    let stmts: Vec<Statement> = collections
        .chunks(ARMS_PER_STATEMENT)
        .map(|chunk| {
            let arms: Vec<String> = chunk
                .iter()
                .map(|c| {
                    render(
                        PAGES_ARM,
                        &[("name", &Fragment::literal(&c.slug)), ("table", &Fragment::content_table(&c.slug))],
                    )
                })
                .collect();
            Statement::new(arms.join("\nUNION ALL\n")).bind(i64::from(span)).bind(i64::from(max_page))
        })
        .collect();
    if stmts.is_empty() {
        return Ok(Vec::new());
    }
    let mut out = Vec::new();
    for outcome in exec.batch(stmts).await? {
        out.extend(outcome.decode::<PublishedPage>()?);
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

/// The published, non-trashed entries whose rowid is in `(after, through]` (in rowid order) and
/// the local images their live (`columns`) projections use, read in one batch so both come from
/// the same snapshot. Keyset by rowid over the published index: nothing outside the range is read.
pub async fn page<E: Executor>(
    exec: &E,
    c: &Collection,
    after: i64,
    through: i64,
) -> Result<(Vec<SitemapEntry>, Vec<EntryImage>), Error> {
    let entries =
        Statement::new(render(ENTRIES_PAGE, &[("table", &Fragment::content_table(&c.slug))])).bind(after).bind(through);
    let images = Statement::new(render(PAGE_IMAGES, &[("table", &Fragment::content_table(&c.slug))]))
        .bind(c.id.as_str())
        .bind(after)
        .bind(through);
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
