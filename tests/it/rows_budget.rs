//! Rows read and written as budgets (issue 20, items 2 and 3), on SQLite: ticks stay within
//! their row budgets across a deletion and a repair, the daily budget stops background lanes
//! until the next UTC day (the day is the tick's, a test clock here). The per-kind cleanup batch
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

/// One recorded tick on `day` (a clock that stands still: batches adapt to rows, not to how busy
/// the machine is), checked against its budgets.
fn tick_on<E: Executor>(exec: &E, budget: Budget, policy: &BackgroundPolicy, day: &str) -> TickReport {
    let clock = FnClock(|| 0.0);
    let metered = Metered::new(exec, &clock);
    let report = block_on(tick::run_on(
        &metered,
        &clock,
        budget,
        policy,
        tick::Continuation::Off,
        None,
        &tick::TickTime::on_day(day),
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
        let report = tick_on(&api.db, budget, &policy, "2030-01-01");
        assert!(report.count("deletedRows") > 0, "every tick advances the deletion");
        deletion_ticks += 1;
        assert!(deletion_ticks <= 20, "60,000 rows at 14,110 rows written per tick");
    }
    assert!(deletion_ticks >= 5, "the rows budget, not the statements, bounds the ticks: {deletion_ticks}");

    // A repair of 2,000 entries: scan pages and group jobs are sized to the rows left.
    let api = Api::new();
    imported_docs(&api, 2_000);
    let r = api.post("/admin/media-usage/repair", &json!({"scope": "collection", "collection": "docs"}));
    assert_eq!(r.status, 200, "{}", r.body);
    let mut repair_ticks = 0;
    loop {
        let report = tick_on(&api.db, budget, &policy, "2030-01-01");
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
        let report = tick_on(&api.db, budget, &policy, "2030-01-01");
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
        .query_row("SELECT rows_written, ticks FROM _emdash_media_usage_daily WHERE day = '2030-01-01'", [], |r| {
            Ok((r.get(0)?, r.get(1)?))
        })
        .unwrap();
    assert!(day.0 <= 15_000 + 2 * tick::budget::LOG_ROWS.written as i64, "the day's writes stay within it: {day:?}");
    let again = tick_on(&api.db, budget, &policy, "2030-01-01");
    assert!(again.daily_spent && again.count("deletedRows") == 0, "a lane the daily budget stopped rests: {again:?}");
    assert_eq!(again.outcome, media_usage_worker::model::state::TickOutcome::Idle, "no continuation is asked for");

    // The work lane is not stopped: an entry written on day D is projected by the next tick.
    data(&api.post("/schema/collections", &json!({"slug": "notes", "label": "Notes"})));
    exec_sql(&api.db, "INSERT INTO ec_notes (id, slug) VALUES ('n1', 'n1')");
    let report = tick_on(&api.db, budget, &policy, "2030-01-01");
    assert_eq!(report.count("jobs"), 1, "the work lane still runs");
    assert_eq!(report.count("deletedRows"), 0);

    // Day D+1: the deletion resumes, and finishes on a later day.
    let report = tick_on(&api.db, budget, &policy, "2030-01-02");
    assert!(report.count("deletedRows") > 0, "resumed on the next day");
    for day in 2..=10 {
        for _ in 0..10 {
            tick_on(&api.db, budget, &policy, &format!("2030-01-{day:02}"));
        }
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
    tick_on(&api.db, budget, &crate::support::policy(), "2030-01-01");
    let api = Api { config: media_usage_worker::api::Config { tick_budget: budget, ..api.config.clone() }, ..api };
    let status = data(&api.get("/admin/media-usage/status?day=2030-01-01"));
    let daily = &status["daily"];
    assert_eq!((daily["day"].as_str(), daily["budget"].as_u64()), (Some("2030-01-01"), Some(5_000)));
    let written = daily["rowsWritten"].as_u64().unwrap();
    assert!(written > 4_000 && written <= 5_000 + tick::budget::LOG_ROWS.written, "{daily}");
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
    assert_eq!(estimate["finishDay"].as_str(), tick::budget::add_days("2030-01-01", days).as_deref());
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
    let status = data(&api.get("/admin/media-usage/status?day=2030-01-01"));
    let run = &status["repairs"][0];
    assert_eq!((run["collection"].as_str(), run["phase"].as_str()), (Some("docs"), Some("scan")), "{run}");
    assert_eq!((run["entriesLeft"].as_u64(), run["queuedLeft"].as_u64()), (Some(700), Some(0)));
    assert!(run["estimate"]["rowsToWrite"].as_u64().unwrap() >= 700, "{run}");
}
