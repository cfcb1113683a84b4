//! Token lineage (`createdBy`, expiry capped at the minter's, cascade revoke), mint refusals and
//! the bootstrap secret's rules.

use media_usage_worker::api::{self, Config, Response};
use media_usage_worker::exec::Executor;
use media_usage_worker::model::auth::{bootstrap_hash, Role, Scope};
use media_usage_worker::repo::tokens::{self as repo, MintRefused, NewToken};
use serde_json::{json, Value as Json};

use crate::deletion::Hooked;
use crate::support::{code, config, data, now, query_plan as plan, scalar, text, Api, ADMIN};

fn count_tokens(api: &Api) -> i64 {
    scalar(&api.db, "SELECT count(*) FROM _emdash_api_tokens")
}

/// Calls the API on any executor as the bearer of `token`.
fn call_on<E: Executor>(
    exec: &E,
    config: &Config,
    method: &str,
    path: &str,
    token: &str,
    body: Option<&Json>,
) -> Response {
    let body = body.map(|b| b.to_string().into_bytes());
    let req = crate::support::request(method, path, Some(token), body.as_deref());
    now(api::handle(exec, config, &req))
}

/// A minted token: its id and secret.
struct Minted {
    id: String,
    secret: String,
    item: Json,
}

/// `POST /admin/tokens` as `by` (a secret); panics unless it answers 201.
fn mint(api: &Api, by: &str, body: Json) -> Minted {
    let r = api.call("POST", "/admin/tokens", Some(by), Some(body.to_string().as_bytes()));
    let item = data(&r);
    assert_eq!(r.status, 201, "{}", r.body);
    Minted { id: item["id"].as_str().unwrap().to_owned(), secret: item["token"].as_str().unwrap().to_owned(), item }
}

fn admin_body(name: &str, expires_at: Option<&str>) -> Json {
    let mut body = json!({"name": name, "role": "admin", "scopes": ["admin", "media:read"]});
    if let Some(e) = expires_at {
        body["expiresAt"] = json!(e);
    }
    body
}

fn listed(api: &Api) -> Vec<Json> {
    data(&api.get("/admin/tokens?limit=100"))["items"].as_array().unwrap().clone()
}

fn listed_one(api: &Api, id: &str) -> Option<Json> {
    listed(api).into_iter().find(|t| t["id"] == id)
}

fn works(api: &Api, secret: &str) -> bool {
    let r = api.call("GET", "/media", Some(secret), None);
    assert!(r.status == 200 || code(&r) == "UNAUTHORIZED", "{}", r.body);
    r.status == 200
}

#[test]
fn a_minted_token_never_outlives_its_minter_and_the_bootstrap_token_is_uncapped() {
    let api = Api::new();
    // The bootstrap token: no cap, with or without an expiry; `createdBy` says `bootstrap`.
    let forever = mint(&api, ADMIN, admin_body("forever", None));
    assert_eq!(
        (forever.item["expiresAt"].clone(), forever.item["createdBy"].clone()),
        (Json::Null, json!("bootstrap"))
    );
    let parent = mint(&api, ADMIN, admin_body("parent", Some("2999-06-01T00:00:00Z")));
    assert_eq!(parent.item["expiresAt"], "2999-06-01T00:00:00.000Z");
    assert_eq!(parent.item["createdBy"], "bootstrap");

    // No expiry asked: the minter's. A later one: lowered to the minter's. An earlier one: kept.
    let default = mint(&api, &parent.secret, admin_body("default", None));
    assert_eq!(default.item["expiresAt"], "2999-06-01T00:00:00.000Z");
    assert_eq!(default.item["createdBy"], parent.id.as_str());
    let later = mint(&api, &parent.secret, admin_body("later", Some("3000-01-01T00:00:00Z")));
    assert_eq!(later.item["expiresAt"], "2999-06-01T00:00:00.000Z", "the reply shows the stored value");
    assert_eq!(
        text(&api.db, &format!("SELECT expires_at FROM _emdash_api_tokens WHERE id = '{}'", later.id)).as_deref(),
        Some("2999-06-01T00:00:00.000Z")
    );
    let earlier = mint(&api, &parent.secret, admin_body("earlier", Some("2999-01-01T00:00:00+02:00")));
    assert_eq!(earlier.item["expiresAt"], "2998-12-31T22:00:00.000Z");
    // A grandchild is capped by its own minter (the earlier child).
    let grandchild = mint(&api, &earlier.secret, admin_body("grandchild", Some("2999-03-01T00:00:00Z")));
    assert_eq!(grandchild.item["expiresAt"], "2998-12-31T22:00:00.000Z");
    assert_eq!(grandchild.item["createdBy"], earlier.id.as_str());

    // A minter that never expires passes no cap on.
    let open = mint(&api, &forever.secret, admin_body("open", None));
    assert_eq!((open.item["expiresAt"].clone(), open.item["createdBy"].clone()), (Json::Null, json!(forever.id)));
    let dated = mint(&api, &forever.secret, admin_body("dated", Some("3100-01-01T00:00:00Z")));
    assert_eq!(dated.item["expiresAt"], "3100-01-01T00:00:00.000Z");

    // The list shows who minted each token.
    for t in [&forever, &parent, &default, &later, &earlier, &grandchild, &open, &dated] {
        let item = listed_one(&api, &t.id).unwrap();
        assert_eq!(item["createdBy"], t.item["createdBy"], "{item}");
        assert_eq!(item["expiresAt"], t.item["expiresAt"], "{item}");
    }
    // A past or unreadable expiry is still a 400, whoever mints.
    for bad in ["2000-01-01T00:00:00Z", "9999-99-99T00:00:00Z"] {
        let r = api.call(
            "POST",
            "/admin/tokens",
            Some(&parent.secret),
            Some(admin_body("bad", Some(bad)).to_string().as_bytes()),
        );
        assert_eq!((r.status, code(&r)), (400, "VALIDATION_ERROR".into()), "{bad}: {}", r.body);
    }
}

