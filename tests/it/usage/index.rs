//! Capture and projection: "Used in" and its pages, counts by eligibility and coverage,
//! publishing, no-op projections, draft revisions, the capture fence, and every field type.

use super::*;

#[test]
fn a_content_write_is_listed_in_used_in_with_its_paths() {
    let api = setup();
    let m1 = api.register_media("m1.jpg");
    let m2 = api.register_media("m2.jpg");
    let id = create(
        &api,
        "hello",
        "published",
        json!({"title": "Hello", "hero": {"id": m1, "mimeType": "image/jpeg"}, "gallery": [{"image": m1}, {"image": m2}],
               "body": [{"_type": "block"}, {"_type": "image", "asset": {"_ref": m1}}]}),
    );
    let u = used_in(&api, &m1);
    assert_eq!(u["coverage"]["status"], "complete");
    let items = u["items"].as_array().unwrap();
    assert_eq!(items.len(), 1);
    assert_eq!(items[0]["contentId"], id.as_str());
    assert_eq!(items[0]["collection"], "posts");
    assert_eq!(items[0]["title"], "Hello");
    assert_eq!(items[0]["slug"], "hello");
    assert_eq!(items[0]["status"], "published");
    let paths: Vec<&str> =
        items[0]["occurrences"].as_array().unwrap().iter().map(|o| o["fieldPath"].as_str().unwrap()).collect();
    assert_eq!(paths, ["body[1].asset._ref", "gallery[0].image", "hero"]);
    assert_eq!(items[0]["occurrences"][0]["referenceType"], "portable_text_image");
    assert_eq!(used_in(&api, &m2)["items"][0]["occurrences"][0]["fieldPath"], "gallery[1].image");
    assert_eq!(scalar(&api.db, "SELECT count(*) FROM _emdash_media_usage_work"), 0, "the write's job completed");
    // Unknown media: 404 before any usage query.
    assert_eq!(code(&api.get("/media/nope/usage")), "NOT_FOUND");
    assert_eq!(code(&api.get(&format!("/media/{m1}/usage?cursor=%25%25%25"))), "INVALID_CURSOR");
}

#[test]
fn used_in_pages_never_split_an_entry() {
    let api = setup();
    let m = api.register_media("shared.jpg");
    for i in 0..5 {
        create(&api, &format!("e{i}"), "published", json!({"hero": m, "gallery": [{"image": m}]}));
    }
    let mut seen = Vec::new();
    let mut cursor: Option<String> = None;
    for _ in 0..10 {
        let path = match &cursor {
            Some(c) => format!("/media/{m}/usage?limit=2&cursor={c}"),
            None => format!("/media/{m}/usage?limit=2"),
        };
        let page = data(&api.get(&path));
        for item in page["items"].as_array().unwrap() {
            assert_eq!(item["occurrences"].as_array().unwrap().len(), 2, "an entry arrives whole");
            seen.push(item["contentId"].as_str().unwrap().to_owned());
        }
        match page["nextCursor"].as_str() {
            Some(c) => cursor = Some(c.to_owned()),
            None => break,
        }
    }
    let mut unique = seen.clone();
    unique.sort();
    unique.dedup();
    assert_eq!((seen.len(), unique.len()), (5, 5));
}

#[test]
fn usage_counts_follow_eligibility_and_coverage() {
    let api = setup();
    let live = api.register_media("live.png");
    let draft_only = api.register_media("draft.png");
    let superseded = api.register_media("old.png");
    let unused = api.register_media("unused.png");
    // Published entry whose draft uses another image: both count once.
    let a = create(&api, "a", "published", json!({"hero": live}));
    data(&api.put(&format!("/content/posts/{a}"), &json!({"draft": true, "data": {"hero": draft_only}})));
    // Draft entry with a draft revision: the superseded live image does not count.
    let b = create(&api, "b", "draft", json!({"hero": superseded}));
    data(&api.put(&format!("/content/posts/{b}"), &json!({"draft": true, "data": {"hero": draft_only}})));
    let count = |m: &str| data(&api.get(&format!("/media/{m}?includeUsage=1")))["item"]["usage"]["count"].clone();
    assert_eq!(count(&live), 1);
    assert_eq!(count(&draft_only), 2);
    assert_eq!(count(&superseded), 0);
    assert_eq!(count(&unused), 0);
    assert!(used_in(&api, &unused)["items"].as_array().unwrap().is_empty());
    // A trashed entry no longer counts but is still listed with deletedAt.
    data(&api.delete(&format!("/content/posts/{a}")));
    assert_eq!(count(&live), 0);
    let listed = used_in(&api, &live);
    assert!(listed["items"][0]["deletedAt"].is_string());
    // Counts need a role that may read drafts.
    let author = api.token("author", &["media:read"]);
    let r = api.call("GET", &format!("/media/{live}?includeUsage=1"), Some(&author), None);
    assert_eq!(r.body_json()["data"]["item"]["usage"]["count"], Json::Null);
}

