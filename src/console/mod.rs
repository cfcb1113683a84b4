//! The operator console: one page (HTML, its script, style sheet and icon, embedded in the
//! worker) served at [`PATH`]. It is a client of the documented JSON API with the operator's
//! token and has no privileges of its own: serving it reads no database and needs no token.
//!
//! Every file is sent with a strict `Content-Security-Policy` (scripts, styles, images and API
//! calls from this origin only; no inline script or style; no frames, forms or base URL),
//! `X-Content-Type-Options: nosniff` and `Referrer-Policy: no-referrer`.
//!
//! This module answers in plain data ([`Answer`]) and names nothing of the `api` module (which
//! routes to it): `api::console` turns an answer into a response.

/// Where the console lives; its files are under it.
pub const PATH: &str = "/_emdash/admin/media-usage";

/// The policy every console file is sent with.
pub const CONTENT_SECURITY_POLICY: &str = "default-src 'none'; script-src 'self'; style-src 'self'; \
     img-src 'self'; connect-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'";

/// The headers every answer of the console carries (its files, and its refusals).
pub const HEADERS: [(&str, &str); 3] = [
    ("content-security-policy", CONTENT_SECURITY_POLICY),
    ("x-content-type-options", "nosniff"),
    ("referrer-policy", "no-referrer"),
];

const FILES: &[(&str, &str, &str)] = &[
    ("", "text/html; charset=utf-8", include_str!("index.html")),
    ("/console.js", "text/javascript; charset=utf-8", include_str!("console.js")),
    ("/console.css", "text/css; charset=utf-8", include_str!("console.css")),
    ("/icon.svg", "image/svg+xml", include_str!("icon.svg")),
];

/// The console's answer to a request for one of its paths, as plain data (the API makes it a
/// response, with [`HEADERS`]).
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
}
