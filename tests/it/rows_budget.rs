//! Rows read and written as budgets (issue 20, items 2 and 3), on SQLite: ticks stay within
//! their row budgets across a deletion and a repair, the daily budget stops background lanes
//! until the next UTC day (the database's day; a test moves the stored days back). The per-kind cleanup batch
//! that recovers from failed statements (item 3) is tested in `deletion/preconditions.rs`.

use futures::executor::block_on;
use media_usage_worker::clock::FnClock;
use media_usage_worker::exec::meter::Metered;
use media_usage_worker::exec::sqlite::SqliteExecutor;
use media_usage_worker::exec::Executor;
use media_usage_worker::lane::RowCount;
use media_usage_worker::tick::{self, budget::Budget, lanes::BackgroundPolicy, report::TickReport};
use serde_json::json;

use crate::support::{data, exec_sql, expire_leases, large_collection, scalar, Api, LargeCollection, ADMIN, LONG_AGO};

/// Makes waiting deletions, runs and work rows due and leases expired, as time passing would.
fn time_passes(db: &SqliteExecutor) {
    exec_sql(db, &format!("UPDATE _emdash_media_usage_collection_deletions SET next_attempt_at = '{LONG_AGO}'"));
    expire_leases(db, "_emdash_media_usage_collection_deletions", "state = 'leased'");
    exec_sql(
        db,
        &format!(
            "UPDATE _emdash_media_usage_reconciliations SET next_attempt_at = '{LONG_AGO}';
             UPDATE _emdash_media_usage_work SET next_attempt_at = '{LONG_AGO}';"
        ),
    );
}

/// The database's day passes for the daily budget: every day's row moves a day back, as the
/// database clock moving a day forward would see them.
fn a_day_passes(db: &SqliteExecutor) {
    exec_sql(
        db,
        "UPDATE _emdash_media_usage_daily SET day = date(day, '-1000 days');
         UPDATE _emdash_media_usage_daily SET day = date(day, '+999 days');",
    );
}

/// One recorded tick (a clock that stands still: batches adapt to rows, not to how busy the
/// machine is), checked against its budgets.
fn tick_on<E: Executor>(exec: &E, budget: Budget, policy: &BackgroundPolicy) -> TickReport {
    let clock = FnClock(|| 0.0);
    let metered = Metered::new(exec, &clock);
    let report = block_on(tick::run_on(
        &metered,
        &clock,
        budget,
        policy,
        tick::Continuation::Off,
        None,
        &tick::TickTime::database(),
    ));
    let usage = metered.usage();
    assert!(report.statements <= budget.max_statements, "{} statements", report.statements);
    // What it reports (its log write counted at most) is at least what it spent, log write included.
    assert!(RowCount::new(usage.rows_written, usage.rows_read).fits(report.rows), "{usage:?} {:?}", report.rows);
    assert!(
        report.rows.fits(budget.max_rows),
        "a tick read and wrote {:?} rows, over {:?}",
        report.rows,
        budget.max_rows
    );
    report
}

/// A collection `docs` of `n` entries written behind the API (nothing queued), as an import does.
fn imported_docs(api: &Api, n: usize) {
    data(&api.post(
        "/schema/collections",
        &json!({"slug": "docs", "label": "Docs", "fields": [{"slug": "hero", "type": "image"}]}),
    ));
    exec_sql(
        &api.db,
        &format!(
            "WITH RECURSIVE seq(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM seq WHERE i < {n})
             INSERT INTO ec_docs (id, slug, hero) SELECT printf('d%05d', i), printf('d%05d', i), 'm' FROM seq;
             DELETE FROM _emdash_media_usage_work;"
        ),
    );
}

fn deletion_left(db: &SqliteExecutor) -> i64 {
    scalar(db, "SELECT count(*) FROM _emdash_media_usage_collection_deletions")
}