#[test]
fn publishing_moves_the_draft_projection_to_live() {
    let api = setup();
    let (m_old, m_new) = (api.register_media("old.jpg"), api.register_media("new.jpg"));
    let id = create(&api, "p", "published", json!({"hero": m_old}));
    data(&api.put(&format!("/content/posts/{id}"), &json!({"draft": true, "data": {"hero": m_new}})));
    assert_eq!(scalar(&api.db, "SELECT count(*) FROM _emdash_media_usage_sources"), 2);
    data(&api.post(&format!("/content/posts/{id}/publish"), &json!({})));
    assert_eq!(scalar(&api.db, "SELECT count(*) FROM _emdash_media_usage_sources"), 1, "the draft source is gone");
    assert!(used_in(&api, &m_old)["items"].as_array().unwrap().is_empty());
    assert_eq!(used_in(&api, &m_new)["items"].as_array().unwrap().len(), 1);
    // Permanent delete removes the entry's sources and occurrences.
    api.call("DELETE", &format!("/content/posts/{id}?permanent=true"), Some(ADMIN), None);
    assert_eq!(scalar(&api.db, "SELECT count(*) FROM _emdash_media_usage_sources"), 0);
    assert_eq!(scalar(&api.db, "SELECT count(*) FROM _emdash_media_usage"), 0);
    assert_eq!(coverage(&api), "complete");
}

#[test]
fn an_unchanged_projection_is_a_no_op() {
    let api = setup();
    let id = create(&api, "same", "published", json!({"hero": "m1", "title": "T"}));
    let before = text(&api.db, "SELECT current_generation || '|' || updated_at FROM _emdash_media_usage_sources");
    // A write that does not change the projection (a non-extraction, non-title field is absent
    // here, so rewrite the same values).
    data(&api.put(&format!("/content/posts/{id}"), &json!({"data": {"hero": "m1"}})));
    assert_eq!(
        text(&api.db, "SELECT current_generation || '|' || updated_at FROM _emdash_media_usage_sources"),
        before
    );
    assert_eq!(scalar(&api.db, "SELECT count(*) FROM _emdash_media_usage_work"), 0);
    assert_eq!(coverage(&api), "complete");
}

#[test]
fn draft_revision_errors_index_the_columns_and_mark_coverage_partial() {
    let api = setup();
    let (m1, m2) = (api.register_media("1.jpg"), api.register_media("2.jpg"));
    let id = create(&api, "d", "published", json!({"hero": m1}));
    data(&api.put(&format!("/content/posts/{id}"), &json!({"draft": true, "data": {"hero": m2}})));
    // Corrupt the draft revision behind the API's back, then re-capture the entry.
    api.db.connection().execute_batch("UPDATE revisions SET data = '[1]'").unwrap();
    let r = api
        .post("/admin/media-usage/work/retry", &json!({"collectionId": collection_id(&api, "posts"), "contentId": id}));
    assert_eq!(data(&r)["changed"], true);
    drain(&api.db);
    let (completeness, err): (String, String) = api
        .db
        .connection()
        .query_row(
            "SELECT source_completeness, last_error_code FROM _emdash_media_usage_sources WHERE source_variant = 'draft_overlay'",
            [],
            |r| Ok((r.get(0)?, r.get(1)?)),
        )
        .unwrap();
    assert_eq!((completeness.as_str(), err.as_str()), ("failed", "DRAFT_REVISION_INVALID"));
    assert_eq!(used_in(&api, &m1)["items"].as_array().unwrap().len(), 1, "columns stay indexed");
    assert_eq!(coverage(&api), "partial");
    // A different failure of the same draft replaces the recorded code.
    api.db.connection().execute_batch("UPDATE revisions SET entry_id = 'other'").unwrap();
    data(&api.post(
        "/admin/media-usage/work/retry",
        &json!({"collectionId": collection_id(&api, "posts"), "contentId": id}),
    ));
    drain(&api.db);
    assert_eq!(
        text(&api.db, "SELECT last_error_code FROM _emdash_media_usage_sources WHERE source_variant = 'draft_overlay'")
            .as_deref(),
        Some("DRAFT_REVISION_MISMATCH")
    );
}

