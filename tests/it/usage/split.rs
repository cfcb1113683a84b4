//! An entry too heavy for the CPU left with both of its source variants is projected one variant
//! a job: the live columns first, published through the guarded publish with the work row handed
//! back queued and marked with its work version; then the draft overlay alone, which completes the
//! row. A mark whose work version is not the row's is stale: the next job projects both afresh.

use super::*;
use crate::support::{expire_leases, tick_once};
use media_usage_worker::tick::lanes::BackgroundPolicy;
use media_usage_worker::tick::report::TickReport;
use media_usage_worker::usage::cost::{self, CpuWork};

/// A budget below any entry's fixed cost: every entry with a draft is split, one job a tick.
fn tiny() -> BackgroundPolicy {
    crate::support::policy().with_cpu_ms(0.01)
}

fn tick(api: &Api, policy: &BackgroundPolicy) -> TickReport {
    let report = tick_once(&api.db, Budget::new(40, 600_000.0), policy);
    assert!(report.error.is_none(), "{report:?}");
    report
}

/// Ticks under `policy` until no work is queued (failed rows aside); the ticks run.
fn drain_under(api: &Api, policy: &BackgroundPolicy) -> usize {
    let mut n = 0;
    while scalar(&api.db, "SELECT count(*) FROM _emdash_media_usage_work WHERE state <> 'failed'") > 0 {
        crate::support::time_passes(&api.db);
        tick(api, policy);
        n += 1;
        assert!(n < 50, "the work does not drain");
    }
    n
}

/// The index as rows that do not depend on generation ids: each source (key, variant,
/// completeness, error, title, status, trashed) with its current occurrences, and, with
/// `exact`, its fingerprint and revision.
fn index_rows(api: &Api, exact: bool) -> Vec<String> {
    let conn = api.db.connection();
    let mut stmt = conn
        .prepare(
            "SELECT s.source_key || '|' || s.source_variant || '|' || s.source_completeness || '|'
                    || coalesce(s.last_error_code, '') || '|' || s.content_title || '|'
                    || coalesce(s.content_status, '') || '|' || (s.content_deleted_at IS NOT NULL) || '|'
                    || coalesce((SELECT group_concat(x, ',') FROM
                        (SELECT u.field_path || '=' || coalesce(u.media_id, u.provider_asset_id) AS x
                         FROM _emdash_media_usage u
                         WHERE u.source_key = s.source_key AND u.generation = s.current_generation ORDER BY x)), ''),
                    coalesce(s.source_fingerprint, '') || '|' || coalesce(s.revision_id, '')
             FROM _emdash_media_usage_sources s ORDER BY 1",
        )
        .unwrap();
    stmt.query_map([], |r| {
        let (row, more): (String, String) = (r.get(0)?, r.get(1)?);
        Ok(if exact { format!("{row}|{more}") } else { row })
    })
    .unwrap()
    .map(Result::unwrap)
    .collect()
}

/// Occurrences that are not of their source's current generation (superseded or orphaned).
fn stale_occurrences(api: &Api) -> i64 {
    scalar(
        &api.db,
        "SELECT count(*) FROM _emdash_media_usage u WHERE NOT EXISTS (SELECT 1 FROM _emdash_media_usage_sources s
           WHERE s.source_key = u.source_key AND s.current_generation = u.generation)",
    )
}

/// The fixture: media A, B, C, D; an entry `e` indexed with A live, then, behind the API
/// (captured, queued), its live hero changed to B and a draft whose hero is C: the entry's
/// projection is due with both variants. Returns the api and the ids.
struct Fixture {
    api: Api,
    entry: String,
    a: String,
    b: String,
    c: String,
    d: String,
}

