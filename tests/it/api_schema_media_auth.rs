//! Collections, fields, media, tokens and the auth matrix through the pure API handlers.

use media_usage_worker::api::Response;
use serde_json::json;

use crate::support::{code, data, expire_leases, now, scalar, Api, ADMIN};

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
    // It names the item holding the key (a retry after an unseen commit finds its own).
    assert_eq!(dup.body_json()["error"]["details"], json!({"id": id, "storageKey": "uploads/a.jpg"}));
    assert_eq!(data(&api.delete(&format!("/media/{id}")))["deleted"], true);
    // In the trash: still there, with when it was trashed; deleted for good on request.
    assert!(data(&api.get(&format!("/media/{id}")))["item"]["deletedAt"].is_string());
    assert_eq!(data(&api.delete(&format!("/media/{id}?permanent=true")))["deleted"], true);
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

#[test]
fn tokens_are_listed_without_secrets_revoked_at_once_and_expire() {
    let api = Api::new();
    let minted = data(&api.post(
        "/admin/tokens",
        &json!({"name": "ci", "role": "editor", "scopes": ["content:read", "media:read"], "expiresAt": "2999-01-01T00:00:00+01:00"}),
    ));
    let secret = minted["token"].as_str().unwrap().to_owned();
    let id = minted["id"].as_str().unwrap().to_owned();
    assert_eq!(minted["expiresAt"], "2998-12-31T23:00:00.000Z", "stored in the database clock's format");
    assert_eq!(api.call("GET", "/media", Some(&secret), None).status, 200);
    let list = data(&api.get("/admin/tokens"));
    let item = list["items"].as_array().unwrap().iter().find(|t| t["id"] == id.as_str()).unwrap().clone();
    assert_eq!(item["role"], "editor");
    assert_eq!(item["scopes"], json!(["content:read", "media:read"]));
    assert!(item["lastUsedAt"].is_string(), "{item}");
    let keys: Vec<&String> = item.as_object().unwrap().keys().collect();
    assert_eq!(keys.len(), 8, "{keys:?}");
    assert_eq!(item["createdBy"], "bootstrap");
    assert!(!list.to_string().contains(&secret[7..]), "never the secret");
    assert!(!list.to_string().contains("tokenHash") && !list.to_string().contains("token_hash"));
    // Revoked at once; not listed any more; a second revoke is a 404.
    assert_eq!(data(&api.delete(&format!("/admin/tokens/{id}"))), json!({"id": id, "revoked": 1}));
    assert_eq!(code(&api.call("GET", "/media", Some(&secret), None)), "UNAUTHORIZED");
    assert!(data(&api.get("/admin/tokens"))["items"].as_array().unwrap().iter().all(|t| t["id"] != id.as_str()));
    assert_eq!(
        (api.delete(&format!("/admin/tokens/{id}")).status, code(&api.delete("/admin/tokens/nope"))),
        (404, "NOT_FOUND".into())
    );
    // An expired token is refused.
    let expiring = data(&api.post(
        "/admin/tokens",
        &json!({"name": "x", "role": "editor", "scopes": ["media:read"], "expiresAt": "2999-01-01T00:00:00Z"}),
    ));
    let secret = expiring["token"].as_str().unwrap().to_owned();
    api.db
        .connection()
        .execute_batch("UPDATE _emdash_api_tokens SET expires_at = '2000-01-01T00:00:00.000Z' WHERE name = 'x'")
        .unwrap();
    assert_eq!(code(&api.call("GET", "/media", Some(&secret), None)), "UNAUTHORIZED");
    // Bad or past expiries.
    for bad in [json!("2000-01-01T00:00:00Z"), json!("2999-01-01"), json!("tomorrow"), json!(5)] {
        let r = api
            .post("/admin/tokens", &json!({"name": "x", "role": "editor", "scopes": ["media:read"], "expiresAt": bad}));
        assert_eq!((r.status, code(&r)), (400, "VALIDATION_ERROR".into()), "{bad}: {}", r.body);
    }
}

