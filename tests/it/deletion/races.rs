//! Guards, leases and races: the fence, the registry and table steps, expired holders, and
//! projections and content writes racing the delete.

use super::*;
use crate::support::expire_leases;

#[test]
fn the_fence_tells_content_from_a_lost_race_and_a_forced_fence_never_reports_content() {
    let api = Api::new();
    data(&api.post("/schema/collections", &json!({"slug": "posts", "label": "Posts"})));
    data(&api.post("/content/posts", &json!({"slug": "live"})));
    let id = collection_id(&api.db, "posts");
    // Not forced, a live entry: has content, the tombstone is cancelled, the collection kept.
    leased_tombstone(&api.db, &id, "fence", "t", false);
    let fence = |l: &Lease| block_on(repo::fence(&api.db, l, 50)).unwrap();
    assert_eq!(fence(&lease(&id, "t", DeletionPhase::Fence, false)), Fence::HasContent);
    assert!(tombstone(&api.db, "posts").is_none());
    assert_eq!(capture_state(&api.db), "active");
    // Forced, but the registry row is gone: stale, never "has content"; nothing changes.
    leased_tombstone(&api.db, &id, "fence", "t", true);
    exec_sql(&api.db, &format!("DELETE FROM _emdash_collections WHERE id = '{id}'"));
    assert_eq!(fence(&lease(&id, "t", DeletionPhase::Fence, true)), Fence::Stale);
    assert_eq!(capture_state(&api.db), "active");
    assert_eq!(tombstone(&api.db, "posts").unwrap().1, "fence", "a forced fence never cancels");
    // Not forced with the registry row gone: stale too (cancelling would orphan the table).
    leased_tombstone(&api.db, &id, "fence", "t", false);
    assert_eq!(fence(&lease(&id, "t", DeletionPhase::Fence, false)), Fence::Stale);
    assert!(tombstone(&api.db, "posts").is_some());
    // Registry back, entries trashed, but a wrong token: stale.
    exec_sql(&api.db, &format!("INSERT INTO _emdash_collections (id, slug, label) VALUES ('{id}', 'posts', 'Posts')"));
    exec_sql(&api.db, "UPDATE ec_posts SET deleted_at = '2026-01-01T00:00:00.000Z'");
    assert_eq!(fence(&lease(&id, "wrong", DeletionPhase::Fence, false)), Fence::Stale);
    assert_eq!(capture_state(&api.db), "active");
    // An expired lease: stale.
    expire_leases(&api, "_emdash_media_usage_collection_deletions", "TRUE");
    assert_eq!(fence(&lease(&id, "t", DeletionPhase::Fence, false)), Fence::Stale);
    // The live holder: fenced, checkpointed to `registry`; every content write is refused now.
    leased_tombstone(&api.db, &id, "fence", "t", false);
    assert_eq!(fence(&lease(&id, "t", DeletionPhase::Fence, false)), Fence::Fenced);
    assert_eq!(capture_state(&api.db), "deleting");
    assert_eq!(tombstone(&api.db, "posts").unwrap().1, "registry");
    let r = api.post("/content/posts", &json!({"slug": "late"}));
    assert_eq!((r.status, code(&r)), (409, "MEDIA_USAGE_CAPTURE_INACTIVE".into()));
    assert_eq!(
        scalar(
            &api.db,
            "SELECT count(*) FROM _emdash_media_usage_work WHERE content_id NOT IN (SELECT id FROM ec_posts)"
        ),
        0
    );
}

