//! A lost CAS publishes nothing; a crash at every statement of a job leaves the old or the new
//! projection and the next tick completes it.

use super::*;
use crate::support::expire_leases;

/// Runs one projection job, running `mutate` on the raw connection right after the job's
/// load statement (its second statement), to lose a race on purpose.
struct RaceAfterLoad<'a> {
    inner: &'a SqliteExecutor,
    seen: Cell<u32>,
    mutate: &'a str,
}

impl Executor for RaceAfterLoad<'_> {
    async fn run(&self, stmt: Statement) -> Result<Outcome, Error> {
        let out = self.inner.run(stmt).await;
        self.seen.set(self.seen.get() + 1);
        if self.seen.get() == 2 {
            self.inner.connection().execute_batch(self.mutate).unwrap();
        }
        out
    }

    async fn batch(&self, stmts: Vec<Statement>) -> Result<Vec<Outcome>, Error> {
        self.seen.set(self.seen.get() + 1);
        self.inner.batch(stmts).await
    }
}

#[test]
fn a_lost_cas_publishes_nothing_and_leaves_no_rows() {
    let races = [
        "UPDATE _emdash_media_usage_sources SET updated_at = '2000-01-01T00:00:00.000Z'",
        "UPDATE _emdash_media_usage_sources SET source_fingerprint = 'media-usage-projection:v1:sha256:00'",
        "UPDATE _emdash_media_usage_sources SET last_error_code = 'X'",
        "UPDATE _emdash_media_usage_sources SET revision_id = 'r-other'",
        "UPDATE _emdash_media_usage_sources SET source_version = 99",
        "UPDATE ec_posts SET version = version + 100",
        "UPDATE _emdash_media_usage_work SET lease_expires_at = '2000-01-01T00:00:00.000Z'",
    ];
    for race in races {
        let api = setup();
        let id = create(&api, "r", "published", json!({"hero": "m1"}));
        // Queue a change without processing it, then race the job.
        api.db.connection().execute_batch(&format!("UPDATE ec_posts SET hero = 'm2' WHERE id = '{id}'")).unwrap();
        let generation = text(&api.db, "SELECT current_generation FROM _emdash_media_usage_sources");
        let occurrences = scalar(&api.db, "SELECT count(*) FROM _emdash_media_usage");
        let exec = RaceAfterLoad { inner: &api.db, seen: Cell::new(0), mutate: race };
        let outcome = block_on(project::process_next(&exec, None, &project::Policy::default())).unwrap();
        assert_eq!(outcome, Some(JobOutcome::Conflict), "{race}");
        assert_eq!(text(&api.db, "SELECT current_generation FROM _emdash_media_usage_sources"), generation, "{race}");
        assert_eq!(scalar(&api.db, "SELECT count(*) FROM _emdash_media_usage"), occurrences, "{race}");
        assert_eq!(scalar(&api.db, "SELECT count(*) FROM _emdash_media_usage WHERE media_id = 'm2'"), 0, "{race}");
        assert_eq!(scalar(&api.db, "SELECT count(*) FROM _emdash_batch_guard"), 0);
    }
}

#[test]
fn a_crash_at_every_statement_leaves_old_or_new_and_the_next_tick_completes() {
    let old: Vec<(String, String)> = (0..3).map(|i| ("columns".to_owned(), format!("old{i}"))).collect();
    let new: Vec<(String, String)> = (0..4)
        .map(|i| ("columns".to_owned(), format!("new{i}")))
        .chain(
            [("draft_overlay".to_owned(), "d0".to_owned())]
                .into_iter()
                .chain((0..4).map(|i| ("draft_overlay".to_owned(), format!("new{i}")))),
        )
        .collect::<Vec<_>>();
    let mut new_sorted = new.clone();
    new_sorted.sort();
    let mut crashed_somewhere = false;
    for fail_at in 1..=30u64 {
        let api = setup();
        let id = create(&api, "c", "published", json!({"gallery": gallery(3, "old")}));
        assert_eq!(projection(&api.db), old);
        // The write: live columns change, then a draft on top, all under one faulty invocation.
        let faulty = Faulty::new(&api.db, Some(fail_at));
        let call = |method: &str, path: &str, body: Json| -> Response {
            let req = Request {
                method: method.into(),
                path: format!("{}{path}", api::BASE_PATH),
                authorization: Some(format!("Bearer {ADMIN}")),
                body: body.to_string().into_bytes(),
                ..Request::default()
            };
            block_on(api::handle(&faulty, &crate::support::config(), &req))
        };
        let r1 = call("PUT", &format!("/content/posts/{id}"), json!({"data": {"gallery": gallery(4, "new")}}));
        let r2 = call("PUT", &format!("/content/posts/{id}"), json!({"draft": true, "data": {"hero": "d0"}}));
        let seen = projection(&api.db);
        let mut seen_sorted = seen.clone();
        seen_sorted.sort();
        let only_live_new: Vec<(String, String)> = (0..4).map(|i| ("columns".to_owned(), format!("new{i}"))).collect();
        assert!(
            seen == old || seen_sorted == new_sorted || seen == only_live_new,
            "fail_at {fail_at}: a mixed projection is visible: {seen:?}"
        );
        if r1.status >= 500 || r2.status >= 500 || seen_sorted != new_sorted {
            crashed_somewhere = true;
        }
        // The isolate "died": its lease expires, and ticks finish the job.
        expire_leases(&api, "_emdash_media_usage_work", "state = 'leased'");
        drain(&api.db);
        let after = projection(&api.db);
        let mut after_sorted = after.clone();
        after_sorted.sort();
        if r2.status == 200 {
            assert_eq!(after_sorted, new_sorted, "fail_at {fail_at}: not converged");
        } else if r1.status == 200 {
            assert_eq!(after, only_live_new, "fail_at {fail_at}: not converged");
        } else {
            assert_eq!(after, old, "fail_at {fail_at}: a failed write changed the index");
        }
        assert_eq!(scalar(&api.db, "SELECT count(*) FROM _emdash_media_usage_work"), 0, "fail_at {fail_at}");
        assert_eq!(coverage(&api), "complete", "fail_at {fail_at}");
        assert_eq!(
            scalar(&api.db, "SELECT count(*) FROM _emdash_media_usage u WHERE NOT EXISTS (SELECT 1 FROM _emdash_media_usage_sources s WHERE s.source_key = u.source_key AND s.current_generation = u.generation)"),
            0,
            "fail_at {fail_at}: superseded or orphaned occurrences remain"
        );
    }
    assert!(crashed_somewhere);
}
