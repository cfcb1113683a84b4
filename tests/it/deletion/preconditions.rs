//! Every precondition of the claims, the tombstone insert, the fence and the cleanup steps;
//! operators, reserved slugs and the per-kind batch.

use super::*;
use crate::support::{expire_leases, forge_lease, FAR_AHEAD, LONG_AGO};

#[test]
fn the_fence_and_its_cancel_need_every_precondition() {
    // Each case breaks one precondition. It runs three ways, so that no other precondition
    // hides it: with a live entry and no force (an unguarded cancel would cancel), with the
    // entries trashed (an unguarded fence would fence), and forced (likewise). The fence must
    // change nothing in any of them.
    let cases: [(&str, &str, &str); 11] = [
        ("another token", "", "u"),
        (
            "an expired lease",
            "UPDATE _emdash_media_usage_collection_deletions SET lease_expires_at = '2000-01-01T00:00:00.000Z'",
            "t",
        ),
        ("another phase", "UPDATE _emdash_media_usage_collection_deletions SET phase = 'registry'", "t"),
        (
            "another tombstone slug (and a tombstone of another id holds this one)",
            "UPDATE _emdash_media_usage_collection_deletions SET collection_slug = 'other';
             INSERT INTO _emdash_media_usage_collection_deletions (collection_id, collection_slug) VALUES ('someone', 'posts')",
            "t",
        ),
        ("a renamed registry row", "UPDATE _emdash_collections SET slug = 'renamed'", "t"),
        ("a replaced registry row", "UPDATE _emdash_collections SET id = 'other'", "t"),
        ("capture not active", "UPDATE _emdash_media_usage_index_status SET capture_state = 'ready'", "t"),
        ("a status row of another id", "UPDATE _emdash_media_usage_index_status SET collection_id = 'other'", "t"),
        ("a status row of another slug", "UPDATE _emdash_media_usage_index_status SET scope_key = 'other'", "t"),
        ("a status row of another adapter", "UPDATE _emdash_media_usage_index_status SET adapter_id = 'other'", "t"),
        ("a status row of another scope", "UPDATE _emdash_media_usage_index_status SET scope_type = 'other'", "t"),
    ];
    for (what, sabotage, token) in cases {
        for mode in ["live entry", "trashed entries", "forced"] {
            let api = Api::new();
            data(&api.post("/schema/collections", &json!({"slug": "posts", "label": "Posts"})));
            data(&api.post("/content/posts", &json!({"slug": "entry"})));
            let id = collection_id(&api.db, "posts");
            if mode == "trashed entries" {
                exec_sql(&api.db, "UPDATE ec_posts SET deleted_at = '2026-01-01T00:00:00.000Z'");
            }
            let force = mode == "forced";
            leased_tombstone(&api.db, &id, "fence", "t", force);
            // Every sabotage leaves the registry row's id usable by the foreign keys.
            exec_sql(&api.db, "PRAGMA foreign_keys = OFF");
            if !sabotage.is_empty() {
                exec_sql(&api.db, sabotage);
            }
            exec_sql(&api.db, "PRAGMA foreign_keys = ON");
            let state =
                || (tombstone_row(&api.db), dump_query(&api.db, "SELECT * FROM _emdash_media_usage_index_status"));
            let before = state();
            let out = block_on(repo::fence(&api.db, &lease(&id, token, DeletionPhase::Fence, force), 50)).unwrap();
            assert_eq!(out, Fence::Stale, "{what} ({mode})");
            assert_eq!(state(), before, "{what} ({mode}): nothing changed");
        }
    }
    // The controls: with every precondition in place the same setups cancel or fence.
    for (mode, expected) in
        [("live entry", Fence::HasContent), ("trashed entries", Fence::Fenced), ("forced", Fence::Fenced)]
    {
        let api = Api::new();
        data(&api.post("/schema/collections", &json!({"slug": "posts", "label": "Posts"})));
        data(&api.post("/content/posts", &json!({"slug": "entry"})));
        if mode == "trashed entries" {
            exec_sql(&api.db, "UPDATE ec_posts SET deleted_at = '2026-01-01T00:00:00.000Z'");
        }
        let id = collection_id(&api.db, "posts");
        let force = mode == "forced";
        leased_tombstone(&api.db, &id, "fence", "t", force);
        assert_eq!(
            block_on(repo::fence(&api.db, &lease(&id, "t", DeletionPhase::Fence, force), 50)).unwrap(),
            expected,
            "{mode}"
        );
    }
}