#[test]
fn the_registry_goes_only_while_fenced_and_the_table_only_under_a_live_lease_at_table() {
    let api = Api::new();
    data(&api.post("/schema/collections", &json!({"slug": "posts", "label": "Posts"})));
    let id = collection_id(&api.db, "posts");
    // Registry phase without a fence (status still active): nothing happens.
    leased_tombstone(&api.db, &id, "registry", "t", false);
    assert!(!block_on(repo::delete_registry(&api.db, &lease(&id, "t", DeletionPhase::Registry, false), 50)).unwrap());
    assert_eq!(scalar(&api.db, "SELECT count(*) FROM _emdash_collections"), 1);
    // Table phase while the collection is still registered: the guard refuses the drop.
    leased_tombstone(&api.db, &id, "table", "t", false);
    let drop =
        |token: &str| block_on(repo::drop_table(&api.db, &lease(&id, token, DeletionPhase::Table, false), 50, true));
    assert!(matches!(drop("t"), Err(Error::Stale)));
    assert_eq!(scalar(&api.db, "SELECT count(*) FROM sqlite_master WHERE name = 'ec_posts'"), 1);
    exec_sql(&api.db, &format!("DELETE FROM _emdash_collections WHERE id = '{id}'"));
    // A wrong token, or an expired lease: stale, the table stays, no guard row is left behind.
    assert!(matches!(drop("wrong"), Err(Error::Stale)));
    expire_leases(&api, "_emdash_media_usage_collection_deletions", "TRUE");
    assert!(matches!(drop("t"), Err(Error::Stale)));
    assert_eq!(scalar(&api.db, "SELECT count(*) FROM sqlite_master WHERE name = 'ec_posts'"), 1);
    assert_eq!(scalar(&api.db, "SELECT count(*) FROM _emdash_batch_guard"), 0);
    assert_eq!(scalar(&api.db, "SELECT count(*) FROM _emdash_media_usage_collection_deletions"), 1);
    // The live holder drops it and is released at `work`.
    leased_tombstone(&api.db, &id, "table", "t", false);
    drop("t").unwrap();
    assert_eq!(scalar(&api.db, "SELECT count(*) FROM sqlite_master WHERE name = 'ec_posts'"), 0);
    assert_eq!(tombstone(&api.db, "posts"), Some(("pending".into(), "work".into(), 0, None)));
}

#[test]
fn a_holder_whose_lease_expired_changes_nothing_once_another_took_over() {
    let api = Api::new();
    let id = deleted_collection(&api, "posts");
    work_rows(&api.db, &id, 120);
    let b = CleanupBatch::Fixed(50);
    let mut a = None;
    assert_eq!(step(&api.db, b, &mut a), Some(deleted(&[(Rows::Work, 50)], None)));
    // A stalls; its lease expires and B takes over.
    time_passes(&api.db);
    let mut b_held = None;
    assert_eq!(step(&api.db, b, &mut b_held), Some(deleted(&[(Rows::Work, 50)], None)));
    let b_token = tombstone(&api.db, "posts").unwrap().3;
    // A wakes up: its guarded deletes and its checkpoint change nothing, and it notices.
    assert_eq!(step(&api.db, b, &mut a), Some(StepOutcome::LeaseLost));
    assert_eq!(scalar(&api.db, "SELECT count(*) FROM _emdash_media_usage_work"), 20, "A deleted nothing");
    assert!(a.is_none());
    // B's claim counted a second attempt: A's never finished.
    assert_eq!(tombstone(&api.db, "posts").unwrap(), ("leased".into(), "work".into(), 2, b_token));
    // B finishes normally.
    steps_to_end(&api.db, b, &mut b_held);
    assert_gone(&api.db, &id, "posts");
}

#[test]
fn a_projection_racing_the_front_phases_writes_nothing() {
    use media_usage_worker::usage::project::{process_next, JobOutcome, Policy};
    // The race ends after the registry phase (table still there), or after the table phase: the
    // publish fails either way, and the work row is left to the deletion.
    for (race_to, expected) in [("registry", JobOutcome::Conflict), ("table", JobOutcome::Conflict)] {
        let api = Api::new();
        data(&api.post(
            "/schema/collections",
            &json!({"slug": "posts", "label": "Posts", "fields": [{"slug": "hero", "type": "image"}]}),
        ));
        let id = collection_id(&api.db, "posts");
        // An entry whose work is queued but not yet projected.
        exec_sql(&api.db, "INSERT INTO ec_posts (id, slug, hero) VALUES ('e1', 'e1', 'm1')");
        // Between the job's load and its publish, the deletion gets as far as `race_to`.
        let hooked = Hooked::new(&api.db).before("INSERT INTO _emdash_batch_guard", |db| {
            let until = if race_to == "registry" { "DROP TABLE" } else { "\u{0}never" };
            let r = call_on(
                &CutAt { inner: db, needle: until, cut: Cell::new(false) },
                "DELETE",
                "/schema/collections/posts?force=true",
            );
            assert_eq!(r.status, if race_to == "table" { 200 } else { 500 }, "{}", r.body);
        });
        let outcome = now(process_next(&hooked, None, &Policy::default())).unwrap();
        hooked.done();
        assert_eq!(outcome, Some(expected.clone()), "{race_to}");
        assert_eq!(scalar(&api.db, "SELECT count(*) FROM _emdash_media_usage_sources"), 0, "{race_to}");
        assert_eq!(scalar(&api.db, "SELECT count(*) FROM _emdash_media_usage"), 0, "{race_to}");
        time_passes(&api.db);
        tick_until_gone(&api.db, "posts", budget());
        assert_gone(&api.db, &id, "posts");
    }
}