#[test]
fn the_cap_is_read_from_the_minters_row_when_the_token_is_inserted() {
    let api = Api::new();
    let parent = mint(&api, ADMIN, admin_body("parent", Some("2999-06-01T00:00:00Z")));
    let count = count_tokens(&api);
    // The minter's expiry is moved earlier after authentication read its row.
    let hooked = Hooked::new(&api.db).before("INSERT INTO _emdash_api_tokens", |db| {
        db.connection()
            .execute_batch(
                "UPDATE _emdash_api_tokens SET expires_at = '2990-01-01T00:00:00.000Z' WHERE name = 'parent'",
            )
            .unwrap();
    });
    let r = call_on(&hooked, &api.config, "POST", "/admin/tokens", &parent.secret, Some(&admin_body("child", None)));
    hooked.done();
    assert_eq!(r.status, 201, "{}", r.body);
    assert_eq!(data(&r)["expiresAt"], "2990-01-01T00:00:00.000Z");
    assert_eq!(count_tokens(&api), count + 1);
}

#[test]
fn a_minter_revoked_or_expired_before_the_insert_mints_nothing() {
    let api = Api::new();
    for (what, sql) in [
        ("revoked", "DELETE FROM _emdash_api_tokens WHERE name = 'minter'"),
        ("expired", "UPDATE _emdash_api_tokens SET expires_at = '2000-01-01T00:00:00.000Z' WHERE name = 'minter'"),
    ] {
        for expires_at in [None, Some("2999-01-01T00:00:00Z")] {
            api.db.connection().execute_batch("DELETE FROM _emdash_api_tokens").unwrap();
            let minter = mint(&api, ADMIN, admin_body("minter", None));
            let hooked = Hooked::new(&api.db).before("INSERT INTO _emdash_api_tokens", |db| {
                db.connection().execute_batch(sql).unwrap();
            });
            let body = admin_body("orphan", expires_at);
            let r = call_on(&hooked, &api.config, "POST", "/admin/tokens", &minter.secret, Some(&body));
            hooked.done();
            assert_eq!((r.status, code(&r)), (401, "UNAUTHORIZED".into()), "{what} {expires_at:?}: {}", r.body);
            assert_eq!(scalar(&api.db, "SELECT count(*) FROM _emdash_api_tokens WHERE name = 'orphan'"), 0, "{what}");
        }
    }
}

#[test]
fn the_insert_itself_checks_the_minter_and_caps_the_expiry() {
    // The repository statement alone, without authentication in front of it.
    let api = Api::new();
    let parent = mint(&api, ADMIN, admin_body("parent", Some("2999-06-01T00:00:00Z")));
    let insert = |minted_by: &str, expires_at: Option<&str>| {
        let hash = media_usage_worker::ids::new_secret();
        let new = NewToken {
            name: "n",
            hash_hex: &hash,
            role: Role::Subscriber,
            scopes: &[Scope::MediaRead],
            expires_at,
            minted_by,
        };
        now(repo::insert(&api.db, &new)).unwrap()
    };
    let child = insert(&parent.id, Some("3000-01-01T00:00:00Z")).unwrap();
    assert_eq!(child.expires_at.as_deref(), Some("2999-06-01T00:00:00.000Z"));
    assert_eq!(child.created_by.as_deref(), Some(parent.id.as_str()));
    assert_eq!(
        insert("bootstrap", Some("3000-01-01T00:00:00Z")).unwrap().expires_at.as_deref(),
        Some("3000-01-01T00:00:00.000Z")
    );
    assert_eq!(insert("no-such-token", None).unwrap_err(), MintRefused::MinterGone);
    assert_eq!(insert("no-such-token", Some("2000-01-01T00:00:00Z")).unwrap_err(), MintRefused::BadExpiry);
    assert_eq!(insert(&parent.id, Some("2000-01-01T00:00:00Z")).unwrap_err(), MintRefused::BadExpiry);
    api.db
        .connection()
        .execute_batch("UPDATE _emdash_api_tokens SET expires_at = '2000-01-01T00:00:00.000Z' WHERE name = 'parent'")
        .unwrap();
    assert_eq!(insert(&parent.id, None).unwrap_err(), MintRefused::MinterGone);
    assert_eq!(scalar(&api.db, "SELECT count(*) FROM _emdash_api_tokens WHERE name = 'n'"), 2);
}