fn fixture() -> Fixture {
    let api = setup();
    let (a, b, c, d) = (
        api.register_media("a.png"),
        api.register_media("b.png"),
        api.register_media("c.png"),
        api.register_media("d.png"),
    );
    let entry = create(&api, "e", "published", json!({"title": "E", "hero": a, "gallery": gallery(2, "ext")}));
    assert_eq!(scalar(&api.db, "SELECT count(*) FROM _emdash_media_usage_work"), 0, "projected inline");
    api.db
        .connection()
        .execute_batch(&format!(
            "UPDATE ec_posts SET hero = '{b}' WHERE id = '{entry}';
             INSERT INTO revisions (id, collection, entry_id, data)
               VALUES ('rd', 'posts', '{entry}', '{{\"hero\":\"{c}\",\"title\":\"Draft\"}}');
             UPDATE ec_posts SET draft_revision_id = 'rd' WHERE id = '{entry}';"
        ))
        .unwrap();
    assert_eq!(scalar(&api.db, "SELECT count(*) FROM _emdash_media_usage_work WHERE state = 'pending'"), 1);
    Fixture { api, entry, a, b, c, d }
}

/// The first half under the tiny budget: the live columns published alone, the row queued and
/// marked at its work version.
fn first_half(f: &Fixture) -> TickReport {
    let report = tick(&f.api, &tiny());
    assert_eq!((report.count("jobs"), report.count("splitJobs")), (1, 1), "{report:?}");
    let marked = "SELECT count(*) FROM _emdash_media_usage_work
                  WHERE state = 'pending' AND lease_token IS NULL AND partial_work_version = work_version";
    assert_eq!(scalar(&f.api.db, marked), 1);
    report
}

fn uses(api: &Api, media: &str, variant: &str) -> i64 {
    scalar(
        &api.db,
        &format!(
            "SELECT count(*) FROM _emdash_media_usage u JOIN _emdash_media_usage_sources s
               ON s.source_key = u.source_key AND s.current_generation = u.generation
             WHERE u.media_id = '{media}' AND s.source_variant = '{variant}'"
        ),
    )
}

#[test]
fn the_two_halves_publish_and_the_index_ends_equal_to_a_one_job_projection() {
    let f = fixture();
    let whole = f.api.snapshot();
    // One job under the default budget: both variants together.
    let report = tick(&whole, &crate::support::policy());
    assert_eq!((report.count("jobs"), report.count("splitJobs")), (1, 0));
    let both_us = report.count("cpuModelUs");

    let first = first_half(&f);
    // The live columns are the new ones; the draft overlay is not indexed yet.
    assert_eq!((uses(&f.api, &f.b, "columns"), uses(&f.api, &f.a, "columns")), (1, 0));
    assert_eq!(uses(&f.api, &f.c, "draft_overlay"), 0);
    assert_ne!(coverage(&f.api), "complete", "a queued row: coverage proves nothing");
    let second = tick(&f.api, &tiny());
    assert_eq!((second.count("jobs"), second.count("splitJobs")), (1, 0), "{second:?}");
    assert_eq!(uses(&f.api, &f.c, "draft_overlay"), 1);
    assert_eq!(scalar(&f.api.db, "SELECT count(*) FROM _emdash_media_usage_work"), 0);
    assert_eq!(coverage(&f.api), "complete");
    assert_eq!(index_rows(&f.api, true), index_rows(&whole, true));
    assert_eq!(stale_occurrences(&f.api), 0);
    // Each half's modelled CPU counts its own variant's bytes only: together about what the one
    // job's both variants cost, each less.
    let (live_us, draft_us) = (first.count("cpuModelUs"), second.count("cpuModelUs"));
    assert!(live_us < both_us && draft_us < both_us, "{live_us} + {draft_us} vs {both_us}");
    assert!(live_us + draft_us >= both_us, "{live_us} + {draft_us} vs {both_us}");
}

