//! `/sitemap.xml` and `/sitemap-{collection}.xml`: public image sitemaps (`SITE_URL`, and
//! `MEDIA_PUBLIC_URL` or, without it, the file route of uploaded media).

use std::collections::HashMap;

use super::error::ApiError;
use super::{Ctx, Request, Response, BASE_PATH};
use crate::exec::Executor;
use crate::model::ident::Ident;
use crate::repo::{schema, sitemap as repo};
use crate::usage::sitemap::{
    entry_url, file_name, image_url, index_xml, parse_file_param, urlset_xml, UrlEntry, MAX_PAGE, MAX_URLS_PER_FILE,
};

fn site_url<E>(ctx: &Ctx<'_, E>) -> Result<String, ApiError> {
    ctx.config.site_url.clone().ok_or_else(|| ApiError::not_found("Sitemaps are not configured (SITE_URL is unset)"))
}

fn xml(body: String) -> Response {
    Response { no_store: false, ..Response::raw(200, "application/xml; charset=utf-8", body) }
}

/// How long a shared cache may keep a sitemap's 404 (an unknown collection, a page without
/// published entries): briefly, so a new collection or entry shows up soon, but repeated
/// requests for what does not exist do not reach the database each time.
pub const NOT_FOUND_CACHE_CONTROL: &str = "public, max-age=60";

/// The one 404 of a canonical sitemap URL that names nothing: the same body whatever the
/// reason, cacheable by shared caches for [`NOT_FOUND_CACHE_CONTROL`].
fn cached_not_found() -> Response {
    let mut r = Response::error(&ApiError::not_found("No such sitemap"));
    r.no_store = false;
    r.headers.push(("cache-control", NOT_FOUND_CACHE_CONTROL.to_owned()));
    r
}

/// The path of `/sitemap.xml`, the index.
pub const INDEX_PATH: &str = "/sitemap.xml";

/// Whether `path` is the one canonical URL of a sitemap: `/sitemap.xml`, `/sitemap-<c>.xml` or
/// `/sitemap-<c>-<n>.xml` with a collection slug and a page number from 2 to [`MAX_PAGE`]
/// without leading zeros, exactly as the index lists it (no trailing slash, no
/// percent-encoding). Only these are read from the database and cached.
pub fn is_canonical(path: &str) -> bool {
    path == INDEX_PATH || canonical_page(path).is_some()
}

/// The collection and page a canonical page path names.
fn canonical_page(path: &str) -> Option<(Ident, u32)> {
    let param = path.strip_prefix("/sitemap-")?.strip_suffix(".xml")?;
    let (slug, page) = parse_file_param(param).filter(|(_, page)| *page <= MAX_PAGE)?;
    let slug = Ident::parse(slug).ok()?;
    (path == format!("/{}", file_name(slug.as_str(), page))).then_some((slug, page))
}

/// The index: the sitemap pages of every collection that hold a published entry. Each
/// collection's pages are found by one index seek per page (no count of its entries).
pub async fn index<E: Executor>(ctx: &Ctx<'_, E>, req: &Request) -> Result<Response, ApiError> {
    let site = site_url(ctx)?;
    if req.path != INDEX_PATH {
        return Err(ApiError::not_found("No such sitemap"));
    }
    let collections = schema::load(ctx.exec, None).await?;
    let pages = repo::published_pages(ctx.exec, &collections, MAX_URLS_PER_FILE, MAX_PAGE).await?;
    let files: Vec<String> = pages
        .iter()
        .filter_map(|p| u32::try_from(p.page).ok().map(|page| (p, page)))
        .map(|(p, page)| format!("{}/{}", site.trim_end_matches('/'), file_name(&p.collection, page)))
        .collect();
    Ok(xml(index_xml(&files)))
}

/// One sitemap page of a collection: its published entries with rowids in page `n`'s range
/// (`((n-1)·50,000, n·50,000]`), read by keyset over the published index. A non-canonical URL
/// is a 404 before any query; an unknown collection, a collection with nothing published and a
/// page without published entries all answer the same cacheable 404.
pub async fn collection<E: Executor>(ctx: &Ctx<'_, E>, req: &Request) -> Result<Response, ApiError> {
    let site = site_url(ctx)?;
    let (slug, page) = canonical_page(&req.path).ok_or_else(|| ApiError::not_found("No such sitemap"))?;
    let Some(c) = schema::find(ctx.exec, &slug).await? else {
        return Ok(cached_not_found());
    };
    let span = i64::from(MAX_URLS_PER_FILE);
    let (entries, found) = repo::page(ctx.exec, &c, i64::from(page - 1) * span, i64::from(page) * span).await?;
    if entries.is_empty() {
        return Ok(cached_not_found());
    }
    // Images are at `MEDIA_PUBLIC_URL`; without it, uploaded ones at this worker's file route
    // (media registered by JSON is stored elsewhere, so it is left out).
    let (base, uploaded_only) = match (&ctx.config.media_public_url, ctx.storage, &req.origin) {
        (Some(public), _, _) => (Some(public.clone()), false),
        (None, Some(_), Some(origin)) => (Some(format!("{origin}{BASE_PATH}/media/file")), true),
        _ => (None, false),
    };
    let mut images: HashMap<String, Vec<String>> = HashMap::new();
    for img in found.into_iter().filter(|i| !uploaded_only || i.uploaded != 0) {
        if let Some(url) = base.as_deref().and_then(|b| image_url(b, &img.storage_key)) {
            images.entry(img.content_id).or_default().push(url);
        }
    }
    let urls: Vec<UrlEntry> = entries
        .iter()
        .map(|e| UrlEntry {
            loc: entry_url(&site, c.slug.as_str(), &e.locale, e.slug.as_deref().unwrap_or(&e.id), &e.id),
            lastmod: Some(e.updated_at.clone()),
            images: images.remove(&e.id).unwrap_or_default(),
        })
        .collect();
    Ok(xml(urlset_xml(&urls)))
}