#[test]
fn a_cascade_revoke_takes_the_whole_tree_and_nothing_else() {
    let api = Api::new();
    let root = mint(&api, ADMIN, admin_body("root", None));
    let child = mint(&api, &root.secret, admin_body("child", None));
    let grandchild = mint(&api, &child.secret, admin_body("grandchild", None));
    let great = mint(&api, &grandchild.secret, admin_body("great", None));
    let second = mint(&api, &root.secret, admin_body("second", None));
    // Not in the tree: a sibling of the root and what it minted.
    let sibling = mint(&api, ADMIN, admin_body("sibling", None));
    let nephew = mint(&api, &sibling.secret, admin_body("nephew", None));
    for t in [&root, &child, &grandchild, &great, &second, &sibling, &nephew] {
        assert!(works(&api, &t.secret));
    }
    let r = api.delete(&format!("/admin/tokens/{}?cascade=true", root.id));
    assert_eq!(data(&r), json!({"id": root.id, "revoked": 5}));
    for t in [&root, &child, &grandchild, &great, &second] {
        assert!(!works(&api, &t.secret), "{} still works", t.item["name"]);
        assert!(listed_one(&api, &t.id).is_none());
    }
    for t in [&sibling, &nephew] {
        assert!(works(&api, &t.secret), "{} was revoked", t.item["name"]);
    }
    // `cascade=1` too; from the middle of a tree, only its subtree goes.
    let a = mint(&api, &sibling.secret, admin_body("a", None));
    let b = mint(&api, &a.secret, admin_body("b", None));
    assert_eq!(data(&api.delete(&format!("/admin/tokens/{}?cascade=1", a.id)))["revoked"], 2);
    assert!(!works(&api, &b.secret) && works(&api, &sibling.secret) && works(&api, &nephew.secret));
    // Unknown ids are 404 with or without cascade; the flag is strict.
    for q in ["?cascade=true", "?cascade=false", ""] {
        let r = api.delete(&format!("/admin/tokens/{}{q}", root.id));
        assert_eq!((r.status, code(&r)), (404, "NOT_FOUND".into()), "{q}");
    }
    let r = api.delete(&format!("/admin/tokens/{}?cascade=yes", sibling.id));
    assert_eq!((r.status, code(&r)), (400, "VALIDATION_ERROR".into()));
    assert!(works(&api, &sibling.secret));
}

#[test]
fn a_plain_revoke_leaves_the_tokens_minted_from_it() {
    let api = Api::new();
    let parent = mint(&api, ADMIN, admin_body("parent", None));
    let child = mint(&api, &parent.secret, admin_body("child", None));
    let grandchild = mint(&api, &child.secret, admin_body("grandchild", None));
    for q in ["", "?cascade=false", "?cascade=0"] {
        let t = mint(&api, ADMIN, admin_body("t", None));
        let u = mint(&api, &t.secret, admin_body("u", None));
        assert_eq!(data(&api.delete(&format!("/admin/tokens/{}{q}", t.id))), json!({"id": t.id, "revoked": 1}), "{q}");
        assert!(works(&api, &u.secret), "{q}");
    }
    assert_eq!(data(&api.delete(&format!("/admin/tokens/{}", parent.id)))["revoked"], 1);
    assert!(!works(&api, &parent.secret));
    assert!(works(&api, &child.secret) && works(&api, &grandchild.secret));
    assert_eq!(listed_one(&api, &child.id).unwrap()["createdBy"], parent.id.as_str(), "the lineage stays recorded");
    // A cascade from the child still takes its own subtree.
    assert_eq!(data(&api.delete(&format!("/admin/tokens/{}?cascade=true", child.id)))["revoked"], 2);
    assert!(!works(&api, &grandchild.secret));
}