#[test]
fn a_token_never_mints_a_role_or_scope_above_its_own() {
    let api = Api::new();
    let narrow = api.token("admin", &["admin", "media:read"]);
    let mint = |token: &str, role: &str, scopes: serde_json::Value| {
        api.call(
            "POST",
            "/admin/tokens",
            Some(token),
            Some(json!({"name": "n", "role": role, "scopes": scopes}).to_string().as_bytes()),
        )
    };
    let r = mint(&narrow, "editor", json!(["media:write"]));
    assert_eq!((r.status, code(&r)), (403, "INSUFFICIENT_SCOPE".into()), "{}", r.body);
    assert_eq!(mint(&narrow, "editor", json!(["media:read"])).status, 201);
    assert_eq!(mint(&narrow, "admin", json!(["admin"])).status, 201);
    let before: i64 =
        api.db.connection().query_row("SELECT count(*) FROM _emdash_api_tokens", [], |r| r.get(0)).unwrap();
    assert_eq!(code(&mint(&narrow, "admin", json!(["admin", "schema:write"]))), "INSUFFICIENT_SCOPE");
    let after: i64 =
        api.db.connection().query_row("SELECT count(*) FROM _emdash_api_tokens", [], |r| r.get(0)).unwrap();
    assert_eq!(before, after, "nothing minted");
}

#[test]
fn last_used_is_written_at_most_once_a_minute() {
    use media_usage_worker::clock::MonotonicClock;
    use media_usage_worker::exec::meter::Metered;
    let api = Api::new();
    let t = api.token("editor", &["media:read"]);
    let writes = |api: &Api| {
        let metered = Metered::new(&api.db, MonotonicClock::default());
        let req = media_usage_worker::api::Request {
            method: "GET".into(),
            path: format!("{}/media", media_usage_worker::api::BASE_PATH),
            authorization: Some(format!("Bearer {t}")),
            ..Default::default()
        };
        assert_eq!(
            futures::executor::block_on(media_usage_worker::api::handle(&metered, &api.config, &req)).status,
            200
        );
        metered.usage().rows_written
    };
    assert!(writes(&api) > 0, "the first use is recorded");
    assert_eq!(writes(&api), 0, "a second use within the minute writes nothing");
    api.db
        .connection()
        .execute_batch(
            "UPDATE _emdash_api_tokens SET last_used_at = strftime('%Y-%m-%dT%H:%M:%fZ', 'now', '-61 seconds')",
        )
        .unwrap();
    assert!(writes(&api) > 0, "a minute later it is recorded again");
}

#[test]
fn concurrent_field_adds_cannot_pass_the_field_limit() {
    use media_usage_worker::lifecycle::{add_field, AddFieldError};
    use media_usage_worker::model::field::{Field, FieldType, MAX_FIELDS};
    use media_usage_worker::model::ident::Ident;
    let api = Api::new();
    let fields: Vec<serde_json::Value> =
        (0..MAX_FIELDS - 1).map(|i| json!({"slug": format!("f{i}"), "type": "string"})).collect();
    data(&api.post("/schema/collections", &json!({"slug": "wide", "label": "W", "fields": fields})));
    let slug = Ident::parse("wide").unwrap();
    // Two adds read the collection at 79 fields; one commits first.
    let seen = futures::executor::block_on(media_usage_worker::repo::schema::find(&api.db, &slug)).unwrap().unwrap();
    assert_eq!(seen.fields.len(), MAX_FIELDS - 1);
    data(&api.post("/schema/collections/wide/fields", &json!({"slug": "first", "type": "string"})));
    let late = Field {
        id: "late".into(),
        slug: Ident::parse("late").unwrap(),
        label: "late".into(),
        field_type: FieldType::String,
        required: false,
        sub_fields: vec![],
        sort_order: 99,
        meta: Default::default(),
    };
    let r = futures::executor::block_on(add_field(&api.db, &seen, &late));
    assert!(matches!(r, Err(AddFieldError::Conflict)), "{r:?}");
    let count: i64 = api.db.connection().query_row("SELECT count(*) FROM _emdash_fields", [], |r| r.get(0)).unwrap();
    assert_eq!(count, MAX_FIELDS as i64);
    // Through the API, the refusal names the limit.
    let r = api.post("/schema/collections/wide/fields", &json!({"slug": "more", "type": "string"}));
    assert_eq!((r.status, code(&r)), (400, "VALIDATION_ERROR".into()), "{}", r.body);
}

