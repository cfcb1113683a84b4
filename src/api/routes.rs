//! The route table: every served path and method, its operation and who may call it.
//! `openapi.json` must describe exactly these routes (checked by a test).

use super::error::ApiError;
use super::input::{query, query_flag};
use super::{Request, BASE_PATH};
use crate::model::auth::{Role, Scope};

/// What a route does.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Op {
    Health,
    OpenApi,
    ListCollections,
    CreateCollection,
    GetCollection,
    DeleteCollection,
    AddField,
    UpdateField,
    DeleteField,
    ListContent,
    CreateContent,
    GetContent,
    UpdateContent,
    DeleteContent,
    PublishContent,
    UnpublishContent,
    RestoreContent,
    DiscardDraft,
    DuplicateContent,
    ContentRevisions,
    CompareContent,
    ContentTranslations,
    ScheduleContent,
    UnscheduleContent,
    ListMedia,
    CreateMedia,
    GetMedia,
    UpdateMedia,
    DeleteMedia,
    RestoreMedia,
    StartRelink,
    GetRelink,
    ReplaceMedia,
    RevertMedia,
    BulkDeleteMedia,
    MediaFile,
    CreateToken,
    ListTokens,
    RevokeToken,
    SelfCheck,
    MediaUsage,
    UsageStatus,
    UsageTicks,
    UsageWork,
    UsageWorkRetry,
    UsageRepair,
    ListDeletions,
    RetryDeletion,
    SitemapIndex,
    SitemapCollection,
}

/// One route: method, OpenAPI-style path template, operation.
#[derive(Debug, Clone, Copy)]
pub struct Route {
    pub method: &'static str,
    pub path: &'static str,
    pub op: Op,
}

const fn r(method: &'static str, path: &'static str, op: Op) -> Route {
    Route { method, path, op }
}

/// Every route, with full paths.
pub const ROUTES: &[Route] = &[
    r("GET", "/_emdash/api/health", Op::Health),
    r("GET", "/sitemap.xml", Op::SitemapIndex),
    r("GET", "/sitemap-{collection}.xml", Op::SitemapCollection),
    r("GET", "/_emdash/api/openapi.json", Op::OpenApi),
    r("GET", "/_emdash/api/schema/collections", Op::ListCollections),
    r("POST", "/_emdash/api/schema/collections", Op::CreateCollection),
    r("GET", "/_emdash/api/schema/collections/{slug}", Op::GetCollection),
    r("DELETE", "/_emdash/api/schema/collections/{slug}", Op::DeleteCollection),
    r("POST", "/_emdash/api/schema/collections/{slug}/fields", Op::AddField),
    r("PUT", "/_emdash/api/schema/collections/{slug}/fields/{field}", Op::UpdateField),
    r("DELETE", "/_emdash/api/schema/collections/{slug}/fields/{field}", Op::DeleteField),
    r("GET", "/_emdash/api/content/{collection}", Op::ListContent),
    r("POST", "/_emdash/api/content/{collection}", Op::CreateContent),
    r("GET", "/_emdash/api/content/{collection}/{id}", Op::GetContent),
    r("PUT", "/_emdash/api/content/{collection}/{id}", Op::UpdateContent),
    r("DELETE", "/_emdash/api/content/{collection}/{id}", Op::DeleteContent),
    r("POST", "/_emdash/api/content/{collection}/{id}/publish", Op::PublishContent),
    r("POST", "/_emdash/api/content/{collection}/{id}/unpublish", Op::UnpublishContent),
    r("POST", "/_emdash/api/content/{collection}/{id}/restore", Op::RestoreContent),
    r("POST", "/_emdash/api/content/{collection}/{id}/discard-draft", Op::DiscardDraft),
    r("POST", "/_emdash/api/content/{collection}/{id}/duplicate", Op::DuplicateContent),
    r("GET", "/_emdash/api/content/{collection}/{id}/revisions", Op::ContentRevisions),
    r("GET", "/_emdash/api/content/{collection}/{id}/compare", Op::CompareContent),
    r("GET", "/_emdash/api/content/{collection}/{id}/translations", Op::ContentTranslations),
    r("POST", "/_emdash/api/content/{collection}/{id}/schedule", Op::ScheduleContent),
    r("DELETE", "/_emdash/api/content/{collection}/{id}/schedule", Op::UnscheduleContent),
    r("GET", "/_emdash/api/media", Op::ListMedia),
    r("POST", "/_emdash/api/media", Op::CreateMedia),
    r("GET", "/_emdash/api/media/{id}", Op::GetMedia),
    r("PUT", "/_emdash/api/media/{id}", Op::UpdateMedia),
    r("DELETE", "/_emdash/api/media/{id}", Op::DeleteMedia),
    r("POST", "/_emdash/api/media/bulk-delete", Op::BulkDeleteMedia),
    r("POST", "/_emdash/api/media/{id}/restore", Op::RestoreMedia),
    r("POST", "/_emdash/api/media/{id}/relink", Op::StartRelink),
    r("GET", "/_emdash/api/media/{id}/relink", Op::GetRelink),
    r("POST", "/_emdash/api/media/{id}/replace", Op::ReplaceMedia),
    r("POST", "/_emdash/api/media/{id}/revert", Op::RevertMedia),
    // Before `/media/{id}/usage`: a key is never a media id. `{key}` takes the rest of the path,
    // slashes included (EmDash's `media/file/[...key]`). `HEAD` answers as `GET` without a body.
    r("GET", "/_emdash/api/media/file/{key}", Op::MediaFile),
    r("HEAD", "/_emdash/api/media/file/{key}", Op::MediaFile),
    r("GET", "/_emdash/api/media/{id}/usage", Op::MediaUsage),
    r("POST", "/_emdash/api/admin/tokens", Op::CreateToken),
    r("GET", "/_emdash/api/admin/tokens", Op::ListTokens),
    r("DELETE", "/_emdash/api/admin/tokens/{id}", Op::RevokeToken),
    r("POST", "/_emdash/api/admin/self-check", Op::SelfCheck),
    r("GET", "/_emdash/api/admin/media-usage/status", Op::UsageStatus),
    r("GET", "/_emdash/api/admin/media-usage/ticks", Op::UsageTicks),
    r("GET", "/_emdash/api/admin/media-usage/work", Op::UsageWork),
    r("POST", "/_emdash/api/admin/media-usage/work/retry", Op::UsageWorkRetry),
    r("POST", "/_emdash/api/admin/media-usage/repair", Op::UsageRepair),
    r("GET", "/_emdash/api/admin/media-usage/collection-deletions", Op::ListDeletions),
    r("POST", "/_emdash/api/admin/media-usage/collection-deletions/retry", Op::RetryDeletion),
];