#[test]
fn ticks_stay_within_their_row_budgets_across_a_deletion_and_a_repair() {
    let api = Api::new();
    large_collection(&api, "posts", LargeCollection::new(20_000, 1));
    assert_eq!(api.call("DELETE", "/schema/collections/posts?force=true", Some(ADMIN), None).status, 200);
    // The smallest row budget there is (one projection job at the default admission limit).
    let settings = crate::support::settings_with(&[
        ("MEDIA_USAGE_TICK_MAX_ROWS_WRITTEN", "14110"),
        ("MEDIA_USAGE_TICK_MAX_ROWS_READ", "20510"),
        ("MEDIA_USAGE_DAILY_ROWS_WRITTEN", "0"),
        ("MEDIA_USAGE_TICK_MAX_QUERIES", "1000"),
    ]);
    let budget = settings.budget();
    assert_eq!(budget.max_rows, media_usage_worker::settings::MIN_TICK_ROWS);
    let policy = crate::support::policy();
    let mut deletion_ticks = 0;
    while deletion_left(&api.db) > 0 {
        let report = tick_on(&api.db, budget, &policy);
        assert!(report.count("deletionSteps") > 0, "every tick advances the deletion (counting or deleting)");
        deletion_ticks += 1;
        assert!(
            deletion_ticks <= 25,
            "60,000 rows at 20,510 rows read per tick: a read a row to count them, six to delete"
        );
    }
    assert!(deletion_ticks >= 5, "the rows budget, not the statements, bounds the ticks: {deletion_ticks}");

    // A repair of 2,000 entries: scan pages and group jobs are sized to the rows left.
    let api = Api::new();
    imported_docs(&api, 2_000);
    let r = api.post("/admin/media-usage/repair", &json!({"scope": "collection", "collection": "docs"}));
    assert_eq!(r.status, 200, "{}", r.body);
    let mut repair_ticks = 0;
    loop {
        let report = tick_on(&api.db, budget, &policy);
        repair_ticks += 1;
        time_passes(&api.db);
        let status: String = api
            .db
            .connection()
            .query_row(
                "SELECT status FROM _emdash_media_usage_index_status
                 WHERE collection_id = (SELECT id FROM _emdash_collections WHERE slug = 'docs')",
                [],
                |r| r.get(0),
            )
            .unwrap();
        if status == "complete" && report.outcome == media_usage_worker::model::state::TickOutcome::Idle {
            break;
        }
        assert!(repair_ticks <= 60, "repair not finished in 60 ticks (status {status})");
    }
}