#[test]
fn boolean_flags_are_strict_and_integers_may_be_written_as_whole_floats() {
    let api = Api::new();
    let m = data(
        &api.post("/media", &json!({"filename": "a", "mimeType": "image/png", "storageKey": "k1", "height": 1022.0})),
    );
    assert_eq!(m["item"]["height"], 1022);
    let id = m["item"]["id"].as_str().unwrap().to_owned();
    for bad in [json!(1022.5), json!(1e300), json!(-1.0), json!("7")] {
        let r =
            api.post("/media", &json!({"filename": "a", "mimeType": "image/png", "storageKey": "k2", "height": bad}));
        assert_eq!((r.status, code(&r)), (400, "VALIDATION_ERROR".into()), "{bad}");
    }
    for ok in ["true", "false", "1", "0"] {
        assert_eq!(api.get(&format!("/media/{id}?includeUsage={ok}")).status, 200, "{ok}");
    }
    for bad in ["includeUsage=maybe", "includeUsage=null", "includeUsage=true&includeUsage=true", "includeUsage="] {
        let r = api.get(&format!("/media/{id}?{bad}"));
        assert_eq!((r.status, code(&r)), (400, "VALIDATION_ERROR".into()), "{bad}");
    }
    let r = api.call("DELETE", &format!("/media/{id}?force=yes"), Some(ADMIN), None);
    assert_eq!(code(&r), "VALIDATION_ERROR");
    assert_eq!(api.get(&format!("/media/{id}")).status, 200, "nothing was deleted");
    // Flags of other operations are not checked here.
    assert_eq!(api.get("/media?force=yes").status, 200);
}

#[test]
fn a_missing_system_table_is_an_internal_error_and_only_a_content_table_means_a_collection_is_gone() {
    let opaque = |r: &Response, table: &str| {
        assert_eq!((r.status, code(r)), (500, "INTERNAL_ERROR".into()), "{}", r.body);
        assert!(!r.body.contains(table) && !r.body.to_lowercase().contains("table"), "{}", r.body);
        assert!(r.cause.as_deref().is_some_and(|c| c.contains(table)), "{:?}", r.cause);
    };
    let api = Api::new();
    data(&api.post(
        "/schema/collections",
        &json!({"slug": "x", "label": "X", "fields": [{"slug": "title", "type": "string"}]}),
    ));
    let entry = data(&api.post("/content/x", &json!({"slug": "a", "data": {"title": "A"}})))["item"]["id"]
        .as_str()
        .unwrap()
        .to_owned();

    // The media table.
    api.db.connection().execute_batch("DROP TABLE media").unwrap();
    opaque(&api.get("/media"), "media");
    opaque(&api.post("/media", &json!({"filename": "a.png", "mimeType": "image/png", "storageKey": "k"})), "media");
    opaque(&api.get("/media/nope"), "media");

    // The work queue a content write's capture trigger fills: not the fence's 409.
    api.db.connection().execute_batch("DROP TABLE _emdash_media_usage_work").unwrap();
    opaque(&api.put(&format!("/content/x/{entry}"), &json!({"data": {"title": "B"}})), "_emdash_media_usage_work");
    opaque(&api.post("/content/x", &json!({"slug": "b", "data": {"title": "B"}})), "_emdash_media_usage_work");

    // The registry.
    api.db.connection().execute_batch("PRAGMA foreign_keys = OFF; DROP TABLE _emdash_collections").unwrap();
    opaque(&api.get("/schema/collections/x"), "_emdash_collections");
    opaque(&api.get("/schema/collections"), "_emdash_collections");
    opaque(&api.get("/content/x"), "_emdash_collections");

    // A dropped content table is still a collection that is gone (read: 404; write: the fence).
    let api = Api::new();
    data(&api.post(
        "/schema/collections",
        &json!({"slug": "x", "label": "X", "fields": [{"slug": "title", "type": "string"}]}),
    ));
    let entry = data(&api.post("/content/x", &json!({"slug": "a", "data": {"title": "A"}})))["item"]["id"]
        .as_str()
        .unwrap()
        .to_owned();
    api.db.connection().execute_batch("DROP TABLE ec_x").unwrap();
    let r = api.get("/content/x");
    assert_eq!((r.status, code(&r)), (404, "COLLECTION_NOT_FOUND".into()), "{}", r.body);
    let r = api.put(&format!("/content/x/{entry}"), &json!({"data": {"title": "B"}}));
    assert_eq!((r.status, code(&r)), (409, "MEDIA_USAGE_CAPTURE_INACTIVE".into()), "{}", r.body);
}