/// Who may call an operation.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Access {
    Public,
    /// At least this role, and this token scope.
    Need(Role, Scope),
}

/// The access rule of an operation for this request (some depend on query flags).
pub fn access(op: Op, req: &Request) -> Access {
    use Access::{Need, Public};
    match op {
        Op::Health | Op::OpenApi | Op::SitemapIndex | Op::SitemapCollection | Op::MediaFile => Public,
        Op::ListCollections | Op::GetCollection => Need(Role::Contributor, Scope::SchemaRead),
        Op::CreateCollection | Op::DeleteCollection | Op::AddField | Op::UpdateField | Op::DeleteField => {
            Need(Role::Admin, Scope::SchemaWrite)
        }
        Op::ListContent | Op::GetContent | Op::ContentRevisions | Op::CompareContent | Op::ContentTranslations => {
            Need(Role::Contributor, Scope::ContentRead)
        }
        Op::CreateContent
        | Op::UpdateContent
        | Op::PublishContent
        | Op::UnpublishContent
        | Op::RestoreContent
        | Op::DiscardDraft
        | Op::DuplicateContent
        | Op::ScheduleContent
        | Op::UnscheduleContent => Need(Role::Author, Scope::ContentWrite),
        // EmDash's `content:delete_permanent`: admins only.
        Op::DeleteContent if query_flag(req, "permanent") => Need(Role::Admin, Scope::ContentWrite),
        Op::DeleteContent => Need(Role::Author, Scope::ContentWrite),
        // Filtering by use says what uses an item (drafts included): editors and admins only, as
        // "Used in" and the counts.
        Op::ListMedia if query(req, "usage").is_some() => Need(Role::Editor, Scope::MediaRead),
        Op::ListMedia | Op::GetMedia => Need(Role::Subscriber, Scope::MediaRead),
        Op::CreateMedia => Need(Role::Author, Scope::MediaWrite),
        Op::DeleteMedia if query_flag(req, "force") || query_flag(req, "permanent") => {
            Need(Role::Admin, Scope::MediaWrite)
        }
        // EmDash's `media:edit_own` and `media:delete_own`: below editor, the handler lets a
        // token change only the media it uploaded or registered.
        // Replacing a file or reverting it: below editor, only the token's own media.
        Op::UpdateMedia | Op::DeleteMedia | Op::ReplaceMedia | Op::RevertMedia => Need(Role::Author, Scope::MediaWrite),
        Op::RestoreMedia | Op::BulkDeleteMedia => Need(Role::Editor, Scope::MediaWrite),
        Op::MediaUsage | Op::GetRelink => Need(Role::Editor, Scope::MediaRead),
        // Its writes are ordinary content writes, to any entry: an editor's.
        Op::StartRelink => Need(Role::Editor, Scope::MediaWrite),
        Op::CreateToken
        | Op::ListTokens
        | Op::RevokeToken
        | Op::SelfCheck
        | Op::UsageStatus
        | Op::UsageTicks
        | Op::UsageWork
        | Op::UsageWorkRetry
        | Op::UsageRepair
        | Op::ListDeletions
        | Op::RetryDeletion => Need(Role::Admin, Scope::Admin),
    }
}