#[test]
fn a_write_between_the_halves_makes_the_mark_stale_and_the_next_job_projects_both_afresh() {
    let writes: [(&str, Sql); 3] = [
        ("live columns", |f| format!("UPDATE ec_posts SET hero = '{}' WHERE id = '{}'", f.d, f.entry)),
        ("a new draft", |f| {
            format!(
            "INSERT INTO revisions (id, collection, entry_id, data) VALUES ('rd2', 'posts', '{e}', '{{\"hero\":\"{d}\"}}');
             UPDATE ec_posts SET draft_revision_id = 'rd2' WHERE id = '{e}'", e = f.entry, d = f.d)
        }),
        // Re-queued by the operator (the work row's upsert, as a repair or a media registration).
        ("a re-queue", |f| {
            format!(
            "INSERT INTO _emdash_media_usage_work (collection_id, content_id, collection_slug) SELECT collection_id, content_id, collection_slug FROM _emdash_media_usage_work WHERE content_id = '{}'
             ON CONFLICT (collection_id, content_id) DO UPDATE SET work_version = work_version + 1, state = 'pending', attempt_count = 0", f.entry)
        }),
    ];
    for (what, write) in writes {
        let f = fixture();
        first_half(&f);
        let sql = write(&f);
        f.api.db.connection().execute_batch(&sql).unwrap();
        let whole = f.api.snapshot();
        // Under the default budget the next job projects both variants: the mark is stale.
        let report = tick(&f.api, &crate::support::policy());
        assert_eq!((report.count("jobs"), report.count("splitJobs")), (1, 0), "{what}");
        assert_eq!(scalar(&f.api.db, "SELECT count(*) FROM _emdash_media_usage_work"), 0, "{what}");
        // The same content projected from scratch, with no index at all.
        whole.db.connection().execute_batch("DELETE FROM _emdash_media_usage_sources").unwrap();
        drain_under(&whole, &crate::support::policy());
        assert_eq!(index_rows(&f.api, false), index_rows(&whole, false), "{what}");
        assert_eq!(stale_occurrences(&f.api), 0, "{what}");
        assert_eq!(coverage(&f.api), "complete", "{what}");
    }
}

#[test]
fn a_mark_whose_live_source_is_not_indexed_is_not_trusted() {
    for (what, sql) in [
        ("gone", "DELETE FROM _emdash_media_usage_sources WHERE source_variant = 'columns'"),
        (
            "failed",
            "UPDATE _emdash_media_usage_sources SET source_completeness = 'failed' WHERE source_variant = 'columns'",
        ),
        (
            "no generation",
            "UPDATE _emdash_media_usage_sources SET current_generation = NULL WHERE source_variant = 'columns'",
        ),
    ] {
        let f = fixture();
        let expected = one_job_then(&f, &|_, _| {});
        first_half(&f);
        f.api.db.connection().execute_batch(sql).unwrap();
        // The next job publishes the live columns again before the draft overlay.
        first_half(&f);
        drain_under(&f.api, &tiny());
        assert_eq!(index_rows(&f.api, false), expected, "{what}");
        assert_eq!(stale_occurrences(&f.api), 0, "{what}");
    }
}

#[test]
fn under_the_tiny_budget_a_stale_mark_is_split_again_from_the_live_columns() {
    let f = fixture();
    first_half(&f);
    let sql = format!("UPDATE ec_posts SET hero = '{}' WHERE id = '{}'", f.d, f.entry);
    f.api.db.connection().execute_batch(&sql).unwrap();
    // The live columns changed: the next job publishes them anew (not the draft alone).
    first_half(&f);
    assert_eq!((uses(&f.api, &f.d, "columns"), uses(&f.api, &f.b, "columns")), (1, 0));
    assert_eq!(drain_under(&f.api, &tiny()), 1);
    assert_eq!(uses(&f.api, &f.c, "draft_overlay"), 1);
    assert_eq!(stale_occurrences(&f.api), 0);
    assert_eq!(coverage(&f.api), "complete");
}

/// What a test does between the halves.
type Between = dyn Fn(&Api, &Fixture);
/// A write behind the API, as SQL.
type Sql = fn(&Fixture) -> String;

/// The expected end of a scenario: the fixture drained under the default budget, `between` run,
/// drained again.
fn one_job_then(f: &Fixture, between: &dyn Fn(&Api, &Fixture)) -> Vec<String> {
    let whole = f.api.snapshot();
    drain_under(&whole, &crate::support::policy());
    between(&whole, f);
    drain_under(&whole, &crate::support::policy());
    index_rows(&whole, false)
}

#[test]
fn the_entry_trashed_deleted_published_or_its_draft_discarded_between_the_halves_converges() {
    let cases: [(&str, &Between); 5] = [
        ("trashed", &|api, f| assert_eq!(api.delete(&format!("/content/posts/{}", f.entry)).status, 200)),
        ("deleted", &|api, f| {
            let r = api.call("DELETE", &format!("/content/posts/{}?permanent=true", f.entry), Some(ADMIN), None);
            assert!(r.status < 300, "{}", r.body);
        }),
        ("published", &|api, f| {
            let r = api.post(&format!("/content/posts/{}/publish", f.entry), &json!({}));
            assert_eq!(r.status, 200, "{}", r.body);
        }),
        ("draft discarded", &|api, f| {
            let r = api.post(&format!("/content/posts/{}/discard-draft", f.entry), &json!({}));
            assert!(r.status < 300, "{}", r.body);
        }),
        ("unpublished", &|api, f| {
            let r = api.post(&format!("/content/posts/{}/unpublish", f.entry), &json!({}));
            assert!(r.status < 300, "{}", r.body);
        }),
    ];
    for (what, between) in cases {
        let f = fixture();
        let expected = one_job_then(&f, between);
        first_half(&f);
        between(&f.api, &f);
        drain_under(&f.api, &tiny());
        assert_eq!(index_rows(&f.api, false), expected, "{what}");
        assert_eq!(stale_occurrences(&f.api), 0, "{what}");
        assert_eq!(scalar(&f.api.db, "SELECT count(*) FROM _emdash_media_usage_work"), 0, "{what}");
        assert_eq!(coverage(&f.api), "complete", "{what}");
    }
}

#[test]
fn the_collection_deleted_between_the_halves_leaves_nothing_behind() {
    let f = fixture();
    first_half(&f);
    let r = f.api.delete("/schema/collections/posts?force=true");
    assert!(r.status < 300, "{}", r.body);
    for _ in 0..30 {
        crate::support::time_passes(&f.api.db);
        tick(&f.api, &tiny());
    }
    assert_eq!(scalar(&f.api.db, "SELECT count(*) FROM _emdash_media_usage_collection_deletions"), 0);
    assert_eq!(scalar(&f.api.db, "SELECT count(*) FROM _emdash_media_usage_work"), 0);
    assert_eq!(scalar(&f.api.db, "SELECT count(*) FROM _emdash_media_usage_sources"), 0);
    assert_eq!(scalar(&f.api.db, "SELECT count(*) FROM _emdash_media_usage"), 0);
}

/// Runs a tick through an executor that runs `mutate` right after the job's load.
struct RaceAfterLoad<'a> {
    inner: &'a SqliteExecutor,
    mutate: String,
    done: Cell<bool>,
}

impl Executor for RaceAfterLoad<'_> {
    async fn run(&self, stmt: Statement) -> Result<Outcome, Error> {
        let load = stmt.sql().contains("__part");
        let out = self.inner.run(stmt).await;
        if load && !self.done.replace(true) {
            self.inner.connection().execute_batch(&self.mutate).unwrap();
        }
        out
    }

    async fn batch(&self, stmts: Vec<Statement>) -> Result<Vec<Outcome>, Error> {
        self.inner.batch(stmts).await
    }
}