#[test]
fn the_tombstone_is_created_only_for_the_exact_actively_captured_collection() {
    let sabotages = [
        "UPDATE _emdash_media_usage_index_status SET collection_id = 'other'",
        "UPDATE _emdash_media_usage_index_status SET scope_key = 'other'",
        "UPDATE _emdash_media_usage_index_status SET adapter_id = 'other'",
        "UPDATE _emdash_media_usage_index_status SET scope_type = 'other'",
        "UPDATE _emdash_media_usage_index_status SET capture_state = 'deleting'",
    ];
    for sabotage in sabotages {
        let api = Api::new();
        data(&api.post("/schema/collections", &json!({"slug": "posts", "label": "Posts"})));
        exec_sql(&api.db, sabotage);
        let r = delete(&api, "posts?force=true");
        assert_eq!((r.status, code(&r)), (409, "MEDIA_USAGE_CAPTURE_INACTIVE".into()), "{sabotage}: {}", r.body);
        assert!(tombstone(&api.db, "posts").is_none(), "{sabotage}");
    }
    // The registry row renamed, replaced or gone between the request's read and its insert: no
    // tombstone.
    for (change, status, want) in [
        ("UPDATE _emdash_collections SET slug = 'renamed'", 404, "COLLECTION_NOT_FOUND"),
        ("DELETE FROM _emdash_collections", 404, "COLLECTION_NOT_FOUND"),
        (
            "PRAGMA foreign_keys = OFF; UPDATE _emdash_collections SET id = 'replacement'; PRAGMA foreign_keys = ON",
            409,
            "CONFLICT",
        ),
    ] {
        let api = Api::new();
        data(&api.post("/schema/collections", &json!({"slug": "posts", "label": "Posts"})));
        let hooked = Hooked::new(&api.db)
            .before("INSERT INTO _emdash_media_usage_collection_deletions", move |db| exec_sql(db, change));
        let r = call_on(&hooked, "DELETE", "/schema/collections/posts?force=true");
        hooked.done();
        assert_eq!((r.status, code(&r)), (status, want.into()), "{change}: {}", r.body);
        assert_eq!(scalar(&api.db, "SELECT count(*) FROM _emdash_media_usage_collection_deletions"), 0, "{change}");
    }
}

#[test]
fn a_delete_takes_over_only_its_own_due_front_phase() {
    let api = Api::new();
    data(&api.post("/schema/collections", &json!({"slug": "posts", "label": "Posts"})));
    data(&api.post("/schema/collections", &json!({"slug": "pages", "label": "Pages"})));
    let (posts, pages) = (collection_id(&api.db, "posts"), collection_id(&api.db, "pages"));
    // Both have an expired front phase; deleting posts leaves pages' tombstone alone.
    for (id, slug) in [(&posts, "posts"), (&pages, "pages")] {
        exec_sql(
            &api.db,
            &format!(
                "INSERT INTO _emdash_media_usage_collection_deletions (collection_id, collection_slug, state, phase, lease_token, lease_expires_at)
                 VALUES ('{id}', '{slug}', 'leased', 'fence', 'dead', '2000-01-01T00:00:00.000Z')"
            ),
        );
    }
    data(&delete(&api, "posts"));
    assert_eq!(tombstone(&api.db, "pages").unwrap().3.as_deref(), Some("dead"), "untouched");
    // Backing off after a failure (not due yet): not taken over.
    exec_sql(
        &api.db,
        "UPDATE _emdash_media_usage_collection_deletions SET state = 'retry', lease_token = NULL, lease_expires_at = NULL,
           next_attempt_at = '2999-01-01T00:00:00.000Z' WHERE collection_slug = 'pages'",
    );
    let r = delete(&api, "pages");
    assert_eq!((r.status, code(&r)), (409, "CONFLICT".into()), "{}", r.body);
    assert_eq!(r.body_json()["error"]["details"]["state"], "retry");
    assert_eq!(tombstone(&api.db, "pages").unwrap().0, "retry");
    // Pending but not due (a future next attempt): not taken over either.
    exec_sql(
        &api.db,
        "UPDATE _emdash_media_usage_collection_deletions SET state = 'pending' WHERE collection_slug = 'pages'",
    );
    assert_eq!(delete(&api, "pages").status, 409);
    // A tick moved it past the front phases between the request's read and its claim: 200, and
    // the request does not touch it.
    exec_sql(&api.db, "UPDATE _emdash_media_usage_collection_deletions SET next_attempt_at = '2000-01-01T00:00:00.000Z' WHERE collection_slug = 'pages'");
    let hooked = Hooked::new(&api.db).before("force_delete = max(force_delete", |db| {
        exec_sql(
            db,
            "UPDATE _emdash_media_usage_collection_deletions SET phase = 'work' WHERE collection_slug = 'pages'",
        );
    });
    let r = call_on(&hooked, "DELETE", "/schema/collections/pages");
    hooked.done();
    assert_eq!(r.status, 200, "{}", r.body);
    assert_eq!(tombstone(&api.db, "pages"), Some(("pending".into(), "work".into(), 0, None)));
}

#[test]
fn the_lane_claims_only_due_deletions() {
    let api = Api::new();
    let id = deleted_collection(&api, "posts");
    let b = CleanupBatch::Fixed(50);
    let set = |sql: &str| {
        exec_sql(
            &api.db,
            &format!("UPDATE _emdash_media_usage_collection_deletions SET {sql} WHERE collection_id = '{id}'"),
        )
    };
    for (what, sql) in [
        ("pending, not due yet", "state = 'pending', next_attempt_at = '2999-01-01T00:00:00.000Z'"),
        ("retrying, not due yet", "state = 'retry', next_attempt_at = '2999-01-01T00:00:00.000Z'"),
        ("leased, lease live", "state = 'leased', lease_token = 'x', lease_expires_at = '2999-01-01T00:00:00.000Z', next_attempt_at = '2000-01-01T00:00:00.000Z'"),
        ("failed", "state = 'failed', lease_token = NULL, lease_expires_at = NULL, next_attempt_at = '2000-01-01T00:00:00.000Z'"),
    ] {
        set(sql);
        let mut held = None;
        assert_eq!(step(&api.db, b, &mut held), None, "{what}");
    }
    // An expired lease is due, whatever next_attempt_at says.
    set("state = 'leased', lease_token = 'x', lease_expires_at = '2000-01-01T00:00:00.000Z', next_attempt_at = '2999-01-01T00:00:00.000Z'");
    let mut held = None;
    assert!(step(&api.db, b, &mut held).is_some());
}