/// The boolean query parameters an operation reads (checked before it runs).
pub fn flags(op: Op) -> &'static [&'static str] {
    match op {
        Op::GetCollection => &["includeFields"],
        Op::DeleteCollection => &["force"],
        Op::DeleteMedia => &["force", "permanent"],
        Op::ListMedia => &["trashed", "includeUsage"],
        Op::DeleteContent => &["permanent"],
        Op::GetMedia => &["includeUsage"],
        Op::RevokeToken => &["cascade"],
        _ => &[],
    }
}

/// Finds the route for a method and path: 404 `NOT_FOUND` for an unknown path, 405 for a known
/// path with another method. Returns the path parameters in order.
pub fn resolve(method: &str, path: &str) -> Result<(Op, Vec<String>), ApiError> {
    // A path a template with more fixed segments matches is that template's, not a parameter's:
    // `/media/bulk-delete` is not the media `bulk-delete` (whose methods it would advertise).
    let literals = |template: &str| template.split('/').filter(|seg| !seg.contains('{')).count();
    let matches: Vec<(&Route, Vec<String>)> =
        ROUTES.iter().filter_map(|route| match_path(route.path, path).map(|params| (route, params))).collect();
    let best = matches.iter().map(|(route, _)| literals(route.path)).max().unwrap_or(0);
    let mut allowed: Vec<&str> = Vec::new();
    for (route, params) in matches.into_iter().filter(|(route, _)| literals(route.path) == best) {
        if route.method == method {
            return Ok((route.op, params));
        }
        allowed.push(route.method);
    }
    if allowed.is_empty() {
        return Err(ApiError::not_found(format!("No route for {path}")));
    }
    let allow = allowed.join(", ");
    // The method is echoed only when it is a plain token (it came from the request line).
    let shown = if !method.is_empty() && method.len() <= 20 && method.bytes().all(|b| b.is_ascii_uppercase()) {
        method
    } else {
        "This method"
    };
    let mut e = ApiError::new(405, "METHOD_NOT_ALLOWED", format!("{shown} is not allowed here; use {allow}"));
    e.allow = Some(allow.into());
    Err(e)
}

/// A path parameter that, as a template's last segment, takes the rest of the path, slashes
/// included: the file route's storage key, as EmDash's `media/file/[...key]` takes it. Each of
/// its segments is percent-decoded on its own (so a `/` sent as `%2F` is part of the key too);
/// an empty, `.` or `..` segment names nothing (404): URL parsers and caches collapse or resolve
/// such a path to another one, which must not be served a different file.
const REST_PARAMETER: &str = "{key}";

fn match_path(template: &str, path: &str) -> Option<Vec<String>> {
    let path = path.strip_suffix('/').filter(|p| p.len() > BASE_PATH.len()).unwrap_or(path);
    let mut t = template.split('/').peekable();
    let mut p = path.split('/');
    let mut params = Vec::new();
    loop {
        match (t.next(), p.next()) {
            (None, None) => return Some(params),
            (Some(REST_PARAMETER), Some(first)) if t.peek().is_none() => {
                let segments: Option<Vec<String>> = std::iter::once(first)
                    .chain(p.by_ref())
                    .map(|raw| percent_decode(raw).filter(|s| !matches!(s.as_str(), "" | "." | "..")))
                    .collect();
                params.push(segments?.join("/"));
                return Some(params);
            }
            (Some(ts), Some(ps)) if ts.contains('{') => {
                // A parameter may have a fixed prefix and suffix in its segment: `sitemap-{c}.xml`.
                let (prefix, rest) = ts.split_once('{')?;
                let suffix = rest.split_once('}')?.1;
                let value = ps.strip_prefix(prefix)?.strip_suffix(suffix)?;
                if value.is_empty() {
                    return None;
                }
                params.push(percent_decode(value)?);
            }
            (Some(ts), Some(ps)) if ts == ps => {}
            _ => return None,
        }
    }
}

