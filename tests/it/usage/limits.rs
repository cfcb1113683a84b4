//! Admission: occurrences per variant up to the limit and one over it, byte bounds, display
//! titles, the configured tick budget, and removals that are always admitted.

use super::*;

fn occurrences_of(api: &Api, id: &str, variant: &str) -> i64 {
    scalar(
        &api.db,
        &format!(
            "SELECT count(*) FROM _emdash_media_usage u JOIN _emdash_media_usage_sources s
             ON s.source_key = u.source_key AND s.current_generation = u.generation
             WHERE s.content_id = '{id}' AND s.source_variant = '{variant}'"
        ),
    )
}

#[test]
fn a_thousand_occurrences_per_variant_are_indexed_in_one_job_through_every_transition() {
    let api = setup();
    let metered_write = |method: &str, path: &str, body: Option<Json>| {
        let metered = Metered::new(&api.db, MonotonicClock::default());
        let (path, query) = path.split_once('?').unwrap_or((path, ""));
        let req = Request {
            method: method.into(),
            path: format!("{}{path}", api::BASE_PATH),
            query: query.split_once('=').map(|(k, v)| vec![(k.to_owned(), v.to_owned())]).unwrap_or_default(),
            authorization: Some(format!("Bearer {ADMIN}")),
            body: body.map(|b| b.to_string().into_bytes()).unwrap_or_default(),
            ..Request::default()
        };
        let r = block_on(api::handle(&metered, &api.config, &req));
        assert!(r.status < 300, "{method} {path}: {}", r.body);
        assert_eq!(
            text(
                &api.db,
                "SELECT group_concat(state || ':' || coalesce(last_error_code, '')) FROM _emdash_media_usage_work"
            ),
            None,
            "{method} {path}: indexed by its own request"
        );
        assert_eq!(coverage(&api), "complete", "{method} {path}");
        (r, metered.usage().statements)
    };
    let (r, _) = metered_write(
        "POST",
        "/content/posts",
        Some(json!({"slug": "g", "status": "published", "data": {"gallery": gallery(1_000, "a")}})),
    );
    let id = r.body_json()["data"]["item"]["id"].as_str().unwrap().to_owned();
    assert_eq!(occurrences_of(&api, &id, "columns"), 1_000);
    // A draft replacing every image: 1,000 live and 1,000 draft occurrences.
    metered_write(
        "PUT",
        &format!("/content/posts/{id}"),
        Some(json!({"draft": true, "data": {"gallery": gallery(1_000, "b")}})),
    );
    assert_eq!((occurrences_of(&api, &id, "columns"), occurrences_of(&api, &id, "draft_overlay")), (1_000, 1_000));
    // Publishing writes 1,000 new live occurrences and removes 2,000 (old live and the draft).
    metered_write("POST", &format!("/content/posts/{id}/publish"), Some(json!({})));
    assert_eq!((occurrences_of(&api, &id, "columns"), occurrences_of(&api, &id, "draft_overlay")), (1_000, 0));
    assert_eq!(scalar(&api.db, "SELECT count(*) FROM _emdash_media_usage WHERE media_id LIKE 'a%'"), 0);
    for (method, path) in [
        ("POST", format!("/content/posts/{id}/unpublish")),
        ("DELETE", format!("/content/posts/{id}")),
        ("POST", format!("/content/posts/{id}/restore")),
        ("DELETE", format!("/content/posts/{id}?permanent=true")),
    ] {
        let body = (method == "POST").then(|| json!({}));
        let (_, statements) = metered_write(method, &path, body);
        assert!(statements <= 3 + project::JOB_MAX_STATEMENTS, "{method} {path}: {statements} statements");
    }
    assert_eq!(scalar(&api.db, "SELECT count(*) FROM _emdash_media_usage"), 0);
    assert_eq!(scalar(&api.db, "SELECT count(*) FROM _emdash_media_usage_sources"), 0);
}

