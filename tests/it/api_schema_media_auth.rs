//! Collections, fields, media, tokens and the auth matrix through the pure API handlers.

use serde_json::json;

use crate::support::{code, data, Api, ADMIN};

#[test]
fn collections_are_created_with_their_table_and_refuse_duplicates() {
    let api = Api::new();
    let body = json!({"slug": "pages", "label": "Pages", "fields": [{"slug": "body", "type": "portableText"}]});
    let created = data(&api.post("/schema/collections", &body));
    assert_eq!(created["item"]["fields"][0]["type"], "portableText");
    let dup = api.post("/schema/collections", &body);
    assert_eq!((dup.status, code(&dup)), (409, "COLLECTION_EXISTS".into()));
    let n: i64 = api
        .db
        .connection()
        .query_row("SELECT count(*) FROM sqlite_master WHERE name = 'ec_pages'", [], |r| r.get(0))
        .unwrap();
    assert_eq!(n, 1);
}

#[test]
fn bad_slugs_and_bodies_are_rejected_with_details() {
    let api = Api::new();
    for slug in ["Bad-Slug", "posts\";drop", "", "x y"] {
        let r = api.post("/schema/collections", &json!({"slug": slug, "label": "L"}));
        assert_eq!((r.status, code(&r)), (400, "VALIDATION_ERROR".into()), "{slug}");
        assert_eq!(r.body_json()["error"]["details"]["issues"][0]["path"], "slug");
    }
    let r = api.post("/schema/collections", &json!({"slug": "ok", "label": "L", "extra": 1}));
    assert_eq!(code(&r), "VALIDATION_ERROR");
    let r = api.call("POST", "/schema/collections", Some(ADMIN), Some(b"{not json"));
    assert_eq!(code(&r), "INVALID_JSON");
    let r = api.post(
        "/schema/collections",
        &json!({"slug": "ok", "label": "L", "fields": [{"slug": "status", "type": "string"}]}),
    );
    assert_eq!(r.body_json()["error"]["details"]["issues"][0]["path"], "fields[0].slug");
    let r = api.get("/schema/collections/Bad-Slug");
    assert_eq!(code(&r), "VALIDATION_ERROR");
    let r = api.get("/schema/collections/missing");
    assert_eq!(code(&r), "COLLECTION_NOT_FOUND");
}

#[test]
fn fields_can_be_added_and_collections_deleted() {
    let api = Api::new();
    data(&api.post("/schema/collections", &json!({"slug": "docs", "label": "Docs"})));
    let f = api.post("/schema/collections/docs/fields", &json!({"slug": "attachment", "type": "file"}));
    assert_eq!(f.status, 201, "{}", f.body);
    let dup = api.post("/schema/collections/docs/fields", &json!({"slug": "attachment", "type": "file"}));
    assert_eq!(code(&dup), "CONFLICT");
    data(&api.post("/content/docs", &json!({"slug": "d", "data": {"attachment": "f1"}})));
    let refused = api.delete("/schema/collections/docs");
    assert_eq!((refused.status, code(&refused)), (400, "COLLECTION_HAS_CONTENT".into()));
    let forced = api.call("DELETE", "/schema/collections/docs?force=true", Some(ADMIN), None);
    assert_eq!(forced.status, 200, "{}", forced.body);
    assert_eq!(code(&api.get("/schema/collections/docs")), "COLLECTION_NOT_FOUND");
}

#[test]
fn media_metadata_round_trips_and_deletes() {
    let api = Api::new();
    let size = (1i64 << 33) + 5;
    let m = data(&api.post(
        "/media",
        &json!({"filename": "a.jpg", "mimeType": "image/jpeg", "size": size, "storageKey": "uploads/a.jpg"}),
    ));
    let id = m["item"]["id"].as_str().unwrap().to_owned();
    assert_eq!(data(&api.get(&format!("/media/{id}")))["item"]["size"], size);
    let dup =
        api.post("/media", &json!({"filename": "b.jpg", "mimeType": "image/jpeg", "storageKey": "uploads/a.jpg"}));
    assert_eq!(code(&dup), "CONFLICT");
    assert_eq!(data(&api.delete(&format!("/media/{id}")))["deleted"], true);
    assert_eq!(api.get(&format!("/media/{id}")).status, 404);
}

#[test]
fn the_auth_matrix_separates_401_forbidden_and_insufficient_scope() {
    let api = Api::new();
    assert_eq!(code(&api.call("GET", "/media", None, None)), "UNAUTHORIZED");
    assert_eq!(code(&api.call("GET", "/media", Some("nope"), None)), "UNAUTHORIZED");
    let subscriber = api.token("subscriber", &["media:read", "schema:read"]);
    assert_eq!(api.call("GET", "/media", Some(&subscriber), None).status, 200);
    assert_eq!(code(&api.call("GET", "/schema/collections", Some(&subscriber), None)), "FORBIDDEN");
    let editor_no_scope = api.token("editor", &["content:read"]);
    assert_eq!(code(&api.call("GET", "/media", Some(&editor_no_scope), None)), "INSUFFICIENT_SCOPE");
    let editor_admin_scope = api.token("editor", &["admin"]);
    let r = api.call("POST", "/admin/tokens", Some(&editor_admin_scope), Some(b"{}"));
    assert_eq!(code(&r), "FORBIDDEN");
    let admin_wrong_scope = api.token("admin", &["content:read"]);
    let r = api.call("POST", "/admin/tokens", Some(&admin_wrong_scope), Some(b"{}"));
    assert_eq!(code(&r), "INSUFFICIENT_SCOPE");
    let r = api.call("GET", "/health", None, None);
    assert_eq!(r.status, 200);
    assert!(r.no_store);
}

#[test]
fn internal_errors_are_opaque() {
    let api = Api::new();
    data(&api.post("/schema/collections", &json!({"slug": "x", "label": "X"})));
    api.db.connection().execute_batch("ALTER TABLE ec_x RENAME COLUMN deleted_at TO gone").unwrap();
    let r = api.get("/content/x");
    assert_eq!(r.status, 500);
    assert_eq!(code(&r), "INTERNAL_ERROR");
    assert!(!r.body.to_lowercase().contains("column"), "{}", r.body);
    assert!(r.cause.as_deref().is_some_and(|c| c.contains("no such column")));
    // A content table dropped under a request (a collection deletion) is not an internal error.
    api.db.connection().execute_batch("DROP TABLE ec_x").unwrap();
    let r = api.get("/content/x");
    assert_eq!((r.status, code(&r)), (404, "COLLECTION_NOT_FOUND".into()), "{}", r.body);
}