#[test]
fn the_capture_fence_refuses_writes_and_queues_nothing() {
    let api = setup();
    let id = create(&api, "x", "draft", json!({}));
    api.db
        .connection()
        .execute_batch("UPDATE _emdash_media_usage_index_status SET capture_state = 'deleting'")
        .unwrap();
    let r = api.post("/content/posts", &json!({"slug": "y", "data": {}}));
    assert_eq!((r.status, code(&r)), (409, "MEDIA_USAGE_CAPTURE_INACTIVE".into()));
    let r = api.put(&format!("/content/posts/{id}"), &json!({"data": {"hero": "m1"}}));
    assert_eq!(code(&r), "MEDIA_USAGE_CAPTURE_INACTIVE");
    let r = api.call("DELETE", &format!("/content/posts/{id}?permanent=true"), Some(ADMIN), None);
    assert_eq!(code(&r), "MEDIA_USAGE_CAPTURE_INACTIVE");
    assert_eq!(scalar(&api.db, "SELECT count(*) FROM ec_posts"), 1);
    assert_eq!(scalar(&api.db, "SELECT count(*) FROM _emdash_media_usage_work"), 0);
    // No status row at all fails closed too.
    api.db.connection().execute_batch("DELETE FROM _emdash_media_usage_index_status").unwrap();
    assert_eq!(code(&api.post("/content/posts", &json!({"slug": "z", "data": {}}))), "MEDIA_USAGE_CAPTURE_INACTIVE");
}

#[test]
fn adding_an_extraction_field_invalidates_coverage_only_when_entries_exist() {
    let api = Api::new();
    data(&api.post("/schema/collections", &json!({"slug": "empty", "label": "E"})));
    data(&api.post("/schema/collections/empty/fields", &json!({"slug": "hero", "type": "image"})));
    assert_eq!(coverage(&api), "complete");
    data(&api.post("/schema/collections", &json!({"slug": "full", "label": "F"})));
    data(&api.post("/content/full", &json!({"slug": "one", "data": {}})));
    data(&api.post("/schema/collections/full/fields", &json!({"slug": "note", "type": "string"})));
    assert_eq!(coverage(&api), "complete", "a plain field does not matter");
    data(&api.post("/schema/collections/full/fields", &json!({"slug": "hero", "type": "image"})));
    let st = data(&api.get("/admin/media-usage/status"));
    assert_eq!(st["status"], "stale");
    let full = st["collections"].as_array().unwrap().iter().find(|c| c["collection"] == "full").unwrap().clone();
    assert_eq!(full["reconciliationRequired"], true);
    assert_eq!(full["lastErrorCode"], "CONTENT_USAGE_STALE");
}

#[test]
fn an_unreadable_repeater_definition_fails_closed() {
    let api = setup();
    let id = create(&api, "g", "published", json!({"gallery": [{"image": "g1"}], "hero": "h1"}));
    api.db
        .connection()
        .execute_batch("UPDATE _emdash_fields SET validation = '{not json' WHERE slug = 'gallery'")
        .unwrap();
    data(&api.put(&format!("/content/posts/{id}"), &json!({"data": {"hero": "h2"}})));
    assert_eq!(
        text(&api.db, "SELECT last_error_code FROM _emdash_media_usage_work").as_deref(),
        Some("INVALID_REPEATER_VALIDATION")
    );
    assert_eq!(projection(&api.db), [("columns".to_owned(), "g1".to_owned()), ("columns".to_owned(), "h1".to_owned())]);
    assert_ne!(coverage(&api), "complete");
}

#[test]
fn the_fence_checks_the_exact_collection_identity() {
    let api = setup();
    create(&api, "a", "draft", json!({}));
    api.db.connection().execute_batch("UPDATE _emdash_media_usage_index_status SET collection_id = 'other'").unwrap();
    assert_eq!(code(&api.post("/content/posts", &json!({"slug": "b", "data": {}}))), "MEDIA_USAGE_CAPTURE_INACTIVE");
    assert_eq!(scalar(&api.db, "SELECT count(*) FROM _emdash_media_usage_work"), 0);
}