#[test]
fn a_scope_escalation_is_insufficient_scope_and_mints_nothing() {
    // (A role escalation cannot reach the handler through the route: only admins may mint, and
    // no role is above admin. `api::tokens`' unit tests call the handler as an editor.)
    let api = Api::new();
    let narrow = api.token("admin", &["admin", "media:read"]);
    let count = count_tokens(&api);
    let r = api.call(
        "POST",
        "/admin/tokens",
        Some(&narrow),
        Some(json!({"name": "x", "role": "editor", "scopes": ["media:read", "media:write"]}).to_string().as_bytes()),
    );
    assert_eq!((r.status, code(&r)), (403, "INSUFFICIENT_SCOPE".into()), "{}", r.body);
    assert!(r.body.contains("media:write"), "{}", r.body);
    assert_eq!(count_tokens(&api), count, "nothing minted");
}

#[test]
fn no_token_statement_scans_the_tokens_table() {
    let api = Api::new();
    // Many tokens in long chains, so the planner has a table worth indexing.
    api.db
        .connection()
        .execute_batch(
            "WITH RECURSIVE c(i) AS (SELECT 0 UNION ALL SELECT i + 1 FROM c WHERE i < 5000)
             INSERT INTO _emdash_api_tokens (id, name, token_hash, role, scopes, created_by)
             SELECT 't' || i, 'n', 'h' || i, 50, '[\"admin\"]', CASE WHEN i % 10 = 0 THEN 'bootstrap' ELSE 't' || (i - 1) END
             FROM c;
             ANALYZE;",
        )
        .unwrap();
    for sql in [
        include_str!("../../src/sql/tokens/insert.sql"),
        include_str!("../../src/sql/tokens/delete_tree.sql"),
        include_str!("../../src/sql/tokens/delete.sql"),
        include_str!("../../src/sql/tokens/find_by_hash.sql"),
        include_str!("../../src/sql/tokens/touch.sql"),
        include_str!("../../src/sql/tokens/list.sql"),
    ] {
        let lines = plan(&api.db, sql);
        let scans: Vec<&String> = lines
            .iter()
            .filter(|d| {
                d.starts_with("SCAN")
                    && ["_emdash_api_tokens", "minter", "child"]
                        .iter()
                        .any(|t| *d == &format!("SCAN {t}") || d.starts_with(&format!("SCAN {t} ")))
            })
            .filter(|d| !d.contains("USING INDEX idx__emdash_api_tokens_list"))
            .collect();
        assert!(scans.is_empty(), "{sql}\n{lines:#?}");
    }
    let tree = plan(&api.db, include_str!("../../src/sql/tokens/delete_tree.sql"));
    assert!(tree.iter().any(|d| d.contains("idx__emdash_api_tokens_created_by")), "{tree:#?}");
    // A cascade down a chain of 10 takes exactly that chain.
    assert_eq!(now(repo::delete_tree(&api.db, "t4990")).unwrap(), 10);
    assert_eq!(scalar(&api.db, "SELECT count(*) FROM _emdash_api_tokens"), 4991);
}

/// A deployment whose bootstrap secret is `secret` (as the edge reads it).
fn config_with_secret(secret: &str) -> Config {
    Config { admin_token_hash: bootstrap_hash(secret).ok(), ..config() }
}

#[test]
fn a_bootstrap_secret_shorter_than_32_characters_is_ignored_and_a_long_one_is_trimmed() {
    let short = "short-secret-0123456789";
    let api = Api { config: config_with_secret(short), ..Api::new() };
    for token in [short, " short-secret-0123456789 "] {
        let r = api.call("GET", "/schema/collections", Some(token), None);
        assert_eq!((r.status, code(&r)), (401, "UNAUTHORIZED".into()), "{}", r.body);
    }
    let r = api.call("POST", "/admin/tokens", Some(short), Some(admin_body("x", None).to_string().as_bytes()));
    assert_eq!((r.status, code(&r)), (401, "UNAUTHORIZED".into()));
    assert_eq!(count_tokens(&api), 0);
    // 31 characters after trimming: still ignored; 32: accepted, however it was padded.
    let thirty_one = "0123456789abcdef0123456789abcde";
    let api = Api { config: config_with_secret(&format!("  {thirty_one}\n")), ..Api::new() };
    assert_eq!(api.call("GET", "/schema/collections", Some(thirty_one), None).status, 401);
    let long = "0123456789abcdef0123456789abcdef";
    let api = Api { config: config_with_secret(&format!("\t{long}  \n")), ..Api::new() };
    assert_eq!(api.call("GET", "/schema/collections", Some(long), None).status, 200);
    assert_eq!(api.call("GET", "/schema/collections", Some(&format!("  {long} ")), None).status, 200);
    assert_eq!(mint(&api, long, admin_body("x", None)).item["createdBy"], "bootstrap");
    // The test deployment's own secret is long enough.
    assert!(bootstrap_hash(ADMIN).is_ok());
}
