//! Safe media delete: refused while in use or while coverage cannot prove the media unused.

use serde_json::json;

use crate::support::{code, data, Api, ADMIN};

fn setup() -> Api {
    let api = Api::new();
    data(&api.post(
        "/schema/collections",
        &json!({"slug": "posts", "label": "Posts", "fields": [{"slug": "hero", "type": "image"}]}),
    ));
    api
}

fn media(api: &Api, key: &str) -> String {
    let r = api.post("/media", &json!({"filename": key, "mimeType": "image/png", "storageKey": key}));
    data(&r)["item"]["id"].as_str().unwrap().to_owned()
}

fn entry(api: &Api, slug: &str, hero: &str) -> String {
    let r = api.post("/content/posts", &json!({"slug": slug, "status": "published", "data": {"hero": hero}}));
    data(&r)["item"]["id"].as_str().unwrap().to_owned()
}

#[test]
fn unused_media_with_complete_coverage_is_deleted() {
    let api = setup();
    let m = media(&api, "a.png");
    entry(&api, "other", "someone-else");
    assert_eq!(data(&api.delete(&format!("/media/{m}")))["deleted"], true);
    // In the trash; a retry (its first try committed unseen) answers as the first did.
    assert!(data(&api.get(&format!("/media/{m}")))["item"]["deletedAt"].is_string());
    assert_eq!(data(&api.delete(&format!("/media/{m}")))["deleted"], true);
    assert_eq!(data(&api.delete(&format!("/media/{m}?permanent=true")))["deleted"], true);
    assert_eq!(code(&api.delete(&format!("/media/{m}"))), "NOT_FOUND");
}

#[test]
fn media_in_use_is_refused_with_the_entries_that_use_it() {
    let api = setup();
    let m = media(&api, "b.png");
    let a = entry(&api, "a", &m);
    let t = entry(&api, "t", &m);
    data(&api.delete(&format!("/content/posts/{t}"))); // trashed entries still count
    let r = api.delete(&format!("/media/{m}"));
    assert_eq!((r.status, code(&r)), (409, "MEDIA_IN_USE".into()));
    let details = r.body_json()["error"]["details"].clone();
    assert_eq!(details["count"], 2);
    let ids: Vec<&str> =
        details["entries"].as_array().unwrap().iter().map(|e| e["contentId"].as_str().unwrap()).collect();
    assert!(ids.contains(&a.as_str()) && ids.contains(&t.as_str()));
    assert_eq!(details["entries"][0]["collection"], "posts");
    assert!(details["entries"][0]["slug"].is_string());
    assert_eq!(api.get(&format!("/media/{m}")).status, 200, "nothing was deleted");
}

#[test]
fn at_most_ten_entries_are_listed_but_all_are_counted() {
    let api = setup();
    let m = media(&api, "c.png");
    for i in 0..12 {
        entry(&api, &format!("e{i}"), &m);
    }
    let r = api.delete(&format!("/media/{m}"));
    let details = r.body_json()["error"]["details"].clone();
    assert_eq!(details["count"], 12);
    assert_eq!(details["entries"].as_array().unwrap().len(), 10);
}

#[test]
fn incomplete_coverage_refuses_even_unreferenced_media() {
    let api = setup();
    let m = media(&api, "d.png");
    let id = entry(&api, "x", "other");
    // A write not yet projected: coverage is stale until the work row is processed.
    api.db.connection().execute_batch(&format!("UPDATE ec_posts SET hero = '{m}' WHERE id = '{id}'")).unwrap();
    let r = api.delete(&format!("/media/{m}"));
    assert_eq!((r.status, code(&r)), (409, "MEDIA_USAGE_COVERAGE_INCOMPLETE".into()));
    assert_eq!(r.body_json()["error"]["details"]["coverage"]["status"], "stale");
    assert_eq!(api.get(&format!("/media/{m}")).status, 200);
}

#[test]
fn force_is_for_admins_and_deletes_regardless() {
    let api = setup();
    let m = media(&api, "e.png");
    entry(&api, "a", &m);
    let editor = api.token("editor", &["media:write", "media:read"]);
    let r = api.call("DELETE", &format!("/media/{m}?force=true"), Some(&editor), None);
    assert_eq!((r.status, code(&r)), (403, "FORBIDDEN".into()));
    let r = api.call("DELETE", &format!("/media/{m}"), Some(&editor), None);
    assert_eq!(code(&r), "MEDIA_IN_USE");
    let r = api.call("DELETE", &format!("/media/{m}?force=true"), Some(ADMIN), None);
    assert_eq!(data(&r)["deleted"], true);
}

#[test]
fn in_use_wins_over_incomplete_coverage_and_force_still_needs_the_scope() {
    let api = setup();
    let m = media(&api, "f.png");
    let id = entry(&api, "a", &m);
    // Coverage incomplete as well: a captured write not yet projected.
    api.db.connection().execute_batch(&format!("UPDATE ec_posts SET slug = 'b' WHERE id = '{id}'")).unwrap();
    assert_eq!(code(&api.delete(&format!("/media/{m}"))), "MEDIA_IN_USE");
    let admin_without_scope = api.token("admin", &["media:read"]);
    let r = api.call("DELETE", &format!("/media/{m}?force=true"), Some(&admin_without_scope), None);
    assert_eq!((r.status, code(&r)), (403, "INSUFFICIENT_SCOPE".into()));
}

/// D1 as a safe delete sees it while another request trashes or deletes the same item: `meanwhile`
/// runs right before the guarded batch that would trash it.
struct BeforeTrash<'a> {
    db: &'a media_usage_worker::exec::sqlite::SqliteExecutor,
    meanwhile: String,
}

impl media_usage_worker::exec::Executor for BeforeTrash<'_> {
    async fn run(
        &self,
        stmt: media_usage_worker::exec::Statement,
    ) -> Result<media_usage_worker::exec::Outcome, media_usage_worker::exec::Error> {
        self.db.run(stmt).await
    }

    async fn batch(
        &self,
        stmts: Vec<media_usage_worker::exec::Statement>,
    ) -> Result<Vec<media_usage_worker::exec::Outcome>, media_usage_worker::exec::Error> {
        self.db.connection().execute_batch(&self.meanwhile).unwrap();
        self.db.batch(stmts).await
    }
}

#[test]
fn a_safe_delete_racing_another_answers_as_a_retry_would() {
    for (meanwhile, status) in
        [("UPDATE media SET deleted_at = '2001-01-01T00:00:00.000Z'", 200), ("DELETE FROM media", 404)]
    {
        let api = setup();
        let m = media(&api, "raced.png");
        let req = crate::support::request("DELETE", &format!("/media/{m}"), Some(ADMIN), None);
        let r = api.request_on(&BeforeTrash { db: &api.db, meanwhile: meanwhile.to_owned() }, &req);
        assert_eq!(r.status, status, "{meanwhile}: {}", r.body);
    }
}