#[test]
fn a_job_facing_a_missing_system_table_fails_and_keeps_its_work() {
    use media_usage_worker::usage::project::{process_next, JobOutcome};
    let api = Api::new();
    data(&api.post(
        "/schema/collections",
        &json!({"slug": "x", "label": "X", "fields": [{"slug": "title", "type": "string"}]}),
    ));
    data(&api.post("/content/x", &json!({"slug": "a", "data": {"title": "A"}})));
    let policy = api.config.background.projection.clone();
    let queue = |api: &Api| {
        // A write outside the API: the capture trigger queues the entry.
        api.db.connection().execute_batch("UPDATE ec_x SET title = 'B'").unwrap();
        assert_eq!(scalar(api, "SELECT count(*) FROM _emdash_media_usage_work"), 1);
    };
    queue(&api);
    api.db.connection().execute_batch("PRAGMA foreign_keys = OFF; DROP TABLE _emdash_fields").unwrap();
    let e = now(process_next(&api.db, None, &policy)).unwrap_err();
    assert!(e.to_string().contains("_emdash_fields"), "{e}");
    assert_eq!(scalar(&api, "SELECT count(*) FROM _emdash_media_usage_work"), 1, "the work stays queued");

    // A dropped content table (with its registry row, as a deletion leaves them): the collection
    // is gone, its work is obsolete.
    let api = Api::new();
    data(&api.post(
        "/schema/collections",
        &json!({"slug": "x", "label": "X", "fields": [{"slug": "title", "type": "string"}]}),
    ));
    data(&api.post("/content/x", &json!({"slug": "a", "data": {"title": "A"}})));
    queue(&api);
    api.db
        .connection()
        .execute_batch("PRAGMA foreign_keys = OFF; DELETE FROM _emdash_collections WHERE slug = 'x'; DROP TABLE ec_x")
        .unwrap();
    assert_eq!(now(process_next(&api.db, None, &policy)).unwrap(), Some(JobOutcome::Obsolete));
    assert_eq!(scalar(&api, "SELECT count(*) FROM _emdash_media_usage_work"), 0);
}

/// D1 as seen by a job whose collection's table is dropped between its load and its publish (a
/// deletion getting past `table` meanwhile): the table goes just before the publish batch.
struct DropsTableBeforePublish<'a>(&'a media_usage_worker::exec::sqlite::SqliteExecutor);

impl media_usage_worker::exec::Executor for DropsTableBeforePublish<'_> {
    async fn run(
        &self,
        stmt: media_usage_worker::exec::Statement,
    ) -> Result<media_usage_worker::exec::Outcome, media_usage_worker::exec::Error> {
        self.0.run(stmt).await
    }

    async fn batch(
        &self,
        stmts: Vec<media_usage_worker::exec::Statement>,
    ) -> Result<Vec<media_usage_worker::exec::Outcome>, media_usage_worker::exec::Error> {
        self.0
            .connection()
            .execute_batch("PRAGMA foreign_keys = OFF; DELETE FROM _emdash_collections WHERE slug = 'x'; DROP TABLE IF EXISTS ec_x")
            .unwrap();
        self.0.batch(stmts).await
    }
}

#[test]
fn a_job_whose_table_is_dropped_before_its_publish_stays_within_its_statements_and_its_work_goes_later() {
    use media_usage_worker::clock::MonotonicClock;
    use media_usage_worker::exec::meter::Metered;
    use media_usage_worker::usage::project::{process_next, JobOutcome, JOB_MAX_STATEMENTS};

    let api = Api::new();
    data(&api.post(
        "/schema/collections",
        &json!({"slug": "x", "label": "X", "fields": [{"slug": "hero", "type": "image"}]}),
    ));
    data(&api.post("/content/x", &json!({"slug": "a", "data": {"hero": "m1"}})));
    // A write outside the API: the capture trigger queues the entry.
    api.db.connection().execute_batch("UPDATE ec_x SET hero = 'm2'").unwrap();
    let policy = api.config.background.projection.clone();
    let dropping = DropsTableBeforePublish(&api.db);
    let metered = Metered::new(&dropping, MonotonicClock::default());
    assert_eq!(now(process_next(&metered, None, &policy)).unwrap(), Some(JobOutcome::Conflict));
    assert!(metered.usage().statements <= JOB_MAX_STATEMENTS, "{:?}", metered.usage());
    // Its work row stays leased (a deletion would delete it); once the lease expires, the next
    // claim's load finds the collection gone and drops it.
    assert_eq!(scalar(&api, "SELECT count(*) FROM _emdash_media_usage_work WHERE state = 'leased'"), 1);
    expire_leases(&api, "_emdash_media_usage_work", "TRUE");
    assert_eq!(now(process_next(&api.db, None, &policy)).unwrap(), Some(JobOutcome::Obsolete));
    assert_eq!(scalar(&api, "SELECT count(*) FROM _emdash_media_usage_work"), 0);
}