#[test]
fn used_in_and_counts_start_from_the_media_index() {
    let api = setup();
    for sql in [
        crate::sql_files::product_statement("usage/usage_page.sql"),
        crate::sql_files::product_statement("usage/count_entries.sql"),
    ] {
        let conn = api.db.connection();
        let mut stmt = conn.prepare(&format!("EXPLAIN QUERY PLAN {sql}")).unwrap();
        let n = stmt.parameter_count();
        let params: Vec<rusqlite::types::Value> = (0..n).map(|_| rusqlite::types::Value::Null).collect();
        let plan: Vec<String> = stmt
            .query_map(rusqlite::params_from_iter(params), |r| r.get::<_, String>(3))
            .unwrap()
            .map(Result::unwrap)
            .collect();
        // (The counts go through a bound list of ids first: a `json_each` of the ids asked.)
        let first_scan = plan
            .iter()
            .find(|d| (d.starts_with("SEARCH") || d.starts_with("SCAN")) && !d.contains("VIRTUAL TABLE"))
            .unwrap();
        assert!(
            first_scan.contains("idx__emdash_media_usage_media_source_generation"),
            "the plan does not start from the media index: {plan:#?}"
        );
        let scanned = |d: &String| d.strip_prefix("SCAN ").and_then(|r| r.split(' ').next()).map(str::to_owned);
        assert!(!plan.iter().filter_map(scanned).any(|t| t == "s" || t == "u"), "{plan:#?}");
    }
}

/// A sample value of each field type, holding media id `m` where the type can.
fn sample(t: &str, m: &str) -> Json {
    match t {
        "string" | "text" => json!(m),
        "number" => json!(1),
        "boolean" => json!(true),
        "datetime" => json!("2026-01-02"),
        "image" | "file" => json!({"id": m}),
        "portableText" => json!([{"_type": "image", "asset": {"_ref": m}}]),
        "repeater" => json!([{"x": m}]),
        "json" => json!({"id": m}),
        other => panic!("no sample for {other}"),
    }
}

#[test]
fn every_field_and_sub_field_type_the_schema_accepts_is_extracted_or_holds_no_media() {
    use media_usage_worker::model::field::FieldType;
    // What the index records for a media id in a field (or repeater sub-field) of each type.
    let expected = |t: FieldType| match t {
        FieldType::Image => Some("image_field"),
        FieldType::File => Some("file_field"),
        FieldType::PortableText => Some("portable_text_image"),
        _ => None,
    };
    for t in FieldType::ALL {
        // As a field.
        let api = Api::new();
        let mut field = json!({"slug": "f", "type": t.as_str()});
        if *t == FieldType::Repeater {
            field["subFields"] = json!([{"slug": "x", "type": "string"}]);
        }
        data(&api.post("/schema/collections", &json!({"slug": "posts", "label": "P", "fields": [field]})));
        data(&api.post(
            "/content/posts",
            &json!({"slug": "e", "status": "published", "data": {"f": sample(t.as_str(), "m1")}}),
        ));
        let found = text(&api.db, "SELECT group_concat(reference_type) FROM _emdash_media_usage WHERE media_id = 'm1'");
        assert_eq!(found.as_deref(), expected(*t), "field of type {}", t.as_str());
        assert_eq!(coverage(&api), "complete", "{}", t.as_str());

        // As a repeater sub-field: accepted and extracted, accepted and holding no media, or
        // refused by the schema.
        let api = Api::new();
        let r = api.post(
            "/schema/collections",
            &json!({"slug": "posts", "label": "P", "fields": [
                {"slug": "r", "type": "repeater", "subFields": [{"slug": "s", "type": t.as_str()}]}
            ]}),
        );
        if !t.allowed_in_repeater() {
            assert_eq!((r.status, code(&r)), (400, "VALIDATION_ERROR".into()), "sub-field of type {}", t.as_str());
            continue;
        }
        assert_eq!(r.status, 201, "sub-field of type {}: {}", t.as_str(), r.body);
        let value = json!([{"s": sample(t.as_str(), "m2")}]);
        data(&api.post("/content/posts", &json!({"slug": "e", "status": "published", "data": {"r": value}})));
        let found = text(
            &api.db,
            "SELECT group_concat(reference_type || ' ' || field_path) FROM _emdash_media_usage WHERE media_id = 'm2'",
        );
        let want = expected(*t).map(|k| format!("{k} r[0].s"));
        assert_eq!(found, want, "sub-field of type {}", t.as_str());
    }
}

#[test]
fn a_file_used_only_in_a_repeater_cannot_be_deleted_safely() {
    let api = Api::new();
    data(&api.post(
        "/schema/collections",
        &json!({"slug": "docs", "label": "Docs", "fields": [
            {"slug": "downloads", "type": "repeater", "subFields": [{"slug": "label", "type": "string"}, {"slug": "file", "type": "file"}]}
        ]}),
    ));
    let pdf = api.register_media("guide.pdf");
    data(&api.post(
        "/content/docs",
        &json!({"slug": "guide", "status": "published", "data": {"downloads": [{"label": "Guide", "file": {"id": pdf, "mimeType": "application/pdf"}}]}}),
    ));
    let r = api.call("DELETE", &format!("/media/{pdf}"), Some(ADMIN), None);
    assert_eq!((r.status, code(&r)), (409, "MEDIA_IN_USE".into()), "{}", r.body);
    let used = used_in(&api, &pdf);
    assert_eq!(used["items"][0]["occurrences"][0]["fieldPath"], "downloads[0].file");
    assert_eq!(used["items"][0]["occurrences"][0]["referenceType"], "file_field");
    assert_eq!(api.get(&format!("/media/{pdf}")).status, 200, "the file is still there");
}