#[test]
fn a_checkpoint_needs_the_live_lease_of_its_own_deletion_at_its_phase() {
    let api = Api::new();
    let id = deleted_collection(&api, "posts");
    let other = deleted_collection(&api, "pages");
    // `posts` is held at `work` by `t`, with nothing left to delete (its exit holds).
    forge_lease(&api, "_emdash_media_usage_collection_deletions", &format!("collection_id = '{id}'"), "t", FAR_AHEAD);
    let before = tombstone_row(&api.db);
    for (what, l) in [
        ("another token", lease(&id, "u", DeletionPhase::Work, false)),
        ("another phase", lease(&id, "t", DeletionPhase::Sources, false)),
        ("another deletion", lease(&other, "t", DeletionPhase::Work, false)),
    ] {
        assert!(!block_on(repo::checkpoint(&api.db, &l, DeletionPhase::Sources, BATCH, false)).unwrap(), "{what}");
        assert!(!block_on(repo::checkpoint(&api.db, &l, l.phase, BATCH, true)).unwrap(), "{what}: release");
        assert_eq!(tombstone_row(&api.db), before, "{what}");
    }
    expire_leases(&api, "_emdash_media_usage_collection_deletions", "lease_token = 't'");
    let mine = lease(&id, "t", DeletionPhase::Work, false);
    assert!(
        !block_on(repo::checkpoint(&api.db, &mine, DeletionPhase::Sources, BATCH, false)).unwrap(),
        "an expired lease"
    );
    forge_lease(&api, "_emdash_media_usage_collection_deletions", "lease_token = 't'", "t", FAR_AHEAD);
    assert!(block_on(repo::checkpoint(&api.db, &mine, DeletionPhase::Sources, BATCH, false)).unwrap(), "the holder");
}

#[test]
fn a_phase_is_left_only_once_what_it_removes_is_gone() {
    const FENCED: &str =
        "UPDATE _emdash_media_usage_index_status SET capture_state = 'deleting' WHERE collection_id = '{id}';";
    const UNREGISTERED: &str = "DELETE FROM _emdash_collections WHERE id = '{id}';";
    const DROPPED: &str = "DROP TABLE ec_posts;";
    const NO_STATUS: &str = "DELETE FROM _emdash_media_usage_index_status WHERE collection_id = '{id}';";
    // (phase, the state earlier phases left, what this phase must remove)
    let cases: Vec<(&str, String, &str)> = vec![
        ("fence", String::new(), FENCED),
        ("registry", FENCED.to_owned(), UNREGISTERED),
        ("table", format!("{FENCED}{UNREGISTERED}"), DROPPED),
        (
            "work",
            format!("{FENCED}{UNREGISTERED}{DROPPED} INSERT INTO _emdash_media_usage_work (collection_id, content_id, collection_slug) VALUES ('{{id}}', 'e', 'posts');"),
            "DELETE FROM _emdash_media_usage_work;",
        ),
        (
            "work",
            format!("{FENCED}{UNREGISTERED}{DROPPED} INSERT INTO revisions (id, collection, entry_id, data) VALUES ('r', 'posts', 'e', '{{}}');"),
            "DELETE FROM revisions;",
        ),
        (
            "sources",
            format!("{FENCED}{UNREGISTERED}{DROPPED} INSERT INTO _emdash_media_usage_sources (source_key, collection_id, collection_slug, content_id, source_variant) VALUES ('content:{{id}}:e:columns', '{{id}}', 'posts', 'e', 'columns');"),
            "DELETE FROM _emdash_media_usage_sources;",
        ),
        (
            "sources",
            format!("{FENCED}{UNREGISTERED}{DROPPED} INSERT INTO _emdash_media_usage (id, source_key, generation, field_slug, field_path, reference_type, provider_asset_id) VALUES ('u', 'content:{{id}}:e:columns', 'g', 'h', 'h', 'image_field', 'm');"),
            "DELETE FROM _emdash_media_usage;",
        ),
        ("status", format!("{FENCED}{UNREGISTERED}{DROPPED}"), NO_STATUS),
        (
            "status",
            format!("{FENCED}{UNREGISTERED}{DROPPED}{NO_STATUS} INSERT INTO _emdash_media_usage_reconciliations (collection_id, collection_slug, run_token) VALUES ('{{id}}', 'posts', 'r');"),
            "DELETE FROM _emdash_media_usage_reconciliations;",
        ),
    ];
    for (phase, state, remove) in cases {
        let api = Api::new();
        data(&api.post("/schema/collections", &json!({"slug": "posts", "label": "Posts"})));
        let id = collection_id(&api.db, "posts");
        // A bystander collection that has everything a phase removes, fenced, and coverage rows
        // of another adapter and scope for `posts`, fenced too: none of it may hold up `posts`.
        data(&api.post("/schema/collections", &json!({"slug": "pages", "label": "Pages"})));
        let pages = collection_id(&api.db, "pages");
        exec_sql(
            &api.db,
            &format!(
                "UPDATE _emdash_media_usage_index_status SET capture_state = 'deleting' WHERE collection_id = '{pages}';
                 INSERT INTO _emdash_media_usage_index_status (adapter_id, scope_type, scope_key, collection_id, capture_state) VALUES ('other', 'collection', 'posts', '{id}', 'deleting');
                 INSERT INTO _emdash_media_usage_index_status (adapter_id, scope_type, scope_key, collection_id, capture_state) VALUES ('content-media', 'other', 'posts', '{id}', 'deleting');
                 INSERT INTO _emdash_media_usage_work (collection_id, content_id, collection_slug) VALUES ('{pages}', 'e', 'pages');
                 INSERT INTO revisions (id, collection, entry_id, data) VALUES ('rp', 'pages', 'e', '{{}}');
                 INSERT INTO _emdash_media_usage_sources (source_key, collection_id, collection_slug, content_id, source_variant) VALUES ('content:{pages}:e:columns', '{pages}', 'pages', 'e', 'columns');
                 INSERT INTO _emdash_media_usage (id, source_key, generation, field_slug, field_path, reference_type, provider_asset_id) VALUES ('up', 'content:{pages}:e:columns', 'g', 'h', 'h', 'image_field', 'm');
                 INSERT INTO _emdash_media_usage_reconciliations (collection_id, collection_slug, run_token) VALUES ('{pages}', 'pages', 'r');"
            ),
        );
        leased_tombstone(&api.db, &id, phase, "t", false);
        exec_sql(&api.db, &state.replace("{id}", &id));
        let l = lease(&id, "t", phase_of(phase), false);
        let next = l.phase.next().unwrap();
        assert!(!block_on(repo::checkpoint(&api.db, &l, next, BATCH, false)).unwrap(), "{phase} left before {remove}");
        // Staying at the phase (a release) does not need its exit.
        assert!(block_on(repo::checkpoint(&api.db, &l, l.phase, BATCH, false)).unwrap(), "{phase}: staying");
        exec_sql(
            &api.db,
            &remove
                .replace("{id}", &id)
                .replace(
                    "DELETE FROM _emdash_media_usage_work;",
                    &format!("DELETE FROM _emdash_media_usage_work WHERE collection_id = '{id}';"),
                )
                .replace("DELETE FROM revisions;", "DELETE FROM revisions WHERE collection = 'posts';")
                .replace(
                    "DELETE FROM _emdash_media_usage_sources;",
                    &format!("DELETE FROM _emdash_media_usage_sources WHERE collection_id = '{id}';"),
                )
                .replace(
                    "DELETE FROM _emdash_media_usage;",
                    &format!("DELETE FROM _emdash_media_usage WHERE source_key LIKE 'content:{id}:%';"),
                )
                .replace(
                    "DELETE FROM _emdash_media_usage_reconciliations;",
                    &format!("DELETE FROM _emdash_media_usage_reconciliations WHERE collection_id = '{id}';"),
                ),
        );
        assert!(block_on(repo::checkpoint(&api.db, &l, next, BATCH, false)).unwrap(), "{phase} once {remove}");
    }
}

