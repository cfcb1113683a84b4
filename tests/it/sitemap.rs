//! Image sitemaps from the usage index.

use serde_json::json;

use crate::support::{code, data, Api};

fn setup() -> Api {
    let api = Api::new();
    data(&api.post(
        "/schema/collections",
        &json!({"slug": "posts", "label": "Posts", "fields": [{"slug": "hero", "type": "image"}, {"slug": "body", "type": "portableText"}]}),
    ));
    data(&api.post("/schema/collections", &json!({"slug": "empty", "label": "Empty"})));
    api
}

fn media(api: &Api, key: &str, mime: &str) -> String {
    let r = api.post("/media", &json!({"filename": "f", "mimeType": mime, "storageKey": key}));
    data(&r)["item"]["id"].as_str().unwrap().to_owned()
}

#[test]
fn the_index_lists_collections_with_published_entries() {
    let api = setup();
    data(&api.post("/content/posts", &json!({"slug": "a", "status": "published", "data": {}})));
    let r = api.call("GET", "/sitemap.xml", None, None);
    assert_eq!(r.status, 200);
    assert_eq!(r.content_type, "application/xml; charset=utf-8");
    assert!(!r.no_store, "sitemaps are public and cacheable");
    assert!(r.body.contains("<loc>https://site.example/sitemap-posts.xml</loc>"), "{}", r.body);
    assert!(!r.body.contains("sitemap-empty"), "collections without URLs are not listed");
}

#[test]
fn pages_list_published_entries_with_their_live_local_images() {
    let api = setup();
    let hero = media(&api, "/uploads/hero shot.jpg", "image/jpeg");
    let inline = media(&api, "uploads/inline.png", "image/png");
    let draft_only = media(&api, "uploads/draft.png", "image/png");
    let id = data(&api.post(
        "/content/posts",
        &json!({"slug": "hello world", "status": "published", "data": {
            "hero": {"id": hero, "mimeType": "image/jpeg"},
            "body": [{"_type": "image", "asset": {"_ref": inline}}, {"_type": "image", "asset": {"id": "cf", "provider": "cloudflare-images"}}]
        }}),
    ))["item"]["id"]
        .as_str()
        .unwrap()
        .to_owned();
    data(&api.put(&format!("/content/posts/{id}"), &json!({"draft": true, "data": {"hero": draft_only}})));
    data(&api.post("/content/posts", &json!({"slug": "unpublished", "data": {"hero": hero}})));
    let trashed = data(&api.post("/content/posts", &json!({"slug": "trashed", "status": "published", "data": {}})))
        ["item"]["id"]
        .as_str()
        .unwrap()
        .to_owned();
    data(&api.delete(&format!("/content/posts/{trashed}")));
    data(&api.post("/content/posts", &json!({"slug": "hallo", "locale": "de", "status": "published", "data": {}})));

    let xml = api.call("GET", "/sitemap-posts.xml", None, None).body;
    assert!(xml.contains("<loc>https://site.example/posts/hello%20world</loc>"), "{xml}");
    assert!(xml.contains("<image:loc>https://cdn.example/media/uploads/hero%20shot.jpg</image:loc>"), "{xml}");
    assert!(xml.contains("<image:loc>https://cdn.example/media/uploads/inline.png</image:loc>"), "{xml}");
    assert!(!xml.contains("draft.png"), "draft media is not live");
    assert!(!xml.contains("cf"), "only local media is listed");
    assert!(!xml.contains("unpublished") && !xml.contains("trashed"));
    assert!(xml.contains("<loc>https://site.example/de/posts/hallo</loc>"));
    assert_eq!(xml.matches("<url>").count(), 2);
}

