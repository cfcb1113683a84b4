//! EmDash's file URLs keep the key's slashes (its route is `media/file/[...key]`): a key with `/`
//! is served at the path with its slashes (and, as before, with each `/` sent as `%2F`), and the
//! media `url` percent-encodes each path segment but keeps the `/` between them. A path with a
//! dot segment never reaches a stored file, and no `url` holds one.

use crate::media_files::{png, put_raw, register_uploaded};
use crate::support::{code, data, Api, MEDIA_PUBLIC_URL};

const T0: f64 = 1_800_000_000_000.0;

/// An uploaded row for `key` whose object (`png(2, 2, salt)`) is in the bucket.
fn stored(api: &Api, key: &str, salt: u8) -> String {
    put_raw(api.storage.as_ref().unwrap(), key, png(2, 2, salt), "image/png");
    register_uploaded(api, key)
}

fn file(api: &Api, method: &str, path: &str) -> media_usage_worker::api::Response {
    api.call(method, &format!("/media/file/{path}"), None, None)
}

fn url(api: &Api, id: &str) -> String {
    data(&api.get(&format!("/media/{id}")))["item"]["url"].as_str().unwrap().to_owned()
}

/// The path a browser resolves `url` to: dot segments (`.`, `..`, in any percent-encoding URL
/// parsers accept) removed as RFC 3986 and the URL standard do. `None` when the path would
/// leave the root.
fn resolved(url: &str) -> Vec<String> {
    let path = url.split_once("://").map_or(url, |(_, rest)| &rest[rest.find('/').unwrap_or(rest.len())..]);
    let mut out: Vec<String> = Vec::new();
    // The path starts with `/`: its segments follow it.
    for segment in path.strip_prefix('/').unwrap_or(path).split('/') {
        match segment.to_ascii_lowercase().replace("%2e", ".").as_str() {
            "." => {}
            ".." => {
                out.pop();
            }
            _ => out.push(segment.to_owned()),
        }
    }
    out
}

#[test]
fn a_key_with_slashes_is_served_at_its_slashed_path_and_its_url_keeps_them() {
    let mut api = Api::with_storage(T0);
    api.config.media_public_url = None;
    let key = "2026/05/photo one+ü.png";
    let id = stored(&api, key, 1);
    let encoded = "2026/05/photo%20one%2B%C3%BC.png";
    assert_eq!(url(&api, &id), format!("/_emdash/api/media/file/{encoded}"));
    for (method, path) in [
        ("GET", encoded.to_owned()),
        ("HEAD", encoded.to_owned()),
        ("GET", encoded.replace('/', "%2F")),
        ("GET", "2026%2F05/photo%20one%2B%C3%BC.png".to_owned()),
        ("GET", "2026/05/photo one+ü.png".to_owned()),
    ] {
        let r = file(&api, method, &path);
        assert_eq!(r.status, 200, "{method} {path}: {}", r.body);
        assert_eq!(r.object.is_some(), method == "GET", "{method} {path}");
        if let Some((served, _, _)) = &r.object {
            assert_eq!(served, key, "{path}");
        }
    }
    // The URL as given resolves to the route, with its segments.
    let r = api.call("GET", url(&api, &id).strip_prefix("/_emdash/api").unwrap(), None, None);
    assert_eq!(r.status, 200);
    // A prefix or a part of the key is another key.
    for other in ["2026/05", "2026", "05/photo%20one%2B%C3%BC.png", "2026/05/photo%20one%2B%C3%BC.png/x"] {
        assert_eq!(file(&api, "GET", other).status, 404, "{other}");
    }
    // Under MEDIA_PUBLIC_URL: the same segments.
    api.config.media_public_url = Some(MEDIA_PUBLIC_URL.to_owned());
    assert_eq!(url(&api, &id), format!("https://cdn.example/media/{encoded}"));
}