#[test]
fn status_reports_the_configured_tick_budget() {
    let api = setup();
    let st = data(&api.get("/admin/media-usage/status"));
    assert_eq!(
        st["tickBudget"],
        json!({"maxStatements": 40, "maxMs": 2500.0, "maxRowsWritten": 20_000, "maxRowsRead": 200_000})
    );
    let mut small = setup();
    small.config.tick_budget = Budget::new(12, 900.0);
    let st = data(&small.get("/admin/media-usage/status"));
    let unlimited = u64::MAX;
    assert_eq!(
        st["tickBudget"],
        json!({"maxStatements": 12, "maxMs": 900.0, "maxRowsWritten": unlimited, "maxRowsRead": unlimited}),
        "the configured one"
    );
}

#[test]
fn one_occurrence_over_the_limit_fails_terminally_and_names_the_entry() {
    let api = setup();
    create(&api, "fine", "published", json!({"gallery": gallery(3, "f")}));
    // The API refuses it up front, with nothing written.
    let r = api.post("/content/posts", &json!({"slug": "too-big", "data": {"gallery": gallery(1_001, "x")}}));
    assert_eq!((r.status, code(&r)), (400, "VALIDATION_ERROR".into()), "{}", r.body);
    let issue = r.body_json()["error"]["details"]["issues"][0].clone();
    assert_eq!(issue["path"], "data");
    let message = issue["message"].as_str().unwrap();
    assert!(message.contains("1001") && message.contains("1000"), "names the count and the limit: {message}");
    assert_eq!(scalar(&api.db, "SELECT count(*) FROM ec_posts WHERE slug = 'too-big'"), 0);
    assert_eq!(coverage(&api), "complete");
    // Saved behind the API, it is not indexed and the operator sees it.
    let id = create_past_api(&api, "too-big", &gallery(1_001, "x"));
    let work: (String, i64, String) = api
        .db
        .connection()
        .query_row("SELECT state, attempt_count, last_error_code FROM _emdash_media_usage_work", [], |r| {
            Ok((r.get(0)?, r.get(1)?, r.get(2)?))
        })
        .unwrap();
    assert_eq!(work, ("failed".into(), 1, "MEDIA_USAGE_RESOURCE_LIMIT".into()));
    assert_eq!(
        scalar(&api.db, &format!("SELECT count(*) FROM _emdash_media_usage_sources WHERE content_id = '{id}'")),
        0,
        "nothing was written"
    );
    assert_eq!(scalar(&api.db, "SELECT count(*) FROM _emdash_media_usage WHERE media_id LIKE 'x%'"), 0);
    let listed = data(&api.get("/admin/media-usage/work?collection=posts&state=failed"));
    assert_eq!(listed["items"][0]["contentId"], id.as_str());
    assert_eq!(listed["items"][0]["contentSlug"], "too-big", "the operator sees which entry");
    // Its media are known, so coverage stays complete: only those media are held (see
    // tests/it/admission.rs).
    assert_eq!(scalar(&api.db, "SELECT json_array_length(unindexed_media) FROM _emdash_media_usage_work"), 1_001);
    assert_eq!(coverage(&api), "complete");
    // The limit is per variant: 1,000 live plus a 1,000-image draft is fine, a 1,001-image
    // draft is refused.
    let api = setup();
    let id = create(&api, "ok", "published", json!({"gallery": gallery(1_000, "l")}));
    data(&api.put(&format!("/content/posts/{id}"), &json!({"draft": true, "data": {"gallery": gallery(1_000, "d")}})));
    let r = api.put(&format!("/content/posts/{id}"), &json!({"draft": true, "data": {"gallery": gallery(1_001, "d")}}));
    assert_eq!((r.status, code(&r)), (400, "VALIDATION_ERROR".into()));
    assert_eq!(occurrences_of(&api, &id, "columns"), 1_000);
    assert_eq!(occurrences_of(&api, &id, "draft_overlay"), 1_000, "the saved draft stays as it was");
}