fn phase_of(p: &str) -> DeletionPhase {
    DeletionPhase::parse(p).unwrap()
}

#[test]
fn the_registry_table_and_finalize_steps_need_every_precondition() {
    // Each case: a step that must change nothing, then the same step by the rightful holder.
    struct Case {
        what: &'static str,
        phase: &'static str,
        setup: &'static str,
        token: &'static str,
        other_id: bool,
    }
    const FENCED: &str =
        "UPDATE _emdash_media_usage_index_status SET capture_state = 'deleting' WHERE scope_key = 'posts';";
    let cases = [
        Case { what: "registry: another collection is fenced", phase: "registry", setup: "UPDATE _emdash_media_usage_index_status SET capture_state = 'deleting' WHERE scope_key = 'pages';", token: "t", other_id: false },
        Case { what: "registry: another adapter's row is fenced", phase: "registry", setup: "INSERT INTO _emdash_media_usage_index_status (adapter_id, scope_type, scope_key, collection_id, capture_state) SELECT 'other', 'collection', 'posts', collection_id, 'deleting' FROM _emdash_media_usage_index_status WHERE scope_key = 'posts';", token: "t", other_id: false },
        Case { what: "registry: another scope's row is fenced", phase: "registry", setup: "INSERT INTO _emdash_media_usage_index_status (adapter_id, scope_type, scope_key, collection_id, capture_state) SELECT 'content-media', 'other', 'posts', collection_id, 'deleting' FROM _emdash_media_usage_index_status WHERE scope_key = 'posts';", token: "t", other_id: false },
        Case { what: "registry: the lease of another deletion", phase: "registry", setup: FENCED, token: "t", other_id: true },

        Case { what: "registry: an expired lease", phase: "registry", setup: "UPDATE _emdash_media_usage_index_status SET capture_state = 'deleting' WHERE scope_key = 'posts'; UPDATE _emdash_media_usage_collection_deletions SET lease_expires_at = '2000-01-01T00:00:00.000Z' WHERE collection_slug = 'posts';", token: "t", other_id: false },
        Case { what: "table: another token", phase: "table", setup: "UPDATE _emdash_media_usage_index_status SET capture_state = 'deleting' WHERE scope_key = 'posts'; DELETE FROM _emdash_collections WHERE slug = 'posts';", token: "u", other_id: false },
        Case { what: "table: the tombstone is at another phase", phase: "table", setup: "UPDATE _emdash_media_usage_index_status SET capture_state = 'deleting' WHERE scope_key = 'posts'; DELETE FROM _emdash_collections WHERE slug = 'posts'; UPDATE _emdash_media_usage_collection_deletions SET phase = 'work' WHERE collection_slug = 'posts';", token: "t", other_id: false },
        Case { what: "table: the tombstone names another slug", phase: "table", setup: "UPDATE _emdash_media_usage_index_status SET capture_state = 'deleting' WHERE scope_key = 'posts'; DELETE FROM _emdash_collections WHERE slug = 'posts'; UPDATE _emdash_media_usage_collection_deletions SET collection_slug = 'posts_old' WHERE collection_slug = 'posts';", token: "t", other_id: false },
        Case { what: "table: the lease of another deletion", phase: "table", setup: "UPDATE _emdash_media_usage_index_status SET capture_state = 'deleting' WHERE scope_key = 'posts'; DELETE FROM _emdash_collections WHERE slug = 'posts';", token: "t", other_id: true },
        Case { what: "finalize: another token", phase: "finalize", setup: "", token: "u", other_id: false },
        Case { what: "finalize: at another phase", phase: "finalize", setup: "UPDATE _emdash_media_usage_collection_deletions SET phase = 'status' WHERE collection_slug = 'posts';", token: "t", other_id: false },
        Case { what: "finalize: an expired lease", phase: "finalize", setup: "UPDATE _emdash_media_usage_collection_deletions SET lease_expires_at = '2000-01-01T00:00:00.000Z' WHERE collection_slug = 'posts';", token: "t", other_id: false },
        Case { what: "finalize: the lease of another deletion", phase: "finalize", setup: "", token: "t", other_id: true },
    ];
    for c in cases {
        let api = Api::new();
        data(&api.post("/schema/collections", &json!({"slug": "posts", "label": "Posts"})));
        data(&api.post("/schema/collections", &json!({"slug": "pages", "label": "Pages"})));
        let id = collection_id(&api.db, "posts");
        let pages = collection_id(&api.db, "pages");
        if c.phase == "finalize" {
            // Everything of `posts` is gone but its tombstone.
            data(&delete(&api, "posts"));
            exec_sql(&api.db, &format!("DELETE FROM _emdash_media_usage_index_status WHERE collection_id = '{id}'"));
        }
        leased_tombstone(&api.db, &id, c.phase, "t", false);
        // `pages` has a deletion held under the same token (only a confused holder could mix them).
        exec_sql(
            &api.db,
            &format!(
                "INSERT INTO _emdash_media_usage_collection_deletions (collection_id, collection_slug, state, phase, lease_token, lease_expires_at)
                 VALUES ('{pages}', 'pages', 'leased', '{}', 't', '2999-01-01T00:00:00.000Z')",
                c.phase
            ),
        );
        exec_sql(&api.db, c.setup);
        let l = Lease {
            collection_id: if c.other_id { pages.clone() } else { id.clone() },
            slug: Ident::parse("posts").unwrap(),
            token: c.token.into(),
            force: false,
            phase: phase_of(c.phase),
        };
        let before = dump(&api.db, &id, "posts") + &tombstone_row(&api.db);
        let changed = match c.phase {
            "registry" => block_on(repo::delete_registry(&api.db, &l, 50)).unwrap(),
            "table" => block_on(repo::drop_table(&api.db, &l, 50, false)).is_ok(),
            _ => block_on(repo::finalize(&api.db, &l)).unwrap(),
        };
        assert!(!changed, "{}", c.what);
        assert_eq!(dump(&api.db, &id, "posts") + &tombstone_row(&api.db), before, "{}: nothing changed", c.what);
        assert_eq!(scalar(&api.db, "SELECT count(*) FROM _emdash_batch_guard"), 0);
    }
    // A collection registered under the slug with another id (it bypassed the reservation): the
    // registry step deletes only the exact id, and the table step will not drop its table.
    let api = Api::new();
    data(&api.post("/schema/collections", &json!({"slug": "posts", "label": "Posts"})));
    let id = collection_id(&api.db, "posts");
    exec_sql(
        &api.db,
        "UPDATE _emdash_media_usage_index_status SET capture_state = 'deleting' WHERE scope_key = 'posts';
         PRAGMA foreign_keys = OFF; UPDATE _emdash_collections SET id = 'replacement' WHERE slug = 'posts'; PRAGMA foreign_keys = ON;",
    );
    leased_tombstone(&api.db, &id, "registry", "t", false);
    block_on(repo::delete_registry(&api.db, &lease(&id, "t", DeletionPhase::Registry, false), 50)).unwrap();
    assert_eq!(scalar(&api.db, "SELECT count(*) FROM _emdash_collections WHERE id = 'replacement'"), 1);
    leased_tombstone(&api.db, &id, "table", "t", false);
    assert!(matches!(
        block_on(repo::drop_table(&api.db, &lease(&id, "t", DeletionPhase::Table, false), 50, false)),
        Err(Error::Stale)
    ));
    assert_eq!(scalar(&api.db, "SELECT count(*) FROM sqlite_master WHERE name = 'ec_posts'"), 1);
}

