//! Image sitemaps built from the usage index (Google's image sitemap extension): an index of
//! per-collection sitemaps, and pages listing each published, non-trashed entry's URL with the
//! local images its live content uses. Pure: rows in, XML out.

use std::io::Cursor;

use quick_xml::events::{BytesDecl, BytesEnd, BytesStart, BytesText, Event};
use quick_xml::Writer;

/// Sitemap protocol limits.
pub const MAX_URLS_PER_FILE: u32 = 50_000;
pub const MAX_IMAGES_PER_URL: usize = 1_000;

const SITEMAP_NS: &str = "http://www.sitemaps.org/schemas/sitemap/0.9";
const IMAGE_NS: &str = "http://www.google.com/schemas/sitemap-image/1.1";

/// Percent-encodes everything but RFC 3986 unreserved characters.
pub fn encode_segment(raw: &str) -> String {
    let mut out = String::with_capacity(raw.len());
    for b in raw.bytes() {
        if b.is_ascii_alphanumeric() || matches!(b, b'-' | b'.' | b'_' | b'~') {
            out.push(char::from(b));
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}

/// Whether a path segment would move a URL instead of naming something in it: empty, `.` or
/// `..` (percent-encoding does not help: URL normalisation decodes `%2E` back to `.`).
fn is_dot_or_empty(segment: &str) -> bool {
    matches!(segment, "" | "." | "..")
}

/// `MEDIA_PUBLIC_URL` (trailing `/` trimmed) + `/` + the storage key (leading `/` trimmed), each
/// path segment percent-encoded; `None` for a key with an empty, `.` or `..` segment, whose URL
/// could leave `MEDIA_PUBLIC_URL`.
pub fn image_url(media_public_url: &str, storage_key: &str) -> Option<String> {
    let segments: Vec<&str> = storage_key.trim_start_matches('/').split('/').collect();
    if segments.iter().any(|s| is_dot_or_empty(s)) {
        return None;
    }
    let key: Vec<String> = segments.into_iter().map(encode_segment).collect();
    Some(format!("{}/{}", media_public_url.trim_end_matches('/'), key.join("/")))
}

/// An entry's public URL: `SITE_URL/<collection>/<slug>`, prefixed by the locale for entries
/// not in the default locale `en`. A slug that is a dot segment (`.`, `..`) would move the URL
/// out of the collection's path, so the entry's id (hex) stands in for it.
pub fn entry_url(site_url: &str, collection: &str, locale: &str, slug: &str, id: &str) -> String {
    let base = site_url.trim_end_matches('/');
    let slug = if is_dot_or_empty(slug) { id } else { slug };
    if locale == "en" {
        format!("{base}/{}/{}", encode_segment(collection), encode_segment(slug))
    } else {
        format!("{base}/{}/{}/{}", encode_segment(locale), encode_segment(collection), encode_segment(slug))
    }
}

/// The highest sitemap page number served (50,000 entries each: 500 million entries); anything
/// above is a 404 without a query.
pub const MAX_PAGE: u32 = 10_000;

/// The name of a collection's sitemap file `page` (1-based).
pub fn file_name(collection: &str, page: u32) -> String {
    if page <= 1 {
        format!("sitemap-{collection}.xml")
    } else {
        format!("sitemap-{collection}-{page}.xml")
    }
}

/// Splits `posts` / `posts-3` (the `{collection}` of `/sitemap-{collection}.xml`) into the
/// collection slug and the page number.
pub fn parse_file_param(param: &str) -> Option<(&str, u32)> {
    match param.rsplit_once('-') {
        Some((slug, n)) if !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit()) => {
            let page: u32 = n.parse().ok().filter(|p| *p >= 2)?;
            Some((slug, page))
        }
        _ => Some((param, 1)),
    }
}

/// One URL of a sitemap page.
#[derive(Debug, Clone, PartialEq)]
pub struct UrlEntry {
    pub loc: String,
    pub lastmod: Option<String>,
    pub images: Vec<String>,
}

fn writer() -> Writer<Cursor<Vec<u8>>> {
    let mut w = Writer::new_with_indent(Cursor::new(Vec::new()), b' ', 2);
    // Writing to memory cannot fail.
    let _ = w.write_event(Event::Decl(BytesDecl::new("1.0", Some("UTF-8"), None)));
    w
}

fn text_element(w: &mut Writer<Cursor<Vec<u8>>>, name: &str, text: &str) {
    let _ = w.write_event(Event::Start(BytesStart::new(name)));
    let _ = w.write_event(Event::Text(BytesText::new(text)));
    let _ = w.write_event(Event::End(BytesEnd::new(name)));
}

fn finish(w: Writer<Cursor<Vec<u8>>>) -> String {
    String::from_utf8(w.into_inner().into_inner()).unwrap_or_default()
}

/// A sitemap index listing the given sitemap file URLs.
pub fn index_xml(files: &[String]) -> String {
    let mut w = writer();
    let _ = w.write_event(Event::Start(BytesStart::new("sitemapindex").with_attributes([("xmlns", SITEMAP_NS)])));
    for loc in files {
        let _ = w.write_event(Event::Start(BytesStart::new("sitemap")));
        text_element(&mut w, "loc", loc);
        let _ = w.write_event(Event::End(BytesEnd::new("sitemap")));
    }
    let _ = w.write_event(Event::End(BytesEnd::new("sitemapindex")));
    finish(w)
}

/// A sitemap page: each URL with its images (at most 1,000, duplicates removed).
pub fn urlset_xml(urls: &[UrlEntry]) -> String {
    let mut w = writer();
    let root = BytesStart::new("urlset").with_attributes([("xmlns", SITEMAP_NS), ("xmlns:image", IMAGE_NS)]);
    let _ = w.write_event(Event::Start(root));
    for u in urls {
        let _ = w.write_event(Event::Start(BytesStart::new("url")));
        text_element(&mut w, "loc", &u.loc);
        if let Some(lastmod) = &u.lastmod {
            text_element(&mut w, "lastmod", lastmod);
        }
        let mut seen: Vec<&str> = Vec::new();
        for img in &u.images {
            if seen.len() >= MAX_IMAGES_PER_URL {
                break;
            }
            if seen.contains(&img.as_str()) {
                continue;
            }
            seen.push(img);
            let _ = w.write_event(Event::Start(BytesStart::new("image:image")));
            text_element(&mut w, "image:loc", img);
            let _ = w.write_event(Event::End(BytesEnd::new("image:image")));
        }
        let _ = w.write_event(Event::End(BytesEnd::new("url")));
    }
    let _ = w.write_event(Event::End(BytesEnd::new("urlset")));
    finish(w)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn urls_are_percent_encoded_per_segment() {
        assert_eq!(
            image_url("https://cdn.example/", "/uploads/a b/ü.jpg").as_deref(),
            Some("https://cdn.example/uploads/a%20b/%C3%BC.jpg")
        );
        assert_eq!(image_url("https://cdn.example", "x~y_z-1.png").as_deref(), Some("https://cdn.example/x~y_z-1.png"));
        assert_eq!(
            image_url("https://cdn.example", "a..b/c.d.jpg").as_deref(),
            Some("https://cdn.example/a..b/c.d.jpg")
        );
        assert_eq!(entry_url("https://site/", "posts", "en", "hello world", "e1"), "https://site/posts/hello%20world");
        assert_eq!(entry_url("https://site", "posts", "de-AT", "a/b", "e1"), "https://site/de-AT/posts/a%2Fb");
    }

    #[test]
    fn dot_segments_cannot_leave_the_configured_origins() {
        for key in ["../secret.jpg", "a/../../b.jpg", "./a.jpg", "a//b.jpg", "a/.", ".."] {
            assert_eq!(image_url("https://cdn.example/media", key), None, "{key}");
        }
        assert_eq!(entry_url("https://site", "posts", "en", "..", "e1"), "https://site/posts/e1");
        assert_eq!(entry_url("https://site", "posts", "de", ".", "e1"), "https://site/de/posts/e1");
        assert_eq!(entry_url("https://site", "posts", "en", "../x", "e1"), "https://site/posts/..%2Fx");
    }

    #[test]
    fn file_names_round_trip() {
        assert_eq!(file_name("posts", 1), "sitemap-posts.xml");
        assert_eq!(file_name("posts", 3), "sitemap-posts-3.xml");
        assert_eq!(parse_file_param("posts"), Some(("posts", 1)));
        assert_eq!(parse_file_param("posts-3"), Some(("posts", 3)));
        assert_eq!(parse_file_param("posts-1"), None);
        assert_eq!(parse_file_param("posts-"), Some(("posts-", 1)));
    }

    #[test]
    fn xml_is_escaped_and_images_capped() {
        let images: Vec<String> = (0..1_005).map(|i| format!("https://cdn/{i}.jpg")).collect();
        let xml = urlset_xml(&[UrlEntry { loc: "https://site/a?x=1&y=2".into(), lastmod: None, images }]);
        assert!(xml.contains("<loc>https://site/a?x=1&amp;y=2</loc>"));
        assert_eq!(xml.matches("<image:image>").count(), 1_000);
        assert!(xml.contains(r#"xmlns:image="http://www.google.com/schemas/sitemap-image/1.1""#));
        let idx = index_xml(&["https://site/sitemap-posts.xml".into()]);
        assert!(idx.contains("<sitemap>") && idx.contains("<loc>https://site/sitemap-posts.xml</loc>"));
    }
}