#[test]
fn unknown_or_out_of_range_sitemaps_are_404() {
    let api = setup();
    // One published entry: page 1 exists, page 2 does not.
    data(&api.post("/content/posts", &json!({"slug": "a", "status": "published", "data": {}})));
    assert_eq!(api.call("GET", "/sitemap-posts.xml", None, None).status, 200);
    assert_eq!(code(&api.call("GET", "/sitemap-nope.xml", None, None)), "NOT_FOUND");
    assert_eq!(code(&api.call("GET", "/sitemap-Bad-Slug.xml", None, None)), "NOT_FOUND");
    assert_eq!(code(&api.call("GET", "/sitemap-posts-2.xml", None, None)), "NOT_FOUND");
    // A collection with nothing published answers exactly like an unknown one.
    let unknown = api.call("GET", "/sitemap-nope.xml", None, None);
    let empty = api.call("GET", "/sitemap-empty.xml", None, None);
    assert_eq!((empty.status, &empty.body), (unknown.status, &unknown.body));
    // A page number past the largest served is refused before any query.
    use media_usage_worker::clock::MonotonicClock;
    use media_usage_worker::exec::meter::Metered;
    for page in ["10001", "99999999999999999999"] {
        let metered = Metered::new(&api.db, MonotonicClock::default());
        let req = media_usage_worker::api::Request {
            method: "GET".into(),
            path: format!("/sitemap-posts-{page}.xml"),
            ..Default::default()
        };
        let r = futures::executor::block_on(media_usage_worker::api::handle(&metered, &api.config, &req));
        assert_eq!((r.status, metered.usage().statements), (404, 0), "page {page}");
    }
    // A page without published entries is one keyset read of its range: the collection, then
    // the page batch (entries and images), which finds nothing. Its 404 may be cached briefly.
    let metered = Metered::new(&api.db, MonotonicClock::default());
    let r = on(&metered, "/sitemap-posts-9999.xml");
    assert_eq!((r.status, metered.usage().statements), (404, 3), "the collection, then the page");
    assert!(!r.no_store);
    assert!(r.headers.contains(&("cache-control", "public, max-age=60".to_owned())), "{:?}", r.headers);
    assert_eq!((r.body.clone(), !empty.no_store), (unknown.body.clone(), true), "every such 404 is the same");
}

/// Answers `path` on any executor, without credentials.
fn on<E: media_usage_worker::exec::Executor>(exec: &E, path: &str) -> media_usage_worker::api::Response {
    let req = media_usage_worker::api::Request { method: "GET".into(), path: path.into(), ..Default::default() };
    futures::executor::block_on(media_usage_worker::api::handle(exec, &crate::support::config(), &req))
}

#[test]
fn every_sitemap_has_one_canonical_url_and_other_spellings_are_404_without_a_query() {
    use media_usage_worker::api::{is_shared_cacheable, Request};
    use media_usage_worker::clock::MonotonicClock;
    use media_usage_worker::exec::meter::Metered;
    let api = setup();
    data(&api.post("/content/posts", &json!({"slug": "a", "status": "published", "data": {}})));
    for path in ["/sitemap.xml", "/sitemap-posts.xml"] {
        assert_eq!(on(&api.db, path).status, 200, "{path}");
        let req = Request { method: "GET".into(), path: path.into(), ..Default::default() };
        assert!(is_shared_cacheable(&req), "{path}");
        let with_token = Request { authorization: Some(format!("Bearer {}", crate::support::ADMIN)), ..req };
        let bypasses = futures::executor::block_on(media_usage_worker::api::bypasses_shared_cache(
            &api.db,
            &crate::support::config(),
            &with_token,
        ));
        assert!(bypasses, "{path}: a request with a valid token is not served from the cache");
    }
    for path in [
        "/sitemap.xml/",
        "/sitemap-posts.xml/",
        "/sitemap-p%6Fsts.xml",
        "/sitemap-posts%2D2.xml",
        "/sitemap-posts-02.xml",
        "/sitemap-posts-0002.xml",
        "/sitemap-posts-1.xml",
    ] {
        let metered = Metered::new(&api.db, MonotonicClock::default());
        let r = on(&metered, path);
        assert_eq!((r.status, metered.usage().statements), (404, 0), "{path}");
        assert!(r.no_store, "{path}: only a canonical URL's 404 is cacheable");
        let req = Request { method: "GET".into(), path: path.into(), ..Default::default() };
        assert!(!is_shared_cacheable(&req), "{path}");
    }
}