#[test]
fn of_several_due_deletions_one_step_claims_and_advances_exactly_one() {
    let api = Api::new();
    let ids: Vec<String> = (0..5).map(|i| deleted_collection(&api, &format!("c{i}"))).collect();
    let before = tombstone_row(&api.db);
    let mut held = None;
    let metered = Metered::new(&api.db, MonotonicClock::default());
    let mut step_on = || {
        let before = metered.usage().statements;
        let outcome =
            block_on(deletion::step(&metered, &MonotonicClock::default(), CleanupBatch::Fixed(50), &mut held)).unwrap();
        (outcome, metered.usage().statements - before)
    };
    // One claim and three counting statements (work rows, revisions, occurrences: none of each),
    // then the last kind's count (sources).
    assert_eq!(step_on(), (Some(StepOutcome::Counted { statements: 3 }), 4));
    assert_eq!(step_on(), (Some(StepOutcome::Counted { statements: 1 }), 1));
    let (outcome, statements) = step_on();
    assert!(
        matches!(outcome, Some(StepOutcome::Deleted { advanced_to: Some(DeletionPhase::Sources), .. })),
        "{outcome:?}"
    );
    // Two deletes (work rows, revisions), each with its counter's statement, and a checkpoint.
    assert_eq!(statements, 5);
    let changed: Vec<&String> = ids
        .iter()
        .filter(|id| scalar(&api.db, &format!("SELECT count(*) FROM _emdash_media_usage_collection_deletions WHERE collection_id = '{id}' AND phase = 'sources'")) == 1)
        .collect();
    assert_eq!(changed.len(), 1, "exactly one advanced");
    let still = tombstone_row(&api.db).lines().filter(|l| before.contains(*l)).count();
    assert_eq!(still, 4, "the other four are untouched");
}