#[test]
fn a_lease_lost_during_either_half_publishes_nothing_and_the_halves_still_converge() {
    let lose = "UPDATE _emdash_media_usage_work SET lease_expires_at = '2000-01-01T00:00:00.000Z'";
    for half in [1, 2] {
        let f = fixture();
        let expected = one_job_then(&f, &|_, _| {});
        if half == 2 {
            first_half(&f);
        }
        let before = index_rows(&f.api, true);
        let exec = RaceAfterLoad { inner: &f.api.db, mutate: lose.to_owned(), done: Cell::new(false) };
        let report = tick_once(&exec, Budget::new(40, 600_000.0), &tiny());
        assert_eq!((report.count("conflicts"), report.count("splitJobs")), (1, 0), "half {half}: {report:?}");
        assert_eq!(index_rows(&f.api, true), before, "half {half}: a lost lease published");
        drain_under(&f.api, &tiny());
        assert_eq!(index_rows(&f.api, false), expected, "half {half}");
        assert_eq!(stale_occurrences(&f.api), 0);
        assert_eq!(coverage(&f.api), "complete");
    }
}

#[test]
fn a_crash_or_a_commit_unknown_at_every_statement_of_either_half_converges() {
    let f = fixture();
    let expected = one_job_then(&f, &|_, _| {});
    // The state before each half, and the statements each half's tick issues.
    let mut starts = vec![f.api.snapshot()];
    let clock = FnClock(|| 0.0);
    let metered = Metered::new(&f.api.db, &clock);
    tick_once(&metered, Budget::new(40, 600_000.0), &tiny());
    let mut statements = vec![metered.usage().statements];
    starts.push(f.api.snapshot());
    let metered = Metered::new(&f.api.db, &clock);
    tick_once(&metered, Budget::new(40, 600_000.0), &tiny());
    statements.push(metered.usage().statements);
    assert_eq!(index_rows(&f.api, false), expected);
    let mut runs = 0;
    for (half, (start, n)) in starts.iter().zip(&statements).enumerate() {
        for k in 1..=*n {
            for commit_unknown in [false, true] {
                let api = start.snapshot();
                let faulty =
                    if commit_unknown { Faulty::commit_unknown(&api.db, k) } else { Faulty::new(&api.db, Some(k)) };
                tick_once(&faulty, Budget::new(40, 600_000.0), &tiny());
                // The isolate died: its lease lapses; the next ticks finish the work.
                expire_leases(&api, "_emdash_media_usage_work", "state = 'leased'");
                drain_under(&api, &tiny());
                let what = format!("half {}, statement {k} of {n}, commit-unknown {commit_unknown}", half + 1);
                assert_eq!(index_rows(&api, false), expected, "{what}");
                assert_eq!(stale_occurrences(&api), 0, "{what}");
                assert_eq!(scalar(&api.db, "SELECT count(*) FROM _emdash_media_usage_work"), 0, "{what}");
                assert_eq!(coverage(&api), "complete", "{what}");
                runs += 1;
            }
        }
    }
    assert!(runs >= 20, "{runs} runs over {statements:?}");
}