#[test]
fn the_limit_is_configurable() {
    let api = setup_admitting(12);
    create(&api, "twelve", "published", json!({"gallery": gallery(12, "a")}));
    let r = api.post("/content/posts", &json!({"slug": "thirteen", "data": {"gallery": gallery(13, "b")}}));
    assert_eq!((r.status, code(&r)), (400, "VALIDATION_ERROR".into()));
    create_past_api(&api, "thirteen", &gallery(13, "b"));
    assert_eq!(scalar(&api.db, "SELECT count(*) FROM _emdash_media_usage"), 12);
    assert_eq!(
        text(&api.db, "SELECT group_concat(last_error_code) FROM _emdash_media_usage_work").as_deref(),
        Some("MEDIA_USAGE_RESOURCE_LIMIT")
    );
}

#[test]
fn a_change_whose_bound_json_passes_the_byte_bound_fails_without_a_source_row() {
    // Written past the API (whose bodies stop at 1 MiB) but captured like any write: `n` images
    // with 200 KB asset ids.
    let write = |api: &Api, n: usize| {
        let items: Vec<Json> = (0..n).map(|i| json!({"image": format!("{i}{}", "m".repeat(200_000))})).collect();
        api.db
            .connection()
            .execute(
                "INSERT INTO ec_posts (id, slug, status, gallery) VALUES ('big', 'big', 'published', ?1)",
                [Json::Array(items).to_string()],
            )
            .unwrap();
        block_on(crate::support::drain(
            &api.db,
            &MonotonicClock::default(),
            crate::support::budget(),
            &crate::support::policy(),
            5,
        ))
        .unwrap();
    };
    // Eight: 1.6 MB of occurrences in one bound value.
    let api = setup();
    write(&api, 8);
    assert_eq!(
        text(&api.db, "SELECT last_error_code FROM _emdash_media_usage_work").as_deref(),
        Some("MEDIA_USAGE_RESOURCE_LIMIT")
    );
    assert_eq!(scalar(&api.db, "SELECT count(*) FROM _emdash_media_usage_sources"), 0);
    // Seven fit (1.4 MB).
    let api = setup();
    write(&api, 7);
    assert_eq!(scalar(&api.db, "SELECT count(*) FROM _emdash_media_usage"), 7);
    assert_eq!(coverage(&api), "complete")
}

#[test]
fn a_500_kb_title_is_indexed_with_a_bounded_display_title() {
    let api = setup();
    let m = api.register_media("hero.png");
    let title = "T".repeat(500_000);
    create(&api, "long", "published", json!({"title": title, "hero": m}));
    // Too heavy to project in the request within the CPU budget: the ticks do.
    drain(&api.db);
    assert_eq!(coverage(&api), "complete");
    let used = used_in(&api, &m);
    assert_eq!(used["items"][0]["title"].as_str().map(str::len), Some(200), "{}", &used.to_string()[..300]);
    assert_eq!(scalar(&api.db, "SELECT max(length(content_title)) FROM _emdash_media_usage_sources"), 200);
}

#[test]
fn removing_a_source_of_any_size_is_always_admitted() {
    let api = setup_admitting(12);
    let id = create(&api, "big", "published", json!({"gallery": gallery(12, "g")}));
    // Far more occurrences in the stored generation than the limit (an older, larger limit).
    api.db
        .connection()
        .execute_batch(
            "WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 3000)
             INSERT INTO _emdash_media_usage (id, source_key, generation, field_slug, field_path, reference_type, media_id, provider_asset_id)
             SELECT 'extra' || i, source_key, current_generation, 'gallery', 'gallery[' || (i + 12) || '].image', 'image_field', 'x' || i, 'x' || i
             FROM _emdash_media_usage_sources, n",
        )
        .unwrap();
    api.call("DELETE", &format!("/content/posts/{id}?permanent=true"), Some(ADMIN), None);
    assert_eq!(scalar(&api.db, "SELECT count(*) FROM _emdash_media_usage_work"), 0);
    assert_eq!(scalar(&api.db, "SELECT count(*) FROM _emdash_media_usage"), 0);
    assert_eq!(scalar(&api.db, "SELECT count(*) FROM _emdash_media_usage_sources"), 0);
    assert_eq!(coverage(&api), "complete");
}