#[test]
fn the_status_step_reads_what_is_left_in_one_statement() {
    let api = Api::new();
    deleted_collection(&api, "posts");
    let mut held = None;
    let b = CleanupBatch::Fixed(50);
    step_until(&api.db, b, &mut held, "status");
    let metered = Metered::new(&api.db, MonotonicClock::default());
    let outcome = block_on(deletion::step(&metered, &MonotonicClock::default(), b, &mut held)).unwrap();
    assert_eq!(outcome, Some(StepOutcome::Advanced { to: DeletionPhase::Finalize }));
    // One SELECT for every leftover (work, sources, occurrences, revisions), one batch of three.
    let u = metered.usage();
    assert_eq!((u.statements, u.results), (4, 4));
}

#[test]
fn a_deletion_whose_holders_keep_dying_fails_visibly_instead_of_looping() {
    let api = Api::new();
    let id = deleted_collection(&api, "posts");
    work_rows(&api.db, &id, 3);
    // Five holders claimed it and died without recording anything; the sixth claim gives up.
    forge_lease(&api, "_emdash_media_usage_collection_deletions", "TRUE", "dead", LONG_AGO);
    exec_sql(&api, "UPDATE _emdash_media_usage_collection_deletions SET attempt_count = 5");
    let mut held = None;
    let outcome = step(&api.db, CleanupBatch::Fixed(50), &mut held).unwrap();
    assert!(matches!(outcome, StepOutcome::Failed { terminal: true, .. }), "{outcome:?}");
    assert_eq!(tombstone(&api.db, "posts").map(|t| (t.0, t.2)), Some(("failed".into(), 6)));
    assert_eq!(scalar(&api.db, "SELECT count(*) FROM _emdash_media_usage_work"), 3, "the step did not run");
    // With one attempt left it still runs.
    forge_lease(&api, "_emdash_media_usage_collection_deletions", "TRUE", "dead", LONG_AGO);
    exec_sql(&api, "UPDATE _emdash_media_usage_collection_deletions SET attempt_count = 4");
    assert!(matches!(step(&api.db, CleanupBatch::Fixed(50), &mut held), Some(StepOutcome::Deleted { .. })));
}

#[test]
fn finalize_ignores_other_collections_and_refuses_leftover_occurrences_and_runs() {
    // Another collection's rows of every kind do not hold up `posts`.
    let api = Api::new();
    let id = deleted_collection(&api, "posts");
    data(&api.post("/schema/collections", &json!({"slug": "pages", "label": "Pages"})));
    let pages = collection_id(&api.db, "pages");
    exec_sql(
        &api.db,
        &format!(
            "INSERT INTO _emdash_media_usage_work (collection_id, content_id, collection_slug, state) VALUES ('{pages}', 'e', 'pages', 'failed');
             INSERT INTO _emdash_media_usage_sources (source_key, collection_id, collection_slug, content_id, source_variant) VALUES ('content:{pages}:e:columns', '{pages}', 'pages', 'e', 'columns');
             INSERT INTO _emdash_media_usage_reconciliations (collection_id, collection_slug, run_token, state, lease_token, lease_expires_at) VALUES ('{pages}', 'pages', 'r', 'leased', 'x', '2999-01-01T00:00:00.000Z');"
        ),
    );
    let mut held = None;
    let b = CleanupBatch::Fixed(50);
    step_until(&api.db, b, &mut held, "finalize");
    assert_eq!(step(&api.db, b, &mut held), Some(StepOutcome::Finalized));
    assert_gone(&api.db, &id, "posts");
    for table in ["_emdash_media_usage_work", "_emdash_media_usage_sources", "_emdash_media_usage_reconciliations"] {
        assert_eq!(
            scalar(&api.db, &format!("SELECT count(*) FROM {table} WHERE collection_id = '{pages}'")),
            1,
            "{table} of pages kept"
        );
    }

    // Its own leftover occurrences or repair runs do.
    for leftover in [
        "INSERT INTO _emdash_media_usage (id, source_key, generation, field_slug, field_path, reference_type, provider_asset_id) VALUES ('u', 'content:{id}:e:columns', 'g', 'h', 'h', 'image_field', 'm')",
        "INSERT INTO _emdash_media_usage_reconciliations (collection_id, collection_slug, run_token) VALUES ('{id}', 'posts', 'r')",
    ] {
        let api = Api::new();
        let id = deleted_collection(&api, "posts");
        let mut held = None;
        step_until(&api.db, b, &mut held, "finalize");
        exec_sql(&api.db, &leftover.replace("{id}", &id));
        let outcome = step(&api.db, b, &mut held).unwrap();
        assert!(matches!(outcome, StepOutcome::Failed { terminal: false, .. }), "{leftover}: {outcome:?}");
        assert!(tombstone(&api.db, "posts").is_some());
    }
}

