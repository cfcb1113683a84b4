//! Content lifecycle through the pure API handlers on SQLite.

use serde_json::json;

use crate::support::{code, data, Api};

fn setup() -> Api {
    let api = Api::new();
    let r = api.post(
        "/schema/collections",
        &json!({"slug": "posts", "label": "Posts", "fields": [
            {"slug": "title", "type": "string", "required": true},
            {"slug": "hero", "type": "image"},
            {"slug": "views", "type": "number"},
            {"slug": "featured", "type": "boolean"},
            {"slug": "sections", "type": "repeater", "subFields": [{"slug": "image", "type": "image"}]}
        ]}),
    );
    assert_eq!(r.status, 201, "{}", r.body);
    api
}

#[test]
fn create_read_update_with_versions_and_revs() {
    let api = setup();
    let r = api.post(
        "/content/posts",
        &json!({"slug": "hello", "data": {"title": "Hello", "hero": {"id": "m1"}, "views": 3, "featured": true}}),
    );
    assert_eq!(r.status, 201, "{}", r.body);
    let item = data(&r)["item"].clone();
    assert_eq!(item["version"], 1);
    assert_eq!(item["status"], "draft");
    assert_eq!(item["locale"], "en");
    assert_eq!(item["translationGroup"], item["id"]);
    assert_eq!(item["data"]["hero"], json!({"id": "m1"}));
    assert_eq!(item["data"]["featured"], true);
    let id = item["id"].as_str().unwrap().to_owned();

    let got = data(&api.get(&format!("/content/posts/{id}")));
    let rev = got["_rev"].as_str().unwrap().to_owned();
    let upd = api.put(&format!("/content/posts/{id}"), &json!({"data": {"views": 4}, "_rev": rev}));
    assert_eq!(data(&upd)["item"]["version"], 2);
    assert_eq!(data(&upd)["item"]["data"]["title"], "Hello", "untouched fields stay");
    let stale = api.put(&format!("/content/posts/{id}"), &json!({"data": {"views": 5}, "_rev": rev}));
    assert_eq!((stale.status, code(&stale)), (409, "CONFLICT".into()));
    let bad_rev = api.put(&format!("/content/posts/{id}"), &json!({"_rev": "garbage!"}));
    assert_eq!(code(&bad_rev), "VALIDATION_ERROR");
}

#[test]
fn drafts_publish_unpublish_trash_restore_and_delete() {
    let api = setup();
    let id = data(&api.post("/content/posts", &json!({"slug": "a", "status": "published", "data": {"title": "Live"}})))
        ["item"]["id"]
        .as_str()
        .unwrap()
        .to_owned();
    let path = format!("/content/posts/{id}");
    let draft = data(&api.put(&path, &json!({"draft": true, "slug": "a2", "data": {"title": "Draft"}})));
    assert_eq!(draft["item"]["data"]["title"], "Live", "a draft save leaves live columns alone");
    assert_eq!(draft["item"]["slug"], "a");
    assert!(draft["item"]["draftRevisionId"].is_string());
    assert_eq!(draft["item"]["version"], 2);
    // A second draft save builds on the first.
    data(&api.put(&path, &json!({"draft": true, "data": {"views": 9}})));

    let published = data(&api.post(&format!("{path}/publish"), &json!({})));
    assert_eq!(published["item"]["data"]["title"], "Draft");
    assert_eq!(published["item"]["data"]["views"], 9.0);
    assert_eq!(published["item"]["slug"], "a2");
    assert!(published["item"]["draftRevisionId"].is_null());
    assert!(published["item"]["liveRevisionId"].is_string());
    assert_eq!(published["item"]["status"], "published");

    let unpub = data(&api.post(&format!("{path}/unpublish"), &json!({})));
    assert_eq!(unpub["item"]["status"], "draft");
    let trashed = data(&api.delete(&path));
    assert!(trashed["item"]["deletedAt"].is_string());
    let listed = data(&api.get("/content/posts"));
    assert_eq!(listed["items"].as_array().unwrap().len(), 0, "trashed entries are not listed");
    let restored = data(&api.post(&format!("{path}/restore"), &json!({})));
    assert!(restored["item"]["deletedAt"].is_null());
    let gone = api.call("DELETE", &format!("{path}?permanent=true"), Some(crate::support::ADMIN), None);
    assert_eq!(data(&gone)["deleted"], true);
    assert_eq!(api.get(&path).status, 404);
}

#[test]
fn field_values_are_validated_against_the_collection() {
    let api = setup();
    let r = api.post("/content/posts", &json!({"slug": "x", "data": {"views": "many", "nope": 1, "sections": [1]}}));
    assert_eq!(r.status, 400);
    let issues = r.body_json()["error"]["details"]["issues"].clone();
    let paths: Vec<&str> = issues.as_array().unwrap().iter().map(|i| i["path"].as_str().unwrap()).collect();
    for p in ["data.views", "data.nope", "data.sections", "data.title"] {
        assert!(paths.contains(&p), "{p} missing from {paths:?}");
    }
}

#[test]
fn slugs_are_unique_per_locale() {
    let api = setup();
    assert_eq!(api.post("/content/posts", &json!({"slug": "s", "data": {"title": "a"}})).status, 201);
    let dup = api.post("/content/posts", &json!({"slug": "s", "data": {"title": "b"}}));
    assert_eq!((dup.status, code(&dup)), (409, "CONFLICT".into()));
    assert_eq!(api.post("/content/posts", &json!({"slug": "s", "locale": "de", "data": {"title": "c"}})).status, 201);
}

#[test]
fn lists_paginate_without_gaps_or_repeats() {
    let api = setup();
    for i in 0..5 {
        api.post("/content/posts", &json!({"slug": format!("p{i}"), "data": {"title": "t"}}));
    }
    let mut seen = Vec::new();
    let mut cursor: Option<String> = None;
    for _ in 0..10 {
        let path = match &cursor {
            Some(c) => format!("/content/posts?limit=2&cursor={c}"),
            None => "/content/posts?limit=2".into(),
        };
        let page = data(&api.get(&path));
        seen.extend(page["items"].as_array().unwrap().iter().map(|i| i["slug"].as_str().unwrap().to_owned()));
        match page["nextCursor"].as_str() {
            Some(c) => cursor = Some(c.to_owned()),
            None => break,
        }
    }
    seen.sort();
    assert_eq!(seen, ["p0", "p1", "p2", "p3", "p4"]);
    assert_eq!(code(&api.get("/content/posts?cursor=%25%25%25")), "INVALID_CURSOR");
    assert_eq!(code(&api.get("/content/posts?limit=0")), "VALIDATION_ERROR");
}