#[test]
fn the_daily_budget_stops_background_lanes_until_the_next_utc_day() {
    let api = Api::new();
    large_collection(&api, "posts", LargeCollection::new(6_000, 1));
    assert_eq!(api.call("DELETE", "/schema/collections/posts?force=true", Some(ADMIN), None).status, 200);
    let budget = crate::support::budget().with_daily_rows_written(15_000);
    let policy = crate::support::policy();
    // Day D: ticks delete until the day's rows are spent (the tick that finds them spent may
    // have had no room left for a cleanup statement), then the deletion rests.
    let mut spent_on = None;
    for n in 0..20 {
        let report = tick_on(&api.db, budget, &policy);
        assert!(report.count("deletedRows") > 0 || (n > 0 && report.daily_spent), "tick {n}: {report:?}");
        if report.daily_spent {
            assert_ne!(report.outcome, media_usage_worker::model::state::TickOutcome::Budget, "no continuation");
            spent_on = Some(n);
            break;
        }
    }
    assert!(spent_on.is_some(), "the day's budget was never spent");
    assert!(deletion_left(&api.db) > 0);
    let day: (i64, i64) = api
        .db
        .connection()
        .query_row("SELECT rows_written, ticks FROM _emdash_media_usage_daily WHERE day = date('now')", [], |r| {
            Ok((r.get(0)?, r.get(1)?))
        })
        .unwrap();
    assert!(day.0 <= 15_000 + 2 * tick::budget::LOG_ROWS.written as i64, "the day's writes stay within it: {day:?}");
    let again = tick_on(&api.db, budget, &policy);
    assert!(again.daily_spent && again.count("deletedRows") == 0, "a lane the daily budget stopped rests: {again:?}");
    assert_eq!(again.outcome, media_usage_worker::model::state::TickOutcome::Idle, "no continuation is asked for");

    // The work lane is not stopped: an entry written on day D is projected by the next tick.
    data(&api.post("/schema/collections", &json!({"slug": "notes", "label": "Notes"})));
    exec_sql(&api.db, "INSERT INTO ec_notes (id, slug) VALUES ('n1', 'n1')");
    let report = tick_on(&api.db, budget, &policy);
    assert_eq!(report.count("jobs"), 1, "the work lane still runs");
    assert_eq!(report.count("deletedRows"), 0);

    // Day D+1: the deletion resumes, and finishes on a later day.
    a_day_passes(&api.db);
    let report = tick_on(&api.db, budget, &policy);
    assert!(report.count("deletedRows") > 0, "resumed on the next day");
    for _ in 2..=10 {
        for _ in 0..10 {
            tick_on(&api.db, budget, &policy);
        }
        a_day_passes(&api.db);
        if deletion_left(&api.db) == 0 {
            break;
        }
    }
    assert_eq!(deletion_left(&api.db), 0);
    let per_day: Vec<i64> = api
        .db
        .connection()
        .prepare("SELECT rows_written FROM _emdash_media_usage_daily ORDER BY day")
        .unwrap()
        .query_map([], |r| r.get(0))
        .unwrap()
        .map(Result::unwrap)
        .collect();
    assert!(per_day.len() >= 2, "{per_day:?}");
    // A day may pass the budget only by what the work lane wrote and the log writes of ticks
    // that found it spent.
    assert!(per_day.iter().all(|n| *n <= 15_000 + 500), "{per_day:?}");
}

#[test]
fn the_status_shows_the_days_use_and_when_each_deletion_and_repair_will_finish() {
    let api = Api::new();
    large_collection(&api, "posts", LargeCollection::new(3_000, 1));
    assert_eq!(api.call("DELETE", "/schema/collections/posts?force=true", Some(ADMIN), None).status, 200);
    let budget = crate::support::budget().with_daily_rows_written(5_000);
    tick_on(&api.db, budget, &crate::support::policy());
    let api = Api { config: media_usage_worker::api::Config { tick_budget: budget, ..api.config.clone() }, ..api };
    let today: String = api.db.connection().query_row("SELECT date('now')", [], |r| r.get(0)).unwrap();
    let status = data(&api.get("/admin/media-usage/status"));
    let daily = &status["daily"];
    assert_eq!((daily["day"].as_str(), daily["budget"].as_u64()), (Some(today.as_str()), Some(5_000)));
    let written = daily["rowsWritten"].as_u64().unwrap();
    // (The tick counted the deletion's rows first, then deleted until its statements ran out.)
    assert!(written > 3_000 && written <= 5_000 + tick::budget::LOG_ROWS.written, "{daily}");
    assert_eq!(daily["remaining"].as_u64(), Some(5_000u64.saturating_sub(written)));
    assert_eq!(daily["ticks"], 1);
    assert_eq!(status["tickBudget"]["maxRowsWritten"], 20_000);
    let deletion = &status["deletions"][0];
    let left = deletion["rowsLeft"].as_u64().unwrap();
    assert!(left > 0 && left < 9_000, "{deletion}");
    let estimate = &deletion["estimate"];
    // A deleted row writes one row (a source is counted at two: its trigger deletes its
    // occurrences, if any are left).
    let to_write = estimate["rowsToWrite"].as_u64().unwrap();
    assert!((left..=2 * left).contains(&to_write), "{estimate}");
    // A tick writes at most the daily budget; what is left does not fit what the day has left, so
    // it finishes on a later day.
    assert_eq!(estimate["ticks"].as_u64(), Some(to_write.div_ceil(5_000)));
    let days = (to_write - (5_000 - written.min(5_000))).div_ceil(5_000);
    assert_eq!(estimate["days"].as_u64(), Some(days), "{estimate}");
    assert!(days >= 1);
    assert_eq!(estimate["finishDay"].as_str(), tick::budget::add_days(&today, days).as_deref());
    // Another day has used nothing.
    let other = data(&api.get("/admin/media-usage/status?day=2030-02-01"));
    assert_eq!((other["daily"]["rowsWritten"].as_u64(), other["daily"]["spent"].as_bool()), (Some(0), Some(false)));
    let fresh = tick::budget::add_days("2030-02-01", to_write.saturating_sub(5_000).div_ceil(5_000));
    assert_eq!(other["deletions"][0]["estimate"]["finishDay"].as_str(), fresh.as_deref());
    for bad in ["2030-1-01", "2030-13-01", "yesterday", "2030-01-32"] {
        let r = api.get(&format!("/admin/media-usage/status?day={bad}"));
        assert_eq!(r.status, 400, "{bad}: {}", r.body);
    }

    // A repair run in progress: the entries it has to scan and the work queued.
    imported_docs(&api, 700);
    let docs: String = api
        .db
        .connection()
        .query_row("SELECT id FROM _emdash_collections WHERE slug = 'docs'", [], |r| r.get(0))
        .unwrap();
    block_on(media_usage_worker::repo::repair::begin(&api.db, &[docs.as_str()], crate::support::rules().id())).unwrap();
    let status = data(&api.get("/admin/media-usage/status"));
    let run = &status["repairs"][0];
    assert_eq!((run["collection"].as_str(), run["phase"].as_str()), (Some("docs"), Some("scan")), "{run}");
    assert_eq!((run["entriesLeft"].as_u64(), run["queuedLeft"].as_u64()), (Some(700), Some(0)));
    assert!(run["estimate"]["rowsToWrite"].as_u64().unwrap() >= 700, "{run}");
}