#[test]
fn operators_reopen_failed_retrying_or_expired_deletions_and_nothing_else() {
    let api = Api::new();
    let id = deleted_collection(&api, "posts");
    let set = |sql: &str| exec_sql(&api.db, &format!("UPDATE _emdash_media_usage_collection_deletions SET {sql}"));
    let retry = || api.post("/admin/media-usage/collection-deletions/retry", &json!({"collectionId": id}));
    // Pending already: refused, and the repository refuses it too (the handler's read may race).
    let r = retry();
    assert_eq!((r.status, code(&r)), (409, "WORK_CHANGED".into()));
    assert!(block_on(repo::retry(&api.db, &id, 50)).unwrap().is_none());
    // Leased with a live lease: refused with its expiry; the repository refuses it as well.
    set("state = 'leased', lease_token = 'x', lease_expires_at = '2999-01-01T00:00:00.000Z'");
    let r = retry();
    assert_eq!((r.status, code(&r)), (409, "WORK_LEASE_ACTIVE".into()));
    assert_eq!(r.body_json()["error"]["details"]["leaseExpiresAt"], "2999-01-01T00:00:00.000Z");
    assert!(block_on(repo::retry(&api.db, &id, 50)).unwrap().is_none());
    for (what, sql) in [
        ("failed", "state = 'failed', lease_token = NULL, lease_expires_at = NULL"),
        ("retrying", "state = 'retry', lease_token = NULL, lease_expires_at = NULL"),
        ("expired", "state = 'leased', lease_token = 'x', lease_expires_at = '2000-01-01T00:00:00.000Z'"),
    ] {
        set(&format!("{sql}, phase = 'sources', attempt_count = 3, last_error_code = 'X', next_attempt_at = '2999-01-01T00:00:00.000Z', cleanup_batch_rows = 10000"));
        let item = data(&retry())["item"].clone();
        assert_eq!(
            scalar(&api.db, "SELECT cleanup_batch_rows FROM _emdash_media_usage_collection_deletions"),
            50,
            "{what}: the batch starts afresh"
        );
        assert_eq!(
            (
                item["state"].as_str(),
                item["phase"].as_str(),
                item["attemptCount"].as_i64(),
                item["lastErrorCode"].is_null(),
                item["leaseExpiresAt"].is_null()
            ),
            (Some("pending"), Some("sources"), Some(0), true, true),
            "{what}"
        );
        assert_eq!(seconds_until_due(&api.db), 0, "{what}: due now");
    }
    let r = api.post("/admin/media-usage/collection-deletions/retry", &json!({"collectionId": "nope"}));
    assert_eq!((r.status, code(&r)), (404, "NOT_FOUND".into()));
}

#[test]
fn the_slug_stays_reserved_at_every_phase_until_the_tombstone_is_gone() {
    let api = Api::new();
    data(&api.post("/schema/collections", &json!({"slug": "posts", "label": "Posts"})));
    data(&api.post("/content/posts", &json!({"slug": "e", "status": "published"})));
    let id = collection_id(&api.db, "posts");
    exec_sql(
        &api.db,
        &format!("INSERT INTO _emdash_media_usage_collection_deletions (collection_id, collection_slug, force_delete) VALUES ('{id}', 'posts', 1)"),
    );
    let mut held = None;
    let b = CleanupBatch::Fixed(50);
    for _ in 0..20 {
        let Some(_) = tombstone(&api.db, "posts") else { break };
        let r = api.post("/schema/collections", &json!({"slug": "posts", "label": "Again"}));
        assert_eq!((r.status, code(&r)), (409, "COLLECTION_EXISTS".into()), "at {}", phase(&api.db, "posts"));
        step(&api.db, b, &mut held);
    }
    assert!(tombstone(&api.db, "posts").is_none());
    assert_eq!(api.post("/schema/collections", &json!({"slug": "posts", "label": "Again"})).status, 201);
    // A table of that name that is no collection's blocks it too.
    exec_sql(&api.db, "CREATE TABLE ec_stray (id TEXT)");
    let r = api.post("/schema/collections", &json!({"slug": "stray", "label": "Stray"}));
    assert_eq!((r.status, code(&r)), (409, "COLLECTION_EXISTS".into()), "{}", r.body);
}