#[test]
fn an_upgrade_marks_collections_with_file_repeaters_for_repair() {
    use media_usage_worker::exec::sqlite::SqliteExecutor;
    use media_usage_worker::migrations::ALL;
    // Everything before 0007, a collection with a file repeater and an indexed entry, another
    // with an image repeater only; then the rest of the migrations.
    let db = SqliteExecutor::open_in_memory_unmigrated().unwrap();
    let upto = ALL.iter().position(|m| m.name.starts_with("0007")).unwrap();
    // The reference rules' column (0012), the unindexed media column (0013), the table
    // revision (0015), the field deletions (0022), the media versions (0027) and the relinks'
    // index of linked keys (0030) go in early: this version's API writes and reads them; so does
    // the revisions' base version, the first statement of 0007 (the projection's load reads it). (The rules' own upgrade is tested in `reference_rules`.)
    let rules = ALL.iter().find(|m| m.name.starts_with("0012")).unwrap();
    let unindexed = ALL.iter().find(|m| m.name.starts_with("0013")).unwrap();
    let tables = ALL.iter().find(|m| m.name.starts_with("0015")).unwrap();
    let fields = ALL.iter().find(|m| m.name.starts_with("0022")).unwrap();
    let versions = ALL.iter().find(|m| m.name.starts_with("0027")).unwrap();
    let linked = ALL.iter().find(|m| m.name.starts_with("0030")).unwrap();
    const BASE_VERSION: &str = "ALTER TABLE revisions ADD COLUMN base_version INTEGER;";
    for m in ALL[..upto].iter().chain([rules, unindexed, tables, fields, versions, linked]) {
        db.connection().execute_batch(m.sql).unwrap();
    }
    db.connection().execute_batch(BASE_VERSION).unwrap();
    let api = Api { db, config: crate::support::config(), storage: None };
    // A collection with a file repeater but no entries has nothing to repair.
    data(&api.post(
        "/schema/collections",
        &json!({"slug": "empty", "label": "E", "fields": [{"slug": "r", "type": "repeater", "subFields": [{"slug": "s", "type": "file"}]}]}),
    ));
    for (slug, sub) in [("docs", "file"), ("pics", "image")] {
        data(&api.post(
            "/schema/collections",
            &json!({"slug": slug, "label": slug, "fields": [{"slug": "r", "type": "repeater", "subFields": [{"slug": "s", "type": sub}]}]}),
        ));
        data(&api.post(
            &format!("/content/{slug}"),
            &json!({"slug": "e", "status": "published", "data": {"r": [{"s": "m"}]}}),
        ));
    }
    api.db
        .connection()
        .execute_batch("UPDATE _emdash_media_usage_sources SET content_title = printf('%.300c', 'x')")
        .unwrap();
    let early = [rules.name, unindexed.name, tables.name, fields.name, versions.name, linked.name];
    for m in ALL[upto..].iter().filter(|m| !early.contains(&m.name)) {
        assert!(!m.name.starts_with("0007") || m.sql.contains(BASE_VERSION));
        api.db.connection().execute_batch(&m.sql.replace(BASE_VERSION, "")).unwrap();
    }
    let st = data(&api.get("/admin/media-usage/status"));
    let of =
        |slug: &str| st["collections"].as_array().unwrap().iter().find(|c| c["collection"] == slug).unwrap().clone();
    assert_eq!(
        (of("docs")["status"].clone(), of("docs")["reconciliationRequired"].clone()),
        (json!("stale"), json!(true))
    );
    assert_eq!(
        (of("pics")["status"].clone(), of("pics")["reconciliationRequired"].clone()),
        (json!("complete"), json!(false))
    );
    assert_eq!(scalar(&api.db, "SELECT max(length(content_title)) FROM _emdash_media_usage_sources"), 200);
    // A repair indexes the file.
    data(&api.post("/admin/media-usage/repair", &json!({"scope": "collection", "collection": "docs"})));
    assert_eq!(data(&api.get("/admin/media-usage/status"))["status"], "complete");
    assert_eq!(scalar(&api.db, "SELECT count(*) FROM _emdash_media_usage WHERE reference_type = 'file_field'"), 1);
}
