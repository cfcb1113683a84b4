//! How a stored file is answered: status, headers and the byte range to send, from the object's
//! metadata and the request's `If-None-Match` and `Range`. Pure; the edge streams the bytes.

use super::StoredObject;

/// Stored files never change under a key (a new upload gets a new key).
pub const CACHE_CONTROL: &str = "public, max-age=31536000, immutable";

/// The answer to `GET /media/file/{key}` for an existing object.
#[derive(Debug, Clone, PartialEq)]
pub struct FilePlan {
    pub status: u16,
    pub headers: Vec<(&'static str, String)>,
    /// The bytes to send: `(offset, length)`; `None` sends no body (304, 416).
    pub body: Option<(u64, u64)>,
}

/// The policy of every served file: a document it could become runs in a sandbox (no script,
/// no same origin, no forms or plugins), whatever its type claims.
pub const CONTENT_SECURITY_POLICY: &str = "sandbox";

/// Types shown inline: raster images, audio, video and PDF. Everything else (SVG and other XML,
/// HTML, text, office files, archives, unknown types) is sent as an attachment.
fn is_inline(content_type: &str) -> bool {
    let t = super::inspect::essence(content_type);
    let (top, sub) = t.split_once('/').unwrap_or((t.as_str(), ""));
    let media = matches!(top, "image" | "audio" | "video") && !sub.is_empty() && !sub.contains("xml");
    media || t == "application/pdf"
}

/// Whether `If-None-Match` names the object's entity tag (weak comparison) or is `*`.
fn matches_etag(if_none_match: &str, etag: &str) -> bool {
    let bare = |t: &str| t.trim().trim_start_matches("W/").to_owned();
    if_none_match.split(',').any(|t| t.trim() == "*" || bare(t) == bare(etag))
}

/// How a `Range` header is answered.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Ranged {
    /// One satisfiable byte range: `(offset, length)`.
    Part(u64, u64),
    /// A malformed or unsatisfiable single byte range: 416.
    Unsatisfiable,
    /// Another unit or several ranges: ignored, the whole file (RFC 9110 §14.2 lets a server
    /// ignore a range it does not support).
    Ignored,
}

fn ranged(range: &str, size: u64) -> Ranged {
    let Some(spec) = range.trim().strip_prefix("bytes=") else { return Ranged::Ignored };
    if spec.contains(',') {
        return Ranged::Ignored;
    }
    match parse_range(spec, size) {
        Ok((offset, length)) => Ranged::Part(offset, length),
        Err(()) => Ranged::Unsatisfiable,
    }
}

/// A single byte range spec (after `bytes=`) against `size` as `(offset, length)`; `Err(())`
/// when it is malformed or cannot be satisfied.
fn parse_range(spec: &str, size: u64) -> Result<(u64, u64), ()> {
    let (start, end) = spec.split_once('-').ok_or(())?;
    let num = |s: &str| s.trim().parse::<u64>().map_err(|_| ());
    let (first, last) = match (start.trim().is_empty(), end.trim().is_empty()) {
        (true, true) => return Err(()),
        // The last n bytes.
        (true, false) => {
            let n = num(end)?;
            if n == 0 {
                return Err(());
            }
            (size.saturating_sub(n), size.saturating_sub(1))
        }
        (false, true) => (num(start)?, size.saturating_sub(1)),
        (false, false) => (num(start)?, num(end)?.min(size.saturating_sub(1))),
    };
    // An empty object has no satisfiable range (`first >= 0 = size`).
    if first >= size || first > last {
        return Err(());
    }
    Ok((first, last - first + 1))
}