#[test]
fn finalizing_one_deletion_leaves_another_alone_even_under_the_same_token() {
    let api = Api::new();
    let posts = deleted_collection(&api, "posts");
    let pages = deleted_collection(&api, "pages");
    for id in [&posts, &pages] {
        exec_sql(&api.db, &format!("DELETE FROM _emdash_media_usage_index_status WHERE collection_id = '{id}'"));
    }
    exec_sql(&api, "UPDATE _emdash_media_usage_collection_deletions SET phase = 'finalize'");
    forge_lease(&api, "_emdash_media_usage_collection_deletions", "TRUE", "t", FAR_AHEAD);
    assert!(block_on(repo::finalize(&api.db, &lease(&posts, "t", DeletionPhase::Finalize, false))).unwrap());
    assert!(tombstone(&api.db, "posts").is_none());
    assert_eq!(tombstone(&api.db, "pages").map(|t| t.1), Some("finalize".into()));
}

/// Fails every revision delete asked to remove more than 500 rows, as a statement that times
/// out would; everything else passes through. Remembers the largest batch of work rows asked,
/// and the batches of revisions asked, in order.
struct LargeRevisionDeletesFail<'a>(&'a SqliteExecutor, Cell<i64>, RefCell<Vec<i64>>);

impl LargeRevisionDeletesFail<'_> {
    fn admit(&self, stmt: &Statement) -> Result<(), Error> {
        let limit = stmt
            .params()
            .iter()
            .filter_map(|p| match p {
                media_usage_worker::exec::Value::Integer(n) => Some(*n),
                _ => None,
            })
            .max()
            .unwrap_or(0);
        if stmt.sql().starts_with("DELETE FROM _emdash_media_usage_work") {
            self.1.set(self.1.get().max(limit));
        }
        if stmt.sql().starts_with("DELETE FROM revisions") {
            self.2.borrow_mut().push(limit);
        }
        if stmt.sql().starts_with("DELETE FROM revisions") && limit > 500 {
            return Err(Error::Backend("D1_ERROR: statement timed out".into()));
        }
        Ok(())
    }
}

impl Executor for LargeRevisionDeletesFail<'_> {
    async fn run(&self, stmt: Statement) -> Result<Outcome, Error> {
        self.admit(&stmt)?;
        self.0.run(stmt).await
    }

    async fn batch(&self, stmts: Vec<Statement>) -> Result<Vec<Outcome>, Error> {
        stmts.iter().try_for_each(|s| self.admit(s))?;
        self.0.batch(stmts).await
    }
}

#[test]
fn a_batch_grown_on_work_rows_never_sticks_a_deletion_on_heavy_revisions() {
    let api = Api::new();
    let id = deleted_collection(&api, "posts");
    exec_sql(
        &api.db,
        &format!(
            "WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 3000)
             INSERT INTO _emdash_media_usage_work (collection_id, content_id, collection_slug)
             SELECT '{id}', printf('entry-%05d', i), 'posts' FROM n;
             WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 3000)
             INSERT INTO revisions (id, collection, entry_id, data)
             SELECT 'r' || i, 'posts', printf('entry-%05d', i), printf('%.20000c', 'x') FROM n;"
        ),
    );
    // The adaptive batch, on a clock that stands still: every full statement doubles it, so the
    // work rows grow it to its largest size.
    let policy = crate::support::policy().with_cleanup(CleanupBatch::Adaptive { target_ms: 200.0 });
    let exec = LargeRevisionDeletesFail(&api.db, Cell::new(0), RefCell::new(Vec::new()));
    let mut failures = 0;
    for _ in 0..60 {
        let clock = FnClock(|| 0.0);
        let metered = Metered::new(&exec, &clock);
        let report =
            block_on(tick::run(&metered, &clock, Budget::new(40, 60_000.0), &policy, tick::Continuation::Off, None));
        failures += report.count("deletionFailures");
        assert_ne!(tombstone(&api.db, "posts").map(|t| t.0).as_deref(), Some("failed"), "the deletion got stuck");
        if tombstone(&api.db, "posts").is_none() {
            break;
        }
        time_passes(&api.db);
    }
    assert!(tombstone(&api.db, "posts").is_none(), "the deletion finished");
    assert_eq!(scalar(&api.db, "SELECT count(*) FROM revisions"), 0);
    assert!(exec.1.get() >= 1_600, "the work rows grew the batch: {}", exec.1.get());
    // Each time one failed, the next holder started from half of it; the failures (more than
    // the attempts a deletion gets) came after progress, which resets the attempts.
    assert!(failures > 5, "statements over 500 rows were tried, and failed: {failures}");
    // A tick's first revision statement deletes one row to measure what a row costs, and the
    // next is sized from it: the two are one batch.
    let mut asked: Vec<i64> = Vec::new();
    let mut probe = 0;
    for &n in exec.2.borrow().iter() {
        if n == 1 && probe == 0 {
            probe = 1;
        } else {
            asked.push(n + probe);
            probe = 0;
        }
    }
    assert!(asked[0] <= 50, "the revisions started small, not at the work rows' size: {asked:?}");
    // The next holder resumes at the revisions with half the batch that failed (the kind of row
    // and its batch are stored together).
    for pair in asked.windows(2).filter(|p| p[0] > 500) {
        assert_eq!(pair[1], pair[0] / 2, "{asked:?}");
    }
}