/// Every stored text value of every table that contains `needle`, as `table.column`.
fn stored_anywhere(db: &SqliteExecutor, needle: &str) -> Vec<String> {
    let conn = db.connection();
    let tables: Vec<String> = conn
        .prepare("SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%'")
        .unwrap()
        .query_map([], |r| r.get(0))
        .unwrap()
        .map(Result::unwrap)
        .collect();
    let mut found = Vec::new();
    for table in tables {
        let columns: Vec<String> = conn
            .prepare(&format!("SELECT name FROM pragma_table_info('{table}')"))
            .unwrap()
            .query_map([], |r| r.get(0))
            .unwrap()
            .map(Result::unwrap)
            .collect();
        for column in columns {
            let n: i64 = conn
                .query_row(
                    &format!("SELECT count(*) FROM \"{table}\" WHERE CAST(\"{column}\" AS TEXT) LIKE ?1"),
                    [format!("%{needle}%")],
                    |r| r.get(0),
                )
                .unwrap();
            if n > 0 {
                found.push(format!("{table}.{column}"));
            }
        }
    }
    found
}

#[test]
fn a_tick_scheduled_in_2099_stores_no_2099_value_anywhere() {
    let api = Api::new();
    large_collection(&api, "posts", LargeCollection::new(50, 1));
    assert_eq!(api.call("DELETE", "/schema/collections/posts?force=true", Some(ADMIN), None).status, 200);
    let budget = crate::support::budget().with_daily_rows_written(100_000);
    let policy = crate::support::policy();
    let anywhere = || [stored_anywhere(&api.db, "2099-"), stored_anywhere(&api.db, "4070908800000")].concat();
    assert_eq!(anywhere(), Vec::<String>::new());
    // 2099-01-01T00:00:00.000Z, as a cron event delivered with a far-future time says.
    let when = tick::TickTime::scheduled(4_070_908_800_000.0);
    let report = crate::support::TickRun::new(budget, &policy).when(when).run(&api.db);
    assert!(report.count("deletionSteps") > 0, "the tick did work: {report:?}");
    assert_eq!(anywhere(), Vec::<String>::new());
    let today: String = api.db.connection().query_row("SELECT date('now')", [], |r| r.get(0)).unwrap();
    let day: String =
        api.db.connection().query_row("SELECT budget_day FROM _emdash_media_usage_ticks", [], |r| r.get(0)).unwrap();
    assert_eq!(day, today, "the tick counts against the database's day");
    let status = data(&api.get("/admin/media-usage/status"));
    assert_eq!(status["daily"]["day"].as_str(), Some(today.as_str()));
    assert_eq!(status["daily"]["ticks"], 1, "{status}");
}