#[test]
fn a_path_with_a_dot_segment_never_reaches_a_stored_file() {
    let api = Api::with_storage(T0);
    // The files such paths could be taken for: `b.png`, `x/b.png` and the literal `a/../b.png`.
    stored(&api, "b.png", 1);
    stored(&api, "x/b.png", 2);
    let literal = stored(&api, "a/../b.png", 3);
    for path in [
        "a/../b.png",
        "x/./b.png",
        "./b.png",
        "../b.png",
        "a/%2E%2E/b.png",
        "a/%2e./b.png",
        "x/%2E/b.png",
        "x//b.png",
        "/b.png",
        "x/b.png/..",
        "..",
        ".",
    ] {
        for method in ["GET", "HEAD"] {
            let r = file(&api, method, path);
            assert_eq!((r.status, code(&r).as_str()), (404, "NOT_FOUND"), "{method} {path}: {}", r.body);
            assert_eq!(r.object, None);
        }
    }
    // A key with a dot segment is named with its slashes percent-encoded, as one segment: what
    // its `url` says, and what the route serves.
    let url = url(&api, &literal);
    assert_eq!(url, "https://cdn.example/media/a%2F..%2Fb.png");
    assert_eq!(file(&api, "GET", "a%2F..%2Fb.png").object.map(|o| o.0), Some("a/../b.png".to_owned()));
    assert_eq!(file(&api, "GET", "b.png").object.map(|o| o.0), Some("b.png".to_owned()));
}

#[test]
fn no_url_holds_a_dot_or_empty_segment_that_would_move_it() {
    let mut api = Api::with_storage(T0);
    let keys = [
        "../secret.png",
        "a/../../b.png",
        "./a.png",
        "a/./b.png",
        "a//b.png",
        "/a.png",
        "a/",
        "a/.",
        "..a/b..",
        "%2e%2e/x",
    ];
    for public in [None, Some(MEDIA_PUBLIC_URL.to_owned())] {
        api.config.media_public_url = public.clone();
        let base = match &public {
            Some(_) => vec!["media".to_owned()],
            None => ["_emdash", "api", "media", "file"].map(str::to_owned).to_vec(),
        };
        for (i, key) in keys.iter().enumerate() {
            let id = if public.is_none() { stored(&api, key, 10 + i as u8) } else { register_uploaded_id(&api, key) };
            let url = url(&api, &id);
            let segments = resolved(&url);
            assert!(
                segments.starts_with(&base) && segments.len() > base.len(),
                "{key}: {url} resolves to {segments:?}"
            );
            // And the route serves the key at that URL (without MEDIA_PUBLIC_URL).
            if public.is_none() {
                let path = segments[base.len()..].join("/");
                let r = file(&api, "GET", &path);
                assert_eq!(r.object.map(|o| o.0).as_deref(), Some(*key), "{key}: {url}");
            }
        }
    }
}

/// The id of the uploaded row already registered for `key` (by [`stored`]).
fn register_uploaded_id(api: &Api, key: &str) -> String {
    api.db.connection().query_row("SELECT id FROM media WHERE storage_key = ?1", [key], |r| r.get(0)).unwrap()
}

#[test]
fn a_json_registration_of_a_key_that_is_a_dot_segment_is_refused() {
    let api = Api::with_storage(T0);
    for key in [".", ".."] {
        let r =
            api.post("/media", &serde_json::json!({"filename": "f.png", "mimeType": "image/png", "storageKey": key}));
        assert_eq!((r.status, code(&r)), (400, "VALIDATION_ERROR".to_owned()), "{key}: {}", r.body);
        assert_eq!(r.body_json()["error"]["details"]["issues"][0]["path"], "storageKey");
    }
    for key in ["...", "a/..", "../a", ".a"] {
        let r =
            api.post("/media", &serde_json::json!({"filename": "f.png", "mimeType": "image/png", "storageKey": key}));
        assert_eq!(r.status, 201, "{key}: {}", r.body);
    }
}
