//! Continuations: a tick with work left hands on one, and the chain ends when nothing is due.

use super::*;

fn continuing_tick(api: &Api, budget: Budget, handing_on: Option<&str>) -> tick::report::TickReport {
    let clock = MonotonicClock::default();
    let metered = Metered::new(&api.db, &clock);
    let report = block_on(tick::run(
        &metered,
        &clock,
        budget,
        &crate::support::policy(),
        tick::Continuation::On { handing_on },
        None,
    ));
    assert!(report.statements <= budget.max_statements, "{report:?}");
    report
}

fn baton(api: &Api) -> Option<String> {
    text(&api.db, "SELECT max(token) FROM _emdash_media_usage_continuation")
}

#[test]
fn a_tick_with_work_left_hands_on_one_continuation_and_the_chain_ends_when_nothing_is_due() {
    let api = setup();
    backlog(&api, 12);
    let small = Budget::new(11, 60_000.0);
    // A cron tick that cannot finish takes the baton.
    let first = continuing_tick(&api, small, None);
    let token = first.continue_with.clone().expect("work is left: a continuation is wanted");
    assert_eq!(baton(&api).as_deref(), Some(token.as_str()));
    // Another cron tick meanwhile sends nothing: one continuation is in flight.
    let cron = continuing_tick(&api, small, None);
    assert_eq!(cron.continue_with, None);
    // A stale message (not the holder) cannot hand on either.
    assert_eq!(continuing_tick(&api, small, Some("stale")).continue_with, None);
    // The holder's continuation hands the baton on while work is left, then drops it.
    let mut held = token;
    let mut continuations = 0;
    loop {
        let r = continuing_tick(&api, small, Some(&held));
        continuations += 1;
        assert!(continuations < 50, "the chain does not end");
        match r.continue_with {
            Some(next) => {
                assert_eq!(baton(&api).as_deref(), Some(next.as_str()));
                held = next;
            }
            None => break,
        }
    }
    assert_eq!(baton(&api), None, "the chain ended and dropped its baton");
    assert_eq!(scalar(&api.db, "SELECT count(*) FROM _emdash_media_usage_work"), 0);
    assert_eq!(coverage(&api), "complete");
    // An expired baton (a lost message) lets the next cron tick send again.
    backlog_more(&api);
    let r = continuing_tick(&api, small, None);
    let lost = r.continue_with.expect("taken");
    api.db
        .connection()
        .execute_batch("UPDATE _emdash_media_usage_continuation SET expires_at = '2000-01-01T00:00:00.000Z'")
        .unwrap();
    let again = continuing_tick(&api, small, None).continue_with.expect("a lost message is replaced once it expires");
    assert_ne!(again, lost);
}

fn backlog_more(api: &Api) {
    for i in 0..12 {
        api.db
            .connection()
            .execute(
                "INSERT INTO ec_posts (id, slug, status, hero) VALUES (?1, ?1, 'published', 'x')",
                [format!("c{i}")],
            )
            .unwrap();
    }
}

#[test]
fn without_a_queue_or_with_nothing_due_no_continuation_is_taken() {
    let api = setup();
    backlog(&api, 12);
    let clock = MonotonicClock::default();
    let metered = Metered::new(&api.db, &clock);
    let r = block_on(tick::run(
        &metered,
        &clock,
        Budget::new(11, 60_000.0),
        &crate::support::policy(),
        tick::Continuation::Off,
        None,
    ));
    assert_eq!((r.continue_with, baton(&api)), (None, None));
    let api = setup();
    let r = continuing_tick(&api, crate::support::budget(), None);
    assert_eq!((r.continue_with, baton(&api)), (None, None), "an idle tick asks for nothing");
}

#[test]
fn a_stale_continuation_with_nothing_due_leaves_the_live_baton_alone() {
    let api = setup();
    api.db
        .connection()
        .execute_batch(
            "INSERT INTO _emdash_media_usage_continuation (id, token, sent_at, expires_at)
             VALUES (1, 'live', '2026-01-01T00:00:00.000Z', '2999-01-01T00:00:00.000Z')",
        )
        .unwrap();
    assert_eq!(continuing_tick(&api, crate::support::budget(), Some("stale")).continue_with, None);
    assert_eq!(baton(&api).as_deref(), Some("live"));
    assert_eq!(continuing_tick(&api, crate::support::budget(), Some("live")).continue_with, None);
    assert_eq!(baton(&api), None, "its holder drops it");
}