/// What one status read costs: (statements, rows read), and the answer.
fn status_cost(api: &Api) -> ((u64, u64), serde_json::Value) {
    let metered = Metered::new(&api.db, media_usage_worker::clock::MonotonicClock::default());
    let r = api.request_on(&metered, &crate::support::request("GET", "/admin/media-usage/status", Some(ADMIN), None));
    assert_eq!(r.status, 200, "{}", r.body);
    let usage = metered.usage();
    ((usage.statements, usage.rows_read), data(&r))
}

/// A site with the deletion of one collection in progress: `shape` seeded, then deleted, and its
/// lane's first steps run until it has counted what it has left (the step that finishes the
/// count may delete a first batch).
fn deleting(shape: LargeCollection) -> Api {
    let api = Api::new();
    large_collection(&api, "posts", shape);
    assert_eq!(api.call("DELETE", "/schema/collections/posts?force=true", Some(ADMIN), None).status, 200);
    let clock = media_usage_worker::clock::MonotonicClock::default();
    let batch = media_usage_worker::lifecycle::deletion::batch::CleanupBatch::Adaptive { target_ms: 200.0 };
    let mut held = None;
    while scalar(&api.db, "SELECT count_kind FROM _emdash_media_usage_collection_deletions") < 4 {
        assert!(block_on(media_usage_worker::lifecycle::deletion::step(&api.db, &clock, batch, &mut held))
            .unwrap()
            .is_some());
    }
    if let Some(h) = held {
        assert!(block_on(media_usage_worker::lifecycle::deletion::release(&api.db, &h)).unwrap());
    }
    api
}

/// The rows the one deletion in progress has left, counted in the tables.
fn rows_left(api: &Api) -> u64 {
    let id: String = api
        .db
        .connection()
        .query_row("SELECT collection_id FROM _emdash_media_usage_collection_deletions", [], |r| r.get(0))
        .unwrap();
    let (lo, hi) = media_usage_worker::model::source::source_key_range(&id);
    let n = scalar(&api.db, &format!("SELECT count(*) FROM _emdash_media_usage_work WHERE collection_id = '{id}'"))
        + scalar(&api.db, "SELECT count(*) FROM revisions WHERE collection = 'posts'")
        + scalar(
            &api.db,
            &format!("SELECT count(*) FROM _emdash_media_usage WHERE source_key >= '{lo}' AND source_key < '{hi}'"),
        )
        + scalar(&api.db, &format!("SELECT count(*) FROM _emdash_media_usage_sources WHERE collection_id = '{id}'"));
    u64::try_from(n).unwrap()
}