#[test]
fn pages_are_rowid_ranges_read_by_keyset_and_the_index_lists_only_pages_with_entries() {
    let api = setup();
    // Entries whose rowids fall in pages 1, 2 and 4 (page 3's range holds only a draft and a
    // trashed entry).
    api.db.connection().execute_batch(
        "INSERT INTO ec_posts (rowid, id, slug, status) VALUES (7, 'a', 'first', 'published');
         INSERT INTO ec_posts (rowid, id, slug, status) VALUES (50000, 'b', 'last-of-one', 'published');
         INSERT INTO ec_posts (rowid, id, slug, status) VALUES (50001, 'c', 'first-of-two', 'published');
         INSERT INTO ec_posts (rowid, id, slug, status) VALUES (100001, 'd', 'draft', 'draft');
         INSERT INTO ec_posts (rowid, id, slug, status, deleted_at) VALUES (100002, 'e', 'trashed', 'published', '2026-01-01');
         INSERT INTO ec_posts (rowid, id, slug, status) VALUES (150001, 'f', 'fourth', 'published');",
    )
    .unwrap();
    let index = on(&api.db, "/sitemap.xml").body;
    let listed: Vec<&str> = index.lines().filter_map(|l| l.trim().strip_prefix("<loc>https://site.example/")).collect();
    assert_eq!(listed, ["sitemap-posts.xml</loc>", "sitemap-posts-2.xml</loc>", "sitemap-posts-4.xml</loc>"]);
    let urls = |path: &str| -> Vec<String> {
        let r = on(&api.db, path);
        r.body.lines().filter_map(|l| l.trim().strip_prefix("<loc>").map(str::to_owned)).collect()
    };
    assert_eq!(
        urls("/sitemap-posts.xml"),
        ["https://site.example/posts/first</loc>", "https://site.example/posts/last-of-one</loc>"]
    );
    assert_eq!(urls("/sitemap-posts-2.xml"), ["https://site.example/posts/first-of-two</loc>"]);
    assert_eq!(on(&api.db, "/sitemap-posts-3.xml").status, 404);
    assert_eq!(urls("/sitemap-posts-4.xml"), ["https://site.example/posts/fourth</loc>"]);
    assert_eq!(on(&api.db, "/sitemap-posts-5.xml").status, 404);
}

#[test]
fn dot_segment_slugs_and_storage_keys_stay_inside_the_configured_origins() {
    let api = setup();
    let key = data(
        &api.post("/media", &json!({"filename": "x.jpg", "mimeType": "image/jpeg", "storageKey": "../../escape.jpg"})),
    )["item"]["id"]
        .as_str()
        .unwrap()
        .to_owned();
    let id = data(&api.post("/content/posts", &json!({"slug": "..", "status": "published", "data": {"hero": key}})))
        ["item"]["id"]
        .as_str()
        .unwrap()
        .to_owned();
    let xml = api.call("GET", "/sitemap-posts.xml", None, None).body;
    assert!(xml.contains(&format!("<loc>https://site.example/posts/{id}</loc>")), "{xml}");
    assert!(!xml.contains("escape"), "{xml}");
    assert!(!xml.contains("/../") && !xml.contains("/..<"), "{xml}");
}

#[test]
fn the_index_copes_with_more_collections_than_one_compound_select_allows() {
    let api = Api::new();
    for i in 0..505 {
        data(&api.post("/schema/collections", &json!({"slug": format!("c{i}"), "label": "C"})));
    }
    data(&api.post("/content/c504", &json!({"slug": "last", "status": "published", "data": {}})));
    data(&api.post("/content/c0", &json!({"slug": "first", "status": "published", "data": {}})));
    let r = api.call("GET", "/sitemap.xml", None, None);
    assert_eq!(r.status, 200, "{}", r.body);
    assert_eq!(r.body.matches("<sitemap>").count(), 2);
    assert!(r.body.contains("sitemap-c504.xml") && r.body.contains("sitemap-c0.xml"));
}