#[test]
fn content_writes_racing_the_delete_at_any_statement_leave_no_orphans() {
    let probe = Api::new();
    site(&probe, 3);
    let metered = Metered::new(&probe.db, MonotonicClock::default());
    assert_eq!(call_on(&metered, "DELETE", "/schema/collections/posts?force=true").status, 200);
    let n = metered.usage().statements;
    assert!(n >= 6, "the request issued {n} statements");
    for k in 1..=n + 1 {
        let api = Api::new();
        let media = site(&api, 3);
        let id = collection_id(&api.db, "posts");
        let write = |db: &SqliteExecutor| {
            let body = json!({"slug": "racer", "status": "published", "data": {"hero": media[0]}});
            let r = call_on_body(db, "POST", "/content/posts", Some(&body));
            assert!(matches!(r.status, 201 | 404 | 409), "a racing write answers {}: {}", r.status, r.body);
        };
        let hooked = Hooked::new(&api.db).before_nth(k, write);
        let r = call_on(&hooked, "DELETE", "/schema/collections/posts?force=true");
        assert_eq!(r.status, 200, "k={k}: {}", r.body);
        tick_until_gone(&api.db, "posts", budget());
        assert_gone(&api.db, &id, "posts");
        assert_eq!(orphans(&api.db), 0, "k={k}");
    }
}

/// A registration of a storage key, or a delete of a media item, re-queues the entries whose URLs
/// name it — not in a collection being deleted. A deleted collection's sources
/// stay until its deletion removes them; work queued for them afterwards outlived the cleanup of
/// the work rows, and the deletion failed at `status` ("rows left behind") on every tick, its
/// slug never freed (found by the simulator, `tests/sim/traces`).
#[test]
fn re_queued_links_skip_a_collection_being_deleted() {
    let api = Api::new();
    site(&api, 2);
    let url = |key: &str| format!("{}{key}", crate::support::MEDIA_PUBLIC_URL);
    let linked = api.register_media("linked.png");
    for title in [format!("Soon {}", url("later.png")), format!("Now {}", url("linked.png"))] {
        let r = api.post("/content/posts", &json!({"status": "published", "data": {"title": title}}));
        assert_eq!(r.status, 201, "{}", r.body);
    }
    api.drain();
    let id = collection_id(&api.db, "posts");
    // Fenced and still registered (the request died after its fence), then unregistered.
    let fenced = (1..40)
        .map(|k| {
            let copy = api.snapshot();
            let req = crate::support::request("DELETE", "/schema/collections/posts?force=true", Some(ADMIN), None);
            copy.request_on(&Faulty::new(&copy.db, Some(k)), &req);
            copy
        })
        .find(|copy| phase(&copy.db, "posts") == "registry")
        .expect("a crash that leaves the deletion fenced, the collection registered");
    let unregistered = api.snapshot();
    assert_eq!(delete(&unregistered, "posts?force=true").status, 200);
    for api in [fenced, unregistered] {
        let sources = format!("SELECT count(*) FROM _emdash_media_usage_sources WHERE collection_id = '{id}'");
        assert!(scalar(&api.db, &sources) > 0);
        let work =
            || scalar(&api.db, &format!("SELECT count(*) FROM _emdash_media_usage_work WHERE collection_id = '{id}'"));
        let before = work();

        api.register_media("later.png");
        assert_eq!(work(), before, "a registration queues nothing for a collection being deleted");
        let gone = api.call("DELETE", &format!("/media/{linked}?permanent=true&force=true"), Some(ADMIN), None);
        assert_eq!(gone.status, 200, "{}", gone.body);
        assert_eq!(work(), before, "a media delete queues nothing for a collection being deleted");

        time_passes(&api.db);
        tick_until_gone(&api.db, "posts", budget());
        assert_gone(&api.db, &id, "posts");
    }
}

