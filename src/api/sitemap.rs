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

/// The index: one sitemap file per 50,000 published entries of every collection that has any.
pub async fn index<E: Executor>(ctx: &Ctx<'_, E>) -> Result<Response, ApiError> {
    let site = site_url(ctx)?;
    let collections = schema::load(ctx.exec, None).await?;
    let counts = repo::published_counts(ctx.exec, &collections).await?;
    let mut files = Vec::new();
    // A collection with nothing published has no page.
    for c in &counts {
        let pages = u64::try_from(c.n).unwrap_or(0).div_ceil(u64::from(MAX_URLS_PER_FILE)) as u32;
        for page in 1..=pages {
            files.push(format!("{}/{}", site.trim_end_matches('/'), file_name(&c.collection, page)));
        }
    }
    Ok(xml(index_xml(&files)))
}

/// One sitemap file of a collection. An unknown collection, a collection with nothing
/// published and a page past the last all answer the same 404; a page number past
/// [`MAX_PAGE`] is refused before any query, and any other before the page is read.
pub async fn collection<E: Executor>(ctx: &Ctx<'_, E>, param: &str, req: &Request) -> Result<Response, ApiError> {
    let site = site_url(ctx)?;
    let not_found = || ApiError::not_found("No such sitemap");
    let (slug, page) = parse_file_param(param).filter(|(_, page)| *page <= MAX_PAGE).ok_or_else(not_found)?;
    let slug = Ident::parse(slug).map_err(|_| not_found())?;
    let c = schema::find(ctx.exec, &slug).await?.ok_or_else(not_found)?;
    let published = repo::published_counts(ctx.exec, std::slice::from_ref(&c)).await?;
    let n = published.first().map_or(0, |p| u64::try_from(p.n).unwrap_or(0));
    let offset = u64::from(page - 1) * u64::from(MAX_URLS_PER_FILE);
    if offset >= n {
        return Err(not_found());
    }
    let (entries, found) = repo::page(ctx.exec, &c, MAX_URLS_PER_FILE, offset).await?;
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
