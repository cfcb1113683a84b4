//! The operator console's answers ([`crate::console::Answer`]) as responses: a file with its
//! type, a refusal in the API's error envelope, and the console's headers on both.

use super::error::ApiError;
use super::{Config, Request, Response};
use crate::console::{self, Answer};

/// The response to a request for a console path (`None` for any other path). Its policy lets
/// images load from the origin of `MEDIA_PUBLIC_URL` too (the media library's thumbnails).
pub fn respond(req: &Request, config: &Config) -> Option<Response> {
    let mut response = match console::serve(&req.method, &req.path)? {
        Answer::File { content_type, body } => Response::raw(200, content_type, body.to_owned()),
        Answer::NotFound => Response::error(&ApiError::not_found(format!("No console file at {}", req.path))),
        Answer::MethodNotAllowed => {
            let mut e = ApiError::new(405, "METHOD_NOT_ALLOWED", "The console is only read: use GET");
            e.allow = Some("GET, HEAD".into());
            Response::error(&e)
        }
    };
    let media_origin = config.media_public_url.as_deref().and_then(console::media_origin);
    response.headers.extend(console::headers(media_origin.as_deref()));
    Some(response)
}

#[cfg(test)]
mod tests {
    use futures::executor::block_on;

    use super::*;
    use crate::console::{CONTENT_SECURITY_POLICY, PATH};
    use crate::exec::sqlite::SqliteExecutor;

    fn request(method: &str, path: &str) -> Request {
        Request { method: method.into(), path: path.into(), ..Default::default() }
    }

    fn respond_default(req: &Request) -> Option<Response> {
        respond(req, &Config::default())
    }

    fn header<'r>(r: &'r Response, name: &str) -> Option<&'r str> {
        r.headers.iter().find(|(k, _)| *k == name).map(|(_, v)| v.as_str())
    }

    #[test]
    fn files_are_answered_with_their_type_and_the_consoles_headers() {
        let r = respond_default(&request("GET", "/_emdash/admin/media-usage/console.js")).unwrap();
        assert_eq!((r.status, r.content_type), (200, "text/javascript; charset=utf-8"));
        assert_eq!(r.body, include_str!("../console/console.js"));
        assert_eq!(header(&r, "content-security-policy"), Some(CONTENT_SECURITY_POLICY));
        assert_eq!(header(&r, "x-content-type-options"), Some("nosniff"));
        assert_eq!(header(&r, "referrer-policy"), Some("no-referrer"));
        assert!(r.no_store && !r.expose_cost && r.object.is_none());
        let head = respond_default(&request("HEAD", PATH)).unwrap();
        assert_eq!((head.status, head.content_type, head.body.as_str()), (200, "text/html; charset=utf-8", ""));
        assert!(respond_default(&request("GET", "/_emdash/api/health")).is_none());
    }

    #[test]
    fn refusals_are_api_errors_with_the_consoles_headers() {
        let missing = respond_default(&request("GET", "/_emdash/admin/media-usage/nope.js")).unwrap();
        assert_eq!(missing.status, 404);
        assert_eq!(missing.body_json()["error"]["code"], "NOT_FOUND");
        assert_eq!(header(&missing, "content-security-policy"), Some(CONTENT_SECURITY_POLICY));
        let post = respond_default(&request("POST", PATH)).unwrap();
        assert_eq!(post.status, 405);
        assert_eq!(post.body_json()["error"]["code"], "METHOD_NOT_ALLOWED");
        assert_eq!(header(&post, "allow"), Some("GET, HEAD"));
        assert_eq!(header(&post, "x-content-type-options"), Some("nosniff"));
    }

    #[test]
    fn with_media_served_elsewhere_images_may_also_come_from_its_origin() {
        let config = Config { media_public_url: Some("https://cdn.example.com/media".into()), ..Default::default() };
        let r = respond(&request("GET", PATH), &config).unwrap();
        let policy = header(&r, "content-security-policy").unwrap();
        assert_eq!(
            policy,
            CONTENT_SECURITY_POLICY.replace("img-src 'self' blob:;", "img-src 'self' blob: https://cdn.example.com;")
        );
        let same = Config { media_public_url: Some("/media".into()), ..Default::default() };
        let r = respond(&request("GET", PATH), &same).unwrap();
        assert_eq!(header(&r, "content-security-policy"), Some(CONTENT_SECURITY_POLICY));
    }

    #[test]
    fn the_api_answers_console_paths_before_routing() {
        let exec = SqliteExecutor::open_in_memory().unwrap();
        let r = block_on(crate::api::handle(&exec, &Default::default(), &request("GET", PATH)));
        assert_eq!((r.status, r.content_type), (200, "text/html; charset=utf-8"));
        assert_eq!(header(&r, "content-security-policy"), Some(CONTENT_SECURITY_POLICY));
    }
}