/// A job that read its collection's fields, then stalled while the collection was deleted and
/// created again under its slug without one of those fields, loads nothing and reports no
/// error: its work went with the deleted collection, and the new collection is indexed on its
/// own. (Found by the simulator: the load named a column the new table does not have, and the
/// tick reported the error.)
#[test]
fn a_job_outlived_by_its_collection_and_the_slug_s_new_collection_reports_no_error() {
    let api = Api::new();
    let fields = |extra: bool| {
        let mut f = vec![json!({"slug": "title", "type": "string"}), json!({"slug": "hero", "type": "image"})];
        if extra {
            f.push(json!({"slug": "extra", "type": "image"}));
        }
        json!({"slug": "posts", "label": "posts", "fields": f})
    };
    assert_eq!(api.post("/schema/collections", &fields(true)).status, 201);
    let m = api.register_media("m.png");
    let id = collection_id(&api.db, "posts");
    for title in ["A", "B", "C"] {
        let r = api.post("/content/posts", &json!({"status": "published", "data": {"title": title, "hero": m}}));
        let entry = data(&r)["item"]["id"].as_str().unwrap().to_owned();
        // Queued for the ticks (as a write whose own job did not run leaves it).
        exec_sql(
            &api.db,
            &format!("INSERT INTO _emdash_media_usage_work (collection_id, content_id, collection_slug) VALUES ('{id}', '{entry}', 'posts')"),
        );
    }
    let hooked = Hooked::new(&api.db).before("WITH asked AS", |db| {
        assert_eq!(call_on(db, "DELETE", "/schema/collections/posts?force=true").status, 200);
        let (budget, policy) = budget();
        for _ in 0..100 {
            let clock = FnClock(|| 0.0);
            let metered = Metered::new(db, &clock);
            now(tick::run(&metered, &clock, budget, &policy, tick::Continuation::Off, None));
            if tombstone(db, "posts").is_none() {
                break;
            }
            time_passes(db);
        }
        assert_eq!(tombstone(db, "posts"), None, "the deletion finished");
        assert_eq!(call_on_body(db, "POST", "/schema/collections", Some(&fields(false))).status, 201);
    });
    let report = tick_counting_statements(&hooked, budget());
    hooked.done();
    assert_eq!(report.error, None, "{report:?}");
    for table in ["_emdash_media_usage_work", "_emdash_media_usage_sources", "_emdash_media_usage_index_status"] {
        assert_eq!(
            scalar(&api.db, &format!("SELECT count(*) FROM {table} WHERE collection_id = '{id}'")),
            0,
            "{table}"
        );
    }
    api.drain();
    let (listed, coverage) = crate::support::used_in(&api, &m);
    assert_eq!((listed, coverage.as_str()), (vec![], "complete"));
}

/// Runs a hook right after the first batch whose SQL contains a needle has committed.
struct AfterBatch<'a> {
    inner: &'a SqliteExecutor,
    needle: &'static str,
    hook: RefCell<Option<Hook<'a>>>,
}

impl Executor for AfterBatch<'_> {
    async fn run(&self, stmt: Statement) -> Result<Outcome, Error> {
        self.inner.run(stmt).await
    }

    async fn batch(&self, stmts: Vec<Statement>) -> Result<Vec<Outcome>, Error> {
        let matches = stmts.iter().any(|s| s.sql().contains(self.needle));
        let out = self.inner.batch(stmts).await;
        if matches && out.is_ok() {
            if let Some(hook) = self.hook.borrow_mut().take() {
                hook(self.inner);
            }
        }
        out
    }
}

/// A collection deleted by another request right after its create committed: the create still
/// answers 201 with what it created (its batch reads it back), not a 500 that would invite the
/// client to create it again. (Found by the simulator: the create read the collection back in a
/// statement of its own and found it gone.)
#[test]
fn a_create_answers_what_it_created_even_when_a_delete_follows_at_once() {
    let api = Api::new();
    let racer = AfterBatch {
        inner: &api.db,
        needle: "CREATE TABLE",
        hook: RefCell::new(Some(Box::new(|db: &SqliteExecutor| {
            assert_eq!(call_on(db, "DELETE", "/schema/collections/posts").status, 200);
        }))),
    };
    let body = json!({"slug": "posts", "label": "Posts", "fields": [{"slug": "title", "type": "string"}]});
    let r = call_on_body(&racer, "POST", "/schema/collections", Some(&body));
    assert!(racer.hook.borrow().is_none(), "the delete ran");
    assert_eq!(r.status, 201, "{}", r.body);
    let item = &r.body_json()["data"]["item"];
    assert_eq!((item["slug"].as_str(), item["fields"][0]["slug"].as_str()), (Some("posts"), Some("title")));
    assert_eq!(scalar(&api.db, "SELECT count(*) FROM _emdash_collections WHERE slug = 'posts'"), 0, "deleted after");
}