#[test]
fn between_the_halves_a_media_item_only_the_draft_uses_is_not_deletable() {
    let f = fixture();
    first_half(&f);
    // C is named by the draft alone, which is not indexed yet: no occurrence blocks its delete,
    // but the queued row keeps coverage from being complete, so the safe delete refuses.
    assert_eq!(scalar(&f.api.db, &format!("SELECT count(*) FROM _emdash_media_usage WHERE media_id = '{}'", f.c)), 0);
    let r = f.api.delete(&format!("/media/{}", f.c));
    assert_eq!((r.status, code(&r)), (409, "MEDIA_USAGE_COVERAGE_INCOMPLETE".into()));
    let r = f.api.call("DELETE", &format!("/media/{}?permanent=true", f.c), Some(ADMIN), None);
    assert_eq!(r.status, 409, "{}", r.body);
    // Once the second half is published the draft's use blocks it.
    tick(&f.api, &tiny());
    assert_eq!(coverage(&f.api), "complete");
    assert_eq!(code(&f.api.delete(&format!("/media/{}", f.c))), "MEDIA_IN_USE");
    // D, used by nothing, is deletable now.
    assert_eq!(f.api.delete(&format!("/media/{}", f.d)).status, 200);
}

#[test]
fn the_largest_entry_the_api_accepts_with_a_draft_of_the_same_size_projects_one_variant_a_tick() {
    let api = setup();
    let bytes = media_usage_worker::api::input::MAX_BODY_BYTES;
    // Each variant alone fits the default budget; both together do not.
    let one = CpuWork::entry(bytes as u64, 1, 2).ms();
    assert!(one <= cost::DEFAULT_TICK_CPU_MS, "{one} ms");
    assert!(CpuWork::entry(2 * bytes as u64, 2, 4).ms() > cost::DEFAULT_TICK_CPU_MS);
    let m = api.register_media("m.png");
    let text = |c: &str| format!("{c} ").repeat(bytes / 2)[..bytes - 200].to_owned();
    api.db
        .connection()
        .execute_batch(&format!(
            "INSERT INTO revisions (id, collection, entry_id, data)
               VALUES ('rbig', 'posts', 'big', json_object('title', '{}', 'hero', '{m}'));
             INSERT INTO ec_posts (id, slug, status, title, hero, draft_revision_id)
               VALUES ('big', 'big', 'published', '{}', '{m}', 'rbig');",
            text("d"),
            text("l")
        ))
        .unwrap();
    let policy = crate::support::policy();
    let budget_us = (cost::DEFAULT_TICK_CPU_MS * 1000.0) as u64;
    let first = tick(&api, &policy);
    assert_eq!(first.count("splitJobs"), 1, "{first:?}");
    let second = tick(&api, &policy);
    assert_eq!((second.count("jobs"), second.count("splitJobs")), (1, 0), "{second:?}");
    for t in [&first, &second] {
        assert!(t.count("cpuModelUs") <= budget_us, "{} µs", t.count("cpuModelUs"));
    }
    assert_eq!((uses(&api, &m, "columns"), uses(&api, &m, "draft_overlay")), (1, 1));
    assert_eq!(scalar(&api.db, "SELECT count(*) FROM _emdash_media_usage_work"), 0);
    assert_eq!(coverage(&api), "complete");
}