#[test]
fn a_status_read_costs_the_same_at_10_and_at_20_000_rows_left_in_a_deletion() {
    // 10 rows left: 3 work rows, 3 sources, 3 occurrences and a revision.
    let small = deleting(LargeCollection { entries: 3, occurrences: 1, revisions: 1, revision_bytes: 10 });
    // 20,000 work rows, 20,000 sources and 20,000 occurrences, less the first batch.
    let large = deleting(LargeCollection::new(20_000, 1));
    let (small_cost, small_status) = status_cost(&small);
    let (large_cost, large_status) = status_cost(&large);
    let (small_deletion, large_deletion) = (&small_status["deletions"][0], &large_status["deletions"][0]);
    // Each figure is exact: the counters the lane keeps.
    let small_left = rows_left(&small);
    let large_left = rows_left(&large);
    assert!(small_left <= 10 && large_left >= 59_000, "{small_left} {large_left}");
    for (deletion, left) in [(small_deletion, small_left), (large_deletion, large_left)] {
        assert_eq!(deletion["rowsLeft"].as_u64(), Some(left), "{deletion}");
        assert_eq!(
            (deletion["counting"].as_bool(), deletion["rowsLeftCapped"].as_bool()),
            (Some(false), Some(false)),
            "{deletion}"
        );
        assert_eq!(deletion["estimate"]["atLeast"], false);
    }
    // The same statements and the same rows read whatever is left: the tombstone's row.
    assert_eq!(small_cost, large_cost, "statements, rows read");
    assert!(large_cost.1 < 100, "a status read's rows are bounded: {large_cost:?}");
}

#[test]
fn before_its_lane_has_counted_a_deletion_the_status_says_so() {
    let api = Api::new();
    large_collection(&api, "posts", LargeCollection::new(3_000, 1));
    assert_eq!(api.call("DELETE", "/schema/collections/posts?force=true", Some(ADMIN), None).status, 200);
    let (_, status) = status_cost(&api);
    let deletion = &status["deletions"][0];
    assert_eq!(deletion["rowsLeft"], 0, "nothing counted yet: {deletion}");
    assert_eq!((deletion["counting"].as_bool(), deletion["rowsLeftCapped"].as_bool()), (Some(true), Some(true)));
    assert_eq!(deletion["estimate"]["atLeast"], true);
    // One counting statement of a page: a lower bound that grows.
    let clock = media_usage_worker::clock::MonotonicClock::default();
    let mut held = None;
    let room = (u64::MAX, RowCount::new(u64::MAX, 31_000 + 1_000 * 5));
    let outcome = block_on(media_usage_worker::lifecycle::deletion::step_within(
        &api.db,
        &clock,
        media_usage_worker::lifecycle::deletion::batch::CleanupBatch::Fixed(1_000),
        &mut held,
        room,
        &RowCount::default,
    ))
    .unwrap();
    assert!(
        matches!(outcome, Some(media_usage_worker::lifecycle::deletion::StepOutcome::Counted { .. })),
        "{outcome:?}"
    );
    block_on(media_usage_worker::lifecycle::deletion::release(&api.db, held.as_ref().unwrap())).unwrap();
    let (_, status) = status_cost(&api);
    let deletion = &status["deletions"][0];
    let left = deletion["rowsLeft"].as_u64().unwrap();
    assert!(left > 0 && left < rows_left(&api), "a lower bound: {deletion}");
    assert_eq!(deletion["counting"], true);
}

#[test]
fn a_status_read_lists_a_page_of_deletions_and_says_there_are_more() {
    let page = media_usage_worker::api::usage::STATUS_PAGE as usize;
    let api = Api::new();
    let mut costs = Vec::new();
    for i in 0..page + 3 {
        let slug = format!("c{i}");
        large_collection(&api, &slug, LargeCollection::new(2, 1));
        assert_eq!(
            api.call("DELETE", &format!("/schema/collections/{slug}?force=true"), Some(ADMIN), None).status,
            200
        );
        let (cost, status) = status_cost(&api);
        let listed = status["deletions"].as_array().unwrap().len();
        assert_eq!(listed, (i + 1).min(page), "{status}");
        assert_eq!(status["deletionsMore"], i + 1 > page, "{status}");
        assert_eq!(
            (status["repairsMore"].as_bool(), status["fieldDeletionsMore"].as_bool()),
            (Some(false), Some(false))
        );
        costs.push(cost.0);
    }
    // The same statements however many deletions are listed: their figures are on their rows.
    assert!(costs.iter().all(|c| *c == costs[0]), "{costs:?}");
}