fn percent_decode(s: &str) -> Option<String> {
    let b = s.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        if b[i] == b'%' {
            let hex = s.get(i + 1..i + 3)?;
            out.push(u8::from_str_radix(hex, 16).ok()?);
            i += 3;
        } else {
            out.push(b[i]);
            i += 1;
        }
    }
    String::from_utf8(out).ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn resolves_paths_methods_and_parameters() {
        let (op, params) = resolve("POST", "/_emdash/api/content/posts/abc/publish").unwrap();
        assert_eq!(op, Op::PublishContent);
        assert_eq!(params, ["posts", "abc"]);
        assert_eq!(resolve("GET", "/_emdash/api/schema/collections/").unwrap().0, Op::ListCollections);
        let e = resolve("PATCH", "/_emdash/api/media").unwrap_err();
        assert_eq!((e.status, e.allow.as_deref()), (405, Some("GET, POST")));
        assert!(e.message.starts_with("PATCH is not allowed"), "{}", e.message);
        assert_eq!(resolve("HEAD", "/_emdash/api/media/file/k.png").unwrap().0, Op::MediaFile);
        let e = resolve("PUT", "/_emdash/api/media/file/k.png").unwrap_err();
        assert_eq!(e.allow.as_deref(), Some("GET, HEAD"));
        assert_eq!(resolve("HEAD", "/_emdash/api/media").unwrap_err().status, 405, "HEAD only where declared");
        let e = resolve("PATCH", "/_emdash/api/content/posts/abc").unwrap_err();
        assert_eq!(e.allow.as_deref(), Some("GET, PUT, DELETE"));
        assert!(resolve("<script>", "/_emdash/api/media").unwrap_err().message.starts_with("This method"));
        assert_eq!(resolve("GET", "/_emdash/api/nope").unwrap_err().status, 404);
        assert_eq!(resolve("GET", "/_emdash/api/content//x").unwrap_err().status, 404);
        let (op, params) = resolve("GET", "/sitemap-posts-2.xml").unwrap();
        assert_eq!((op, params), (Op::SitemapCollection, vec!["posts-2".to_owned()]));
        assert_eq!(resolve("GET", "/sitemap.xml").unwrap().0, Op::SitemapIndex);
        assert_eq!(resolve("GET", "/sitemap-.xml").unwrap_err().status, 404);
        let (_, params) = resolve("GET", "/_emdash/api/schema/collections/posts%22%3Bdrop").unwrap();
        assert_eq!(params, ["posts\";drop"]);
        // A fixed segment beats a parameter: only the bulk delete's method is advertised there.
        assert_eq!(resolve("POST", "/_emdash/api/media/bulk-delete").unwrap().0, Op::BulkDeleteMedia);
        assert_eq!(resolve("GET", "/_emdash/api/media/bulk-delete").unwrap_err().allow.as_deref(), Some("POST"));
        assert_eq!(resolve("GET", "/_emdash/api/media/other").unwrap().0, Op::GetMedia);
    }

    #[test]
    fn the_file_routes_key_takes_the_rest_of_the_path_without_dot_or_empty_segments() {
        let key = |path: &str| resolve("GET", &format!("/_emdash/api/media/file/{path}")).map(|(_, p)| p);
        assert_eq!(key("a.png").unwrap(), ["a.png"]);
        assert_eq!(key("2026/05/a%20b.png").unwrap(), ["2026/05/a b.png"]);
        assert_eq!(key("2026%2F05/a.png").unwrap(), ["2026/05/a.png"]);
        assert_eq!(key("a%2F..%2Fb").unwrap(), ["a/../b"], "one segment: nothing to resolve");
        assert_eq!(key("x/").unwrap(), ["x"], "a trailing slash is ignored, as on every route");
        for path in ["a/../b", "a/./b", "..", ".", "a/%2E%2E/b", "a/%2e", "a//b", "/a", "a/%ZZ", "a/%FF"] {
            assert_eq!(key(path).unwrap_err().status, 404, "{path}");
        }
        assert_eq!(resolve("HEAD", "/_emdash/api/media/file/a/b").unwrap().0, Op::MediaFile);
        // Only a last `{key}` takes the rest: a media id is one segment, and so is a `{key}`
        // followed by more of the template.
        assert_eq!(resolve("GET", "/_emdash/api/media/a/b").unwrap_err().status, 404);
        assert_eq!(match_path("/x/{key}/y", "/x/k/y"), Some(vec!["k".to_owned()]));
        assert_eq!(match_path("/x/{key}/y", "/x/k/l/y"), None);
    }
}
