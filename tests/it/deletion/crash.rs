//! A crash at every statement boundary of the DELETE request and of every cleanup tick, each
//! resumed to the same end state.

use super::*;

/// What an uninterrupted deletion leaves: the deleted collection gone, the other one as before,
/// the media library intact.
struct Expected {
    posts_id: String,
    pages_id: String,
    pages: String,
    media: i64,
}

fn fixture() -> (Api, Expected) {
    let api = Api::new();
    site(&api, 4);
    let posts_id = collection_id(&api.db, "posts");
    let pages_id = collection_id(&api.db, "pages");
    let pages = dump(&api.db, &pages_id, "pages");
    let media = scalar(&api.db, "SELECT count(*) FROM media");
    (api, Expected { posts_id, pages_id, pages, media })
}

fn assert_end_state(api: &Api, e: &Expected, what: &str) {
    assert_gone(&api.db, &e.posts_id, "posts");
    assert_eq!(dump(&api.db, &e.pages_id, "pages"), e.pages, "{what}: the other collection changed");
    assert_eq!(scalar(&api.db, "SELECT count(*) FROM media"), e.media, "{what}: media rows are never deleted");
    assert_eq!(orphans(&api.db), 0, "{what}");
}

/// Small batches so every cleanup phase takes several statements, and a small tick budget so
/// the cleanup spans several ticks.
fn crash_budget() -> Tick {
    (Budget::new(11, 60_000.0), crate::support::policy().with_cleanup(CleanupBatch::Fixed(2)))
}

#[test]
fn a_crash_at_any_statement_of_the_delete_request_is_resumed_to_the_same_end_state() {
    let (probe, _) = fixture();
    let metered = Metered::new(&probe.db, MonotonicClock::default());
    assert_eq!(call_on(&metered, "DELETE", "/schema/collections/posts?force=true").status, 200);
    let n = metered.usage().statements;
    for k in 1..=n {
        let (api, expected) = fixture();
        let r = call_on(&Faulty::new(&api.db, Some(k)), "DELETE", "/schema/collections/posts?force=true");
        assert_eq!(r.status, 500, "k={k}: {}", r.body);
        assert!(!r.body.contains("injected"), "k={k}: a 500 never carries its cause");
        time_passes(&api.db);
        if tombstone(&api.db, "posts").is_none() {
            // The crash came before the tombstone: nothing happened; the operator repeats it.
            assert_eq!(collection_id(&api.db, "posts"), expected.posts_id);
            assert_eq!(call_on(&api.db, "DELETE", "/schema/collections/posts?force=true").status, 200);
        }
        tick_until_gone(&api.db, "posts", crash_budget());
        assert_end_state(&api, &expected, &format!("request k={k}"));
    }
}

#[test]
fn a_crash_at_any_statement_of_any_cleanup_tick_is_resumed_to_the_same_end_state() {
    // The uninterrupted run: statements per tick.
    let (probe, expected) = fixture();
    assert_eq!(call_on(&probe.db, "DELETE", "/schema/collections/posts?force=true").status, 200);
    let mut per_tick = Vec::new();
    while tombstone(&probe.db, "posts").is_some() {
        per_tick.push(tick_with(&probe.db, crash_budget()).statements);
        time_passes(&probe.db);
        assert!(per_tick.len() < 100);
    }
    assert_end_state(&probe, &expected, "uninterrupted");
    assert!(per_tick.len() >= 3, "the cleanup spans several ticks: {per_tick:?}");
    let mut crashes = 0;
    for (i, n) in per_tick.iter().enumerate() {
        for k in 1..=*n {
            let (api, expected) = fixture();
            assert_eq!(call_on(&api.db, "DELETE", "/schema/collections/posts?force=true").status, 200);
            for _ in 0..i {
                tick_with(&api.db, crash_budget());
                time_passes(&api.db);
            }
            let report = tick_with(&Faulty::new(&api.db, Some(k)), crash_budget());
            assert_ne!(report.outcome, media_usage_worker::model::state::TickOutcome::Idle, "tick {i} k={k}");
            crashes += 1;
            time_passes(&api.db);
            tick_until_gone(&api.db, "posts", crash_budget());
            assert_end_state(&api, &expected, &format!("tick {i} k={k}"));
        }
    }
    assert!(crashes >= 20, "{crashes} crash points");
}
