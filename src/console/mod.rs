//! The operator console: one page (HTML, its script, style sheet and icon, embedded in the
//! worker) served at [`PATH`]. It is a client of the documented JSON API with the operator's
//! token and has no privileges of its own: serving it reads no database and needs no token.
//!
//! Every file is sent with a strict `Content-Security-Policy` (scripts, styles, images and API
//! calls from this origin only; no inline script or style; no frames, forms or base URL),
//! `X-Content-Type-Options: nosniff` and `Referrer-Policy: no-referrer`.

use crate::api::error::ApiError;
use crate::api::{Request, Response};

/// Where the console lives; its files are under it.
pub const PATH: &str = "/_emdash/admin/media-usage";

/// The policy every console file is sent with.
pub const CONTENT_SECURITY_POLICY: &str = "default-src 'none'; script-src 'self'; style-src 'self'; \
     img-src 'self'; connect-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'";

const FILES: &[(&str, &str, &str)] = &[
    ("", "text/html; charset=utf-8", include_str!("index.html")),
    ("/console.js", "text/javascript; charset=utf-8", include_str!("console.js")),
    ("/console.css", "text/css; charset=utf-8", include_str!("console.css")),
    ("/icon.svg", "image/svg+xml", include_str!("icon.svg")),
];

/// The console's answer to a request for one of its paths (`None` for any other path): the file
/// for `GET` (its headers alone for `HEAD`), 405 with `Allow: GET, HEAD` for another method, 404
/// for an unknown file under it.
pub fn serve(req: &Request) -> Option<Response> {
    let rest = req.path.strip_prefix(PATH)?;
    if !rest.is_empty() && !rest.starts_with('/') {
        return None;
    }
    let rest = if rest == "/" { "" } else { rest };
    let mut response = match FILES.iter().find(|(name, _, _)| *name == rest) {
        None => Response::error(&ApiError::not_found(format!("No console file at {}", req.path))),
        Some(_) if !matches!(req.method.as_str(), "GET" | "HEAD") => {
            let mut e = ApiError::new(405, "METHOD_NOT_ALLOWED", "The console is only read: use GET");
            e.allow = Some("GET, HEAD".into());
            Response::error(&e)
        }
        Some((_, content_type, body)) => {
            Response::raw(200, content_type, if req.method == "HEAD" { String::new() } else { (*body).to_owned() })
        }
    };
    response.headers.extend([
        ("content-security-policy", CONTENT_SECURITY_POLICY.to_owned()),
        ("x-content-type-options", "nosniff".to_owned()),
        ("referrer-policy", "no-referrer".to_owned()),
    ]);
    Some(response)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn get(path: &str) -> Option<Response> {
        serve(&Request { method: "GET".into(), path: path.into(), ..Default::default() })
    }

    #[test]
    fn serves_the_page_and_its_files_with_their_types_and_headers() {
        for (path, ty) in [
            ("/_emdash/admin/media-usage", "text/html; charset=utf-8"),
            ("/_emdash/admin/media-usage/", "text/html; charset=utf-8"),
            ("/_emdash/admin/media-usage/console.js", "text/javascript; charset=utf-8"),
            ("/_emdash/admin/media-usage/console.css", "text/css; charset=utf-8"),
            ("/_emdash/admin/media-usage/icon.svg", "image/svg+xml"),
        ] {
            let r = get(path).unwrap();
            assert_eq!((r.status, r.content_type), (200, ty), "{path}");
            assert!(!r.body.is_empty());
            let header = |n: &str| r.headers.iter().find(|(k, _)| *k == n).map(|(_, v)| v.as_str());
            assert_eq!(header("content-security-policy"), Some(CONTENT_SECURITY_POLICY));
            assert_eq!(header("x-content-type-options"), Some("nosniff"));
            assert!(r.no_store && !r.expose_cost);
        }
    }

    #[test]
    fn other_paths_are_not_the_consoles_and_unknown_files_or_methods_are_refused() {
        assert!(get("/_emdash/admin/media-usagex").is_none());
        assert!(get("/_emdash/api/admin/media-usage/status").is_none());
        assert_eq!(get("/_emdash/admin/media-usage/nope.js").unwrap().status, 404);
        let r = serve(&Request { method: "POST".into(), path: PATH.into(), ..Default::default() }).unwrap();
        assert_eq!(r.status, 405);
        assert!(r.headers.contains(&("allow", "GET, HEAD".to_owned())));
        let head = serve(&Request { method: "HEAD".into(), path: PATH.into(), ..Default::default() }).unwrap();
        assert_eq!((head.status, head.content_type, head.body.as_str()), (200, "text/html; charset=utf-8", ""));
        assert!(head.headers.iter().any(|(k, _)| *k == "content-security-policy"));
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