#[test]
fn without_a_media_url_uploaded_images_are_listed_at_the_file_route_of_the_requested_origin() {
    let mut api = Api::with_storage(1_800_000_000_000.0);
    api.config.media_public_url = None;
    data(&api.post("/schema/collections", &json!({"slug": "posts", "label": "Posts", "fields": [{"slug": "hero", "type": "image"}, {"slug": "icon", "type": "image"}]})));
    let (ty, body) =
        crate::media_files::form(&[("file", Some("p.png"), Some("image/png"), &crate::media_files::png(4, 4, 1))]);
    let uploaded =
        api.request("POST", "/media", Some(crate::support::ADMIN), Some(&body), |r| r.content_type = Some(ty));
    let uploaded = data(&uploaded)["item"].clone();
    let external = media(&api, "elsewhere/e.png", "image/png");
    let data_ = json!({"hero": uploaded["id"], "icon": external});
    data(&api.post("/content/posts", &json!({"slug": "a", "status": "published", "data": data_})));
    let sitemap = |api: &Api, origin: Option<&str>| {
        api.request("GET", "/sitemap-posts.xml", None, None, |r| r.origin = origin.map(str::to_owned)).body
    };
    let xml = sitemap(&api, Some("https://media-usage.example"));
    let key = uploaded["storageKey"].as_str().unwrap();
    assert!(
        xml.contains(&format!("<image:loc>https://media-usage.example/_emdash/api/media/file/{key}</image:loc>")),
        "{xml}"
    );
    assert!(!xml.contains("elsewhere"), "media registered by JSON is not in the bucket: {xml}");
    assert_eq!(xml.matches("<image:image>").count(), 1, "{xml}");
    // Without an origin, or without a bucket, no image URL can be made.
    assert!(!sitemap(&api, None).contains("<image:image>"));
    api.storage = None;
    assert!(!sitemap(&api, Some("https://media-usage.example")).contains("<image:image>"));
}

#[test]
fn only_a_token_that_authenticates_lets_a_sitemap_request_past_the_shared_cache() {
    use media_usage_worker::api::{bypasses_shared_cache, is_shared_cacheable};
    use media_usage_worker::clock::MonotonicClock;
    use media_usage_worker::exec::meter::Metered;
    let api = setup();
    let minted = api.token("editor", &["content:read"]);
    let revoked = format!("emdash_{}", "0123456789abcdef".repeat(4));
    // (statements it read, whether it bypasses the cache)
    let judge = |header: Option<String>| {
        let metered = Metered::new(&api.db, MonotonicClock::default());
        let req = media_usage_worker::api::Request {
            method: "GET".into(),
            path: "/sitemap-posts.xml".into(),
            authorization: header,
            ..Default::default()
        };
        assert!(is_shared_cacheable(&req), "a canonical sitemap URL is cacheable whatever its header");
        let bypasses = futures::executor::block_on(bypasses_shared_cache(&metered, &api.config, &req));
        (metered.usage().statements, bypasses)
    };
    assert_eq!(judge(None), (0, false));
    // A header that cannot hold a valid token takes the cache, reading nothing.
    for junk in ["Bearer x", "Basic dXNlcjpwYXNz", "x", "Bearer emdash_unknown", &format!("Bearer {}", "a".repeat(64))]
    {
        assert_eq!(judge(Some(junk.into())), (0, false), "{junk}");
    }
    // The bootstrap token bypasses it without a read; a minted token's shape costs one indexed
    // read, and bypasses only when it is a stored token.
    assert_eq!(judge(Some(format!("Bearer {}", crate::support::ADMIN))), (0, true));
    assert_eq!(judge(Some(format!("Bearer {revoked}"))), (1, false));
    let (reads, bypasses) = judge(Some(format!("Bearer {minted}")));
    assert!(bypasses && reads >= 1, "{reads}");
}
