//! The operator console: one page (HTML, its script, style sheet and icon, embedded in the
//! worker) served at [`PATH`]. It is a client of the documented JSON API with the operator's
//! token and has no privileges of its own: serving it reads no database and needs no token.
//!
//! Every file is sent with a strict `Content-Security-Policy` (scripts, styles and API calls from
//! this origin only, images from it, from the origin media is served at, if another, and from
//! the page's own `blob:` URLs (the preview of a file chosen to replace an item's); no
//! inline script or style; no frames, forms or base URL), `X-Content-Type-Options: nosniff` and
//! `Referrer-Policy: no-referrer`.
//!
//! This module answers in plain data ([`Answer`]) and names nothing of the `api` module (which
//! routes to it): `api::console` turns an answer into a response.

/// Where the console lives; its files are under it.
pub const PATH: &str = "/_emdash/admin/media-usage";

/// The policy every console file is sent with when media is served from this origin.
pub const CONTENT_SECURITY_POLICY: &str = "default-src 'none'; script-src 'self'; style-src 'self'; \
     img-src 'self' blob:; connect-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'";

/// The policy for a deployment whose media is served at `media_origin` (the origin of
/// `MEDIA_PUBLIC_URL`: scheme, host and port, as [`media_origin`] finds it): the media library's
/// thumbnails may load from there too, and nothing else changes.
pub fn content_security_policy(media_origin: Option<&str>) -> String {
    match media_origin {
        None => CONTENT_SECURITY_POLICY.to_owned(),
        Some(origin) => {
            CONTENT_SECURITY_POLICY.replacen("img-src 'self' blob:;", &format!("img-src 'self' blob: {origin};"), 1)
        }
    }
}

/// The origin of `public_url` (`https://cdn.example.com` of `https://cdn.example.com/media/`),
/// when it is an absolute `http`/`https` URL of another host; `None` for a path on this origin
/// or anything unparsable (thumbnails then load from this origin or not at all). The origin is
/// built from the parsed URL, so nothing else of the setting (a path, a `;`, a space) can reach
/// the policy.
pub fn media_origin(public_url: &str) -> Option<String> {
    let url = url::Url::parse(public_url.trim()).ok()?;
    if !matches!(url.scheme(), "http" | "https") {
        return None;
    }
    let origin = url.origin().ascii_serialization();
    let plain = origin.bytes().all(|b| b.is_ascii_alphanumeric() || b".-:/[]".contains(&b));
    plain.then_some(origin)
}

/// The headers every answer of the console carries (its files, and its refusals), for media
/// served at `media_origin`.
pub fn headers(media_origin: Option<&str>) -> [(&'static str, String); 3] {
    [
        ("content-security-policy", content_security_policy(media_origin)),
        ("x-content-type-options", "nosniff".to_owned()),
        ("referrer-policy", "no-referrer".to_owned()),
    ]
}

const FILES: &[(&str, &str, &str)] = &[
    ("", "text/html; charset=utf-8", include_str!("index.html")),
    ("/console.js", "text/javascript; charset=utf-8", include_str!("console.js")),
    ("/console.css", "text/css; charset=utf-8", include_str!("console.css")),
    ("/icon.svg", "image/svg+xml", include_str!("icon.svg")),
];

/// The console's answer to a request for one of its paths, as plain data (the API makes it a
/// response, with [`headers`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Answer {
    /// A file, 200: its content type and body (empty for `HEAD`).
    File { content_type: &'static str, body: &'static str },
    /// No console file has this path: 404.
    NotFound,
    /// A method other than `GET` or `HEAD`: 405 with `Allow: GET, HEAD`.
    MethodNotAllowed,
}