#[test]
fn a_group_hands_a_heavy_entry_with_a_draft_back_to_a_single_job() {
    let api = setup();
    // Light entries and, first in due order, one whose two variants pass the budget together.
    let bytes = (cost::fitting_bytes(cost::DEFAULT_TICK_CPU_MS) * 2 / 3) as usize;
    let big = "x".repeat(bytes);
    api.db
        .connection()
        .execute_batch(&format!(
            "INSERT INTO revisions (id, collection, entry_id, data) VALUES ('rh', 'posts', 'h', json_object('title', '{big}'));
             INSERT INTO ec_posts (id, slug, status, title, hero, draft_revision_id) VALUES ('h', 'h', 'published', '{big}', 'mh', 'rh');"
        ))
        .unwrap();
    queued(&api, 20, 1);
    let mut split = 0;
    for _ in 0..20 {
        if scalar(&api.db, "SELECT count(*) FROM _emdash_media_usage_work") == 0 {
            break;
        }
        crate::support::time_passes(&api.db);
        let report = tick(&api, &crate::support::policy());
        split += report.count("splitJobs");
        assert!(report.count("cpuModelUs") <= 4_000 + (CpuWork::entry(bytes as u64, 1, 2).ms() * 1000.0) as u64);
    }
    assert_eq!(split, 1, "the heavy entry went to a single job, which split it");
    assert_eq!(scalar(&api.db, "SELECT count(*) FROM _emdash_media_usage_work"), 0);
    assert_eq!(scalar(&api.db, "SELECT count(*) FROM _emdash_media_usage_sources WHERE content_id = 'h'"), 2);
    assert_eq!(coverage(&api), "complete");
}