pub fn plan(object: &StoredObject, if_none_match: Option<&str>, range: Option<&str>) -> FilePlan {
    let content_type = object.content_type.clone().unwrap_or_else(|| "application/octet-stream".into());
    let mut headers = vec![
        ("etag", object.http_etag.clone()),
        ("x-content-type-options", "nosniff".to_owned()),
        ("content-security-policy", CONTENT_SECURITY_POLICY.to_owned()),
        ("accept-ranges", "bytes".to_owned()),
    ];
    if !is_inline(&content_type) {
        headers.push(("content-disposition", "attachment".to_owned()));
    }
    // Only answers that carry the file are cached for a year: a 304 or a 416 says nothing a
    // shared cache should keep.
    let cacheable = |mut headers: Vec<(&'static str, String)>| {
        headers.push(("cache-control", CACHE_CONTROL.to_owned()));
        headers
    };
    if if_none_match.is_some_and(|t| matches_etag(t, &object.http_etag)) {
        return FilePlan { status: 304, headers, body: None };
    }
    headers.push(("content-type", content_type));
    match range.map_or(Ranged::Ignored, |r| ranged(r, object.size)) {
        Ranged::Ignored => FilePlan { status: 200, headers: cacheable(headers), body: Some((0, object.size)) },
        Ranged::Part(offset, length) => {
            headers.push(("content-range", format!("bytes {offset}-{}/{}", offset + length - 1, object.size)));
            FilePlan { status: 206, headers: cacheable(headers), body: Some((offset, length)) }
        }
        Ranged::Unsatisfiable => {
            headers.push(("content-range", format!("bytes */{}", object.size)));
            FilePlan { status: 416, headers, body: None }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn object(size: u64, ty: &str) -> StoredObject {
        StoredObject {
            key: "k.png".into(),
            size,
            http_etag: "\"abc\"".into(),
            content_type: Some(ty.into()),
            uploaded_ms: 0.0,
            marked: true,
        }
    }

    fn header<'a>(p: &'a FilePlan, name: &str) -> Option<&'a str> {
        p.headers.iter().find(|(k, _)| *k == name).map(|(_, v)| v.as_str())
    }

    #[test]
    fn whole_files_are_cacheable_forever_and_not_sniffed() {
        let p = plan(&object(10, "image/png"), None, None);
        assert_eq!((p.status, p.body), (200, Some((0, 10))));
        assert_eq!(header(&p, "cache-control"), Some(CACHE_CONTROL));
        assert_eq!(header(&p, "etag"), Some("\"abc\""));
        assert_eq!(header(&p, "content-type"), Some("image/png"));
        assert_eq!(header(&p, "x-content-type-options"), Some("nosniff"));
        assert_eq!(header(&p, "content-disposition"), None);
        assert_eq!(header(&p, "content-security-policy"), Some("sandbox"));
        for inline in ["image/jpeg", "image/webp", "audio/mpeg", "video/mp4", "application/pdf", "Application/PDF; x=y"]
        {
            let p = plan(&object(1, inline), None, None);
            assert_eq!(header(&p, "content-disposition"), None, "{inline}");
            assert_eq!(header(&p, "content-security-policy"), Some("sandbox"), "{inline}");
        }
        for active in [
            "text/html; charset=utf-8",
            "image/svg+xml",
            "application/xhtml+xml",
            "application/rss+xml",
            "text/plain",
            "application/zip",
            "application/octet-stream",
            "application/vnd.openxmlformats-officedocument.wordprocessingml.document",
            "image",
            "image/",
        ] {
            assert_eq!(
                header(&plan(&object(1, active), None, None), "content-disposition"),
                Some("attachment"),
                "{active}"
            );
        }
    }

    #[test]
    fn a_matching_entity_tag_is_not_modified() {
        for inm in ["\"abc\"", "W/\"abc\"", "\"x\", \"abc\"", "*"] {
            let p = plan(&object(10, "image/png"), Some(inm), Some("bytes=0-1"));
            assert_eq!((p.status, p.body), (304, None), "{inm}");
            assert_eq!(header(&p, "etag"), Some("\"abc\""));
            assert_eq!(header(&p, "cache-control"), None, "a 304 is not cached for a year");
            assert_eq!(header(&p, "content-security-policy"), Some("sandbox"));
        }
        assert_eq!(plan(&object(10, "image/png"), Some("\"other\""), None).status, 200);
    }

    #[test]
    fn ranges_are_served_or_refused() {
        let cases = [
            ("bytes=0-3", 206, Some((0, 4)), "bytes 0-3/10"),
            ("bytes=2-", 206, Some((2, 8)), "bytes 2-9/10"),
            ("bytes=-3", 206, Some((7, 3)), "bytes 7-9/10"),
            ("bytes=5-100", 206, Some((5, 5)), "bytes 5-9/10"),
            ("bytes=9-9", 206, Some((9, 1)), "bytes 9-9/10"),
            ("bytes=10-", 416, None, "bytes */10"),
            ("bytes=4-2", 416, None, "bytes */10"),
            ("bytes=-0", 416, None, "bytes */10"),
            ("bytes=x-1", 416, None, "bytes */10"),
            ("bytes=-", 416, None, "bytes */10"),
            ("bytes=3", 416, None, "bytes */10"),
        ];
        for (range, status, body, content_range) in cases {
            let p = plan(&object(10, "image/png"), None, Some(range));
            assert_eq!((p.status, p.body), (status, body), "{range}");
            assert_eq!(header(&p, "content-range"), Some(content_range), "{range}");
            let cached = if status == 206 { Some(CACHE_CONTROL) } else { None };
            assert_eq!(header(&p, "cache-control"), cached, "{range}: only answers that carry the file are cached");
        }
        // Several ranges or another unit: ignored, the whole file.
        for range in ["bytes=0-1,4-5", "items=0-1", "bytes=0-1, 3-"] {
            let p = plan(&object(10, "image/png"), None, Some(range));
            assert_eq!((p.status, p.body), (200, Some((0, 10))), "{range}");
            assert_eq!(header(&p, "content-range"), None, "{range}");
            assert_eq!(header(&p, "cache-control"), Some(CACHE_CONTROL), "{range}");
        }
        for range in ["bytes=0-", "bytes=-3", "bytes=0-0"] {
            assert_eq!(plan(&object(0, "image/png"), None, Some(range)).status, 416, "{range} of nothing");
        }
    }
}