/// The console's answer to a request of `method` for `path` (`None` for a path not under
/// [`PATH`]): the file for `GET` (its headers alone for `HEAD`), a refusal for another method,
/// or for an unknown file under it.
pub fn serve(method: &str, path: &str) -> Option<Answer> {
    let rest = path.strip_prefix(PATH)?;
    if !rest.is_empty() && !rest.starts_with('/') {
        return None;
    }
    let rest = if rest == "/" { "" } else { rest };
    Some(match FILES.iter().find(|(name, _, _)| *name == rest) {
        None => Answer::NotFound,
        Some(_) if !matches!(method, "GET" | "HEAD") => Answer::MethodNotAllowed,
        Some((_, content_type, body)) => Answer::File { content_type, body: if method == "HEAD" { "" } else { body } },
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn serves_the_page_and_its_files_with_their_types() {
        for (path, ty) in [
            ("/_emdash/admin/media-usage", "text/html; charset=utf-8"),
            ("/_emdash/admin/media-usage/", "text/html; charset=utf-8"),
            ("/_emdash/admin/media-usage/console.js", "text/javascript; charset=utf-8"),
            ("/_emdash/admin/media-usage/console.css", "text/css; charset=utf-8"),
            ("/_emdash/admin/media-usage/icon.svg", "image/svg+xml"),
        ] {
            let Some(Answer::File { content_type, body }) = serve("GET", path) else { panic!("{path}") };
            assert_eq!(content_type, ty, "{path}");
            assert!(!body.is_empty());
        }
    }

    #[test]
    fn other_paths_are_not_the_consoles_and_unknown_files_or_methods_are_refused() {
        assert_eq!(serve("GET", "/_emdash/admin/media-usagex"), None);
        assert_eq!(serve("GET", "/_emdash/api/admin/media-usage/status"), None);
        assert_eq!(serve("GET", "/_emdash/admin/media-usage/nope.js"), Some(Answer::NotFound));
        assert_eq!(serve("POST", PATH), Some(Answer::MethodNotAllowed));
        assert_eq!(serve("HEAD", PATH), Some(Answer::File { content_type: "text/html; charset=utf-8", body: "" }));
    }

    #[test]
    fn the_policy_allows_nothing_inline_or_foreign() {
        for needle in ["'unsafe-inline'", "'unsafe-eval'", "http:", "https:", "*", "data:"] {
            assert!(!CONTENT_SECURITY_POLICY.contains(needle), "{needle}");
        }
        assert!(CONTENT_SECURITY_POLICY.contains("frame-ancestors 'none'"));
        // The page loads its script and style from files, never inline.
        let html = include_str!("index.html");
        assert!(!html.contains("<script>") && !html.contains("<style") && !html.contains(" style="));
        assert!(!html.contains("http://") && !html.contains("https://"));
    }

    #[test]
    fn images_may_come_from_exactly_the_origin_media_is_served_at() {
        assert_eq!(content_security_policy(None), CONTENT_SECURITY_POLICY);
        let origin = media_origin("https://cdn.example.com/media/").unwrap();
        assert_eq!(origin, "https://cdn.example.com");
        let policy = content_security_policy(Some(&origin));
        assert!(policy.contains("; img-src 'self' blob: https://cdn.example.com; connect-src 'self';"), "{policy}");
        assert_eq!(policy.replace(" https://cdn.example.com", ""), CONTENT_SECURITY_POLICY);
        assert_eq!(media_origin("http://localhost:8788/files").as_deref(), Some("http://localhost:8788"));
        assert_eq!(media_origin("https://CDN.Example.com:443/x").as_deref(), Some("https://cdn.example.com"));
        assert_eq!(media_origin("https://xn--bcher-kva.example/a").as_deref(), Some("https://xn--bcher-kva.example"));
        assert_eq!(media_origin("https://bücher.example/a").as_deref(), Some("https://xn--bcher-kva.example"));
        // Not another origin, or nothing a policy may name: the policy stays as it is.
        for setting in [
            "/media",
            "",
            "cdn.example.com/media",
            "data:image/png;base64,AA",
            "javascript:alert(1)",
            "ftp://cdn.example.com/",
        ] {
            assert_eq!(media_origin(setting), None, "{setting}");
        }
        for hostile in [
            "https://a.example; script-src *",
            "https://a.example;script-src/",
            "https://a b.example/",
            "https://*.example/",
        ] {
            assert_eq!(media_origin(hostile), None, "{hostile}");
        }
    }
}
