//! Ownership (EmDash's RBAC): below editor a token changes only the entries it created; editors
//! and admins change any entry; a permanent delete needs admin. Through the API handlers, and
//! each SQL ownership predicate on its own at the repository level.

use futures::executor::block_on;
use media_usage_worker::model::collection::Collection;
use media_usage_worker::model::content::rev_token;
use media_usage_worker::model::ident::Ident;
use media_usage_worker::repo::content::{self as repo, Transition, Update};
use media_usage_worker::repo::schema;
use serde_json::{json, Value as Json};

use crate::support::{code, data, Api, ADMIN};

const SCOPES: &[&str] = &["content:read", "content:write"];

fn setup() -> Api {
    let api = Api::new();
    let fields = json!([{"slug": "title", "type": "string"}]);
    data(&api.post("/schema/collections", &json!({"slug": "posts", "label": "Posts", "fields": fields})));
    api
}

fn create(api: &Api, token: &str, slug: &str) -> Json {
    let body = json!({"slug": slug, "data": {"title": slug}}).to_string();
    data(&api.call("POST", "/content/posts", Some(token), Some(body.as_bytes())))["item"].clone()
}

/// One content write as a user makes it: (label, method, path suffix, body).
type Op = (&'static str, &'static str, &'static str, Option<Json>);

/// The writes, in the order a user might make them; `tag` keeps the new slug unique.
fn operations(tag: &str) -> Vec<Op> {
    vec![
        ("update", "PUT", "", Some(json!({"data": {"title": "changed"}}))),
        ("re-slug", "PUT", "", Some(json!({"slug": format!("moved-{tag}")}))),
        ("draft", "PUT", "", Some(json!({"draft": true, "data": {"title": "draft"}}))),
        ("discard draft", "POST", "/discard-draft", None),
        ("draft again", "PUT", "", Some(json!({"draft": true, "data": {"title": "draft"}}))),
        ("publish", "POST", "/publish", None),
        ("unpublish", "POST", "/unpublish", None),
        ("trash", "DELETE", "", None),
        ("restore", "POST", "/restore", None),
        ("permanent delete", "DELETE", "?permanent=true", None),
    ]
}

fn run(api: &Api, token: &str, id: &str, op: &Op) -> (u16, String) {
    let (_, method, suffix, body) = op;
    let body = body.as_ref().map(Json::to_string);
    let r = api.call(method, &format!("/content/posts/{id}{suffix}"), Some(token), body.as_deref().map(str::as_bytes));
    (r.status, code(&r))
}

/// Another author token (named `b`, so `token_id(api, "author")` still finds the first).
fn second_author(api: &Api) -> String {
    let body = json!({"name": "b", "role": "author", "scopes": SCOPES}).to_string();
    data(&api.call("POST", "/admin/tokens", Some(ADMIN), Some(body.as_bytes())))["token"].as_str().unwrap().to_owned()
}

fn version(api: &Api, id: &str) -> i64 {
    data(&api.get(&format!("/content/posts/{id}")))["item"]["version"].as_i64().unwrap()
}

fn token_id(api: &Api, name: &str) -> String {
    let list = data(&api.get("/admin/tokens"));
    let t = list["items"].as_array().unwrap().iter().find(|t| t["name"] == name).unwrap();
    t["id"].as_str().unwrap().to_owned()
}

#[test]
fn entries_record_their_author() {
    let api = setup();
    let author = api.token("author", SCOPES);
    let mine = create(&api, &author, "mine");
    assert_eq!(mine["authorId"], token_id(&api, "author").as_str());
    assert_eq!(create(&api, ADMIN, "admins")["authorId"], "bootstrap");
    let listed = data(&api.get("/content/posts"));
    assert!(listed["items"].as_array().unwrap().iter().any(|i| i["authorId"] == mine["authorId"]));
}

#[test]
fn the_ownership_matrix() {
    let api = setup();
    let a = api.token("author", SCOPES);
    let b = second_author(&api);
    let editor = api.token("editor", SCOPES);
    let admin = api.token("admin", SCOPES);
    // (who, what each operation answers, in the order of `operations()`), on an entry by A.
    let ok = (200, String::new());
    let forbidden = (403, "FORBIDDEN".to_owned());
    let cases = [
        ("author A (own)", &a, [&ok, &ok, &ok, &ok, &ok, &ok, &ok, &ok, &ok, &forbidden]),
        ("author B (other's)", &b, [&forbidden; 10]),
        ("editor", &editor, [&ok, &ok, &ok, &ok, &ok, &ok, &ok, &ok, &ok, &forbidden]),
        ("admin", &admin, [&ok; 10]),
    ];
    for (who, token, expected) in cases {
        let id = create(&api, &a, who)["id"].as_str().unwrap().to_owned();
        for (op, want) in operations(who).iter().zip(expected) {
            let before = api.get(&format!("/content/posts/{id}")).body_json()["data"]["item"].clone();
            let got = run(&api, token, &id, op);
            assert_eq!(&got, want, "{who}: {}", op.0);
            if got.0 == 403 {
                let after = api.get(&format!("/content/posts/{id}")).body_json()["data"]["item"].clone();
                assert_eq!(after, before, "{who}: a refused {} changed nothing", op.0);
            }
        }
    }
}

#[test]
fn a_refused_write_is_forbidden_whatever_state_the_entry_is_in() {
    let api = setup();
    let a = api.token("author", SCOPES);
    let b = second_author(&api);
    let id = create(&api, &a, "draft-one")["id"].as_str().unwrap().to_owned();
    // Already a draft, not trashed: a no-op for the owner, still 403 for another author.
    for op in operations("x").iter().filter(|o| ["unpublish", "restore", "discard draft"].contains(&o.0)) {
        assert_eq!(run(&api, &a, &id, op), (200, String::new()), "owner: {}", op.0);
        assert_eq!(run(&api, &b, &id, op), (403, "FORBIDDEN".into()), "other: {}", op.0);
    }
    // A stale `_rev` from another author: 403, not 409.
    let stale = json!({"data": {"title": "x"}, "_rev": rev_token(0)}).to_string();
    let r = api.call("PUT", &format!("/content/posts/{id}"), Some(&b), Some(stale.as_bytes()));
    assert_eq!((r.status, code(&r)), (403, "FORBIDDEN".into()), "{}", r.body);
    // A missing entry stays 404.
    let r = api.call("POST", "/content/posts/nope/publish", Some(&b), None);
    assert_eq!(r.status, 404);
}

#[test]
fn entries_without_an_author_are_for_editors_and_admins() {
    let api = setup();
    let a = api.token("author", SCOPES);
    let editor = api.token("editor", SCOPES);
    let id = create(&api, &a, "legacy")["id"].as_str().unwrap().to_owned();
    api.db.connection().execute("UPDATE ec_posts SET author_id = NULL", []).unwrap();
    let v = version(&api, &id);
    for op in operations("x").iter().take(9) {
        assert_eq!(run(&api, &a, &id, op), (403, "FORBIDDEN".into()), "author: {}", op.0);
    }
    assert_eq!(version(&api, &id), v, "nothing was written");
    for op in operations("x").iter().take(9) {
        assert_eq!(run(&api, &editor, &id, op).0, 200, "editor: {}", op.0);
    }
}

/// Each write statement's ownership predicate on its own: the API checks ownership before some
/// writes too, so these call the repository as a racing request would.
#[test]
fn every_write_statement_holds_its_ownership_predicate() {
    let api = setup();
    let a = api.token("author", SCOPES);
    let me = token_id(&api, "author");
    let c: Collection = block_on(schema::find(&api.db, &Ident::parse("posts").unwrap())).unwrap().unwrap();
    let entry = create(&api, &a, "guarded");
    let id = entry["id"].as_str().unwrap().to_owned();
    api.db
        .connection()
        .execute("INSERT INTO revisions (id, collection, entry_id, data) VALUES ('d', 'posts', ?1, '{}')", [&id])
        .unwrap();
    let v = |api: &Api| version(api, &id);
    for owner in ["someone-else", me.as_str()] {
        let mine = owner == me;
        api.db.connection().execute("UPDATE ec_posts SET deleted_at = NULL", []).unwrap();
        let before = v(&api);
        let update = Update { only_own: Some(owner.into()), slug: Some(format!("u-{owner}")), ..Update::default() };
        assert_eq!(block_on(repo::update(&api.db, &c, &id, update)).unwrap().is_some(), mine, "update as {owner}");
        let draft = json!({"title": "d"});
        let version = v(&api);
        let saved = block_on(repo::save_draft(&api.db, &c, &id, version, Some(owner), &draft, 20)).unwrap();
        assert_eq!(saved.is_some(), mine, "draft as {owner}");
        let version = v(&api);
        let published =
            block_on(repo::publish(&api.db, &c, &id, version, Some(owner), repo::Publication::default())).unwrap();
        assert_eq!(published.is_some(), mine, "publish as {owner}");
        for t in [Transition::Unpublish, Transition::DiscardDraft, Transition::Trash, Transition::Restore] {
            // Put the entry where the transition would apply.
            let set = match t {
                Transition::Unpublish => "status = 'published'",
                Transition::DiscardDraft => "draft_revision_id = 'd'",
                Transition::Trash => "deleted_at = NULL",
                Transition::Restore => "deleted_at = '2026-01-01T00:00:00.000Z'",
            };
            api.db.connection().execute(&format!("UPDATE ec_posts SET {set}"), []).unwrap();
            let done = block_on(repo::transition(&api.db, &c, &id, t, Some(owner))).unwrap();
            assert_eq!(done.is_some(), mine, "{t:?} as {owner}");
        }
        if mine {
            // The owner's own discard: its draft is gone.
            assert_eq!(block_on(repo::get(&api.db, &c, &id)).unwrap().unwrap()["draft_revision_id"], Json::Null);
        } else {
            assert_eq!(v(&api), before, "nothing written for another author");
        }
    }
}
