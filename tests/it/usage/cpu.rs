//! The CPU budget: a tick's projections stay within `MEDIA_USAGE_TICK_MAX_CPU_MS` by the cost
//! model, groups shrink to single entries when entries are heavy, and an entry too heavy to fit
//! the budget alone is still indexed (alone, never retried for want of room).

use super::*;
use crate::support::tick_once;
use media_usage_worker::usage::cost::{self, CpuWork};

/// Saves `n` entries whose title is `bytes` bytes of text and a gallery of one image, behind the
/// API (captured like any write).
fn heavy_entries(api: &Api, n: usize, bytes: usize) {
    let title = "lorem ipsum ".repeat(bytes / 12 + 1)[..bytes].to_owned();
    for i in 0..n {
        api.db
            .connection()
            .execute(
                "INSERT INTO ec_posts (id, slug, status, title, gallery) VALUES (?1, ?1, 'published', ?2, ?3)",
                [format!("h{i}"), title.clone(), json!([{"image": format!("h{i}")}]).to_string()],
            )
            .unwrap();
    }
}

/// Ticks at the default settings (the wall time lifted) until nothing is left to project; each
/// tick's jobs and modelled CPU.
fn ticks(api: &Api) -> Vec<(u64, u64)> {
    ticks_under(api, &crate::support::policy())
}

/// [`ticks`] under `policy`.
fn ticks_under(api: &Api, policy: &media_usage_worker::tick::lanes::BackgroundPolicy) -> Vec<(u64, u64)> {
    let budget = Budget::new(40, 600_000.0);
    let mut out = Vec::new();
    while scalar(&api.db, "SELECT count(*) FROM _emdash_media_usage_work WHERE state <> 'failed'") > 0 {
        let report = tick_once(&api.db, budget, policy);
        assert!(report.error.is_none(), "{report:?}");
        out.push((report.count("jobs"), report.count("cpuModelUs")));
        assert!(out.len() < 2_000, "the backlog does not drain");
    }
    out
}

#[test]
fn the_default_budget_fits_the_free_plan_with_a_margin() {
    let defaults = crate::support::policy();
    assert_eq!(defaults.cpu_ms, cost::DEFAULT_TICK_CPU_MS);
    let wasm_ms = (defaults.cpu_ms + cost::TICK_FIXED_MS) * cost::WASM_RATIO;
    assert!(wasm_ms <= 9.0, "a tick's most in wasm, {wasm_ms} ms, at least 10% under Free's 10 ms");
}

#[test]
fn the_largest_body_the_api_accepts_projects_within_the_default_budget_alone() {
    // All of it source data, with a candidate and an occurrence and its source row.
    let bytes = media_usage_worker::api::input::MAX_BODY_BYTES as u64;
    let largest = CpuWork::entry(bytes, 1, 2);
    assert!(largest.ms() <= cost::DEFAULT_TICK_CPU_MS, "{} ms", largest.ms());
    assert!(cost::fitting_bytes(cost::DEFAULT_TICK_CPU_MS) >= bytes);
}

#[test]
fn a_tick_projects_light_entries_in_groups_within_the_cpu_budget() {
    let api = setup();
    queued(&api, 1_000, 2);
    let ticks = ticks(&api);
    let budget_us = (cost::DEFAULT_TICK_CPU_MS * 1000.0) as u64;
    // The first group is sized at the assumed cost of an entry; later ones at what they cost.
    for &(jobs, us) in &ticks {
        assert!(us <= budget_us, "{us} µs in a tick: {ticks:?}");
        assert!(jobs > 10, "light entries go in groups: {ticks:?}");
    }
    assert_eq!(ticks.iter().map(|t| t.0).sum::<u64>(), 1_000);
    assert_eq!(scalar(&api.db, "SELECT count(*) FROM _emdash_media_usage"), 2_000);
    assert_eq!(coverage(&api), "complete");
}

#[test]
fn heavy_entries_shrink_the_group_to_one_entry_per_tick() {
    let api = setup();
    // Each entry alone costs more than half the budget: one per tick.
    let bytes = (cost::fitting_bytes(cost::DEFAULT_TICK_CPU_MS) * 2 / 3) as usize;
    assert!(CpuWork::entry(bytes as u64, 0, 0).ms() * 2.0 > cost::DEFAULT_TICK_CPU_MS);
    heavy_entries(&api, 6, bytes);
    let ticks = ticks(&api);
    assert!(ticks.iter().all(|&(jobs, _)| jobs == 1), "{ticks:?}");
    assert!(ticks.iter().all(|&(_, us)| us <= (cost::DEFAULT_TICK_CPU_MS * 1000.0) as u64), "{ticks:?}");
    assert_eq!(scalar(&api.db, "SELECT count(*) FROM _emdash_media_usage"), 6);
    assert_eq!(scalar(&api.db, "SELECT count(*) FROM _emdash_media_usage_work"), 0);
    assert_eq!(coverage(&api), "complete");
}

#[test]
fn an_entry_too_heavy_for_the_budget_is_indexed_past_it_by_itself_only() {
    let api = setup();
    let bytes = (cost::fitting_bytes(cost::DEFAULT_TICK_CPU_MS) * 3 / 2) as usize;
    let heavy = CpuWork::entry(bytes as u64, 0, 2).ms();
    assert!(heavy > cost::DEFAULT_TICK_CPU_MS);
    queued(&api, 30, 1);
    heavy_entries(&api, 2, bytes);
    let ticks = ticks(&api);
    // Each heavy one passes the budget by itself only: a group hands it back, its single job
    // runs, and the tick steps no more.
    let budget = (cost::DEFAULT_TICK_CPU_MS * 1000.0) as u64;
    let over: Vec<_> = ticks.iter().filter(|&&(_, us)| us > budget).collect();
    assert_eq!(over.len(), 2, "{ticks:?}");
    let most = ((cost::DEFAULT_TICK_CPU_MS + heavy) * 1000.0).ceil() as u64;
    assert!(ticks.iter().all(|&(_, us)| us <= most), "{ticks:?}");
    assert_eq!(scalar(&api.db, "SELECT count(*) FROM _emdash_media_usage"), 32);
    assert_eq!(scalar(&api.db, "SELECT count(*) FROM _emdash_media_usage_work"), 0, "none failed");
    assert_eq!(coverage(&api), "complete");
}

#[test]
fn a_write_too_heavy_to_project_inline_leaves_its_projection_to_the_ticks() {
    let api = setup();
    let cpu_ms = api.config.background.cpu_ms;
    // The request extracts the entry for admission; projecting it again must fit the budget too.
    let light = (cost::fitting_bytes(cpu_ms / 2.0) / 2) as usize;
    let heavy = (cost::fitting_bytes(cpu_ms / 2.0) * 3 / 2) as usize;
    let text = |n: usize| "lorem ipsum ".repeat(n / 12 + 1)[..n].to_owned();
    let a = create(&api, "light", "published", json!({"title": text(light), "hero": "m1"}));
    assert_eq!(scalar(&api.db, &format!("SELECT count(*) FROM _emdash_media_usage_work WHERE content_id = '{a}'")), 0);
    let b = create(&api, "heavy", "published", json!({"title": text(heavy), "hero": "m2"}));
    let queued =
        format!("SELECT count(*) FROM _emdash_media_usage_work WHERE content_id = '{b}' AND state = 'pending'");
    assert_eq!(scalar(&api.db, &queued), 1, "left queued");
    ticks(&api);
    assert_eq!(scalar(&api.db, "SELECT count(*) FROM _emdash_media_usage"), 2);
    assert_eq!(coverage(&api), "complete");
}

#[test]
fn a_tick_passes_its_cpu_budget_by_at_most_one_entry_known_only_once_loaded() {
    let api = setup();
    // A budget of less than two first guesses. Light and heavy entries alternate; a heavy one is
    // known to be heavy only once loaded: a group hands it back, and it runs as a single job.
    let policy = crate::support::policy().with_cpu_ms(0.3);
    let heavy = CpuWork::entry(200_000, 0, 2).ms();
    for i in 0..6 {
        let bytes = if i % 2 == 0 { 5_000 } else { 200_000 };
        let title = "lorem ipsum ".repeat(bytes / 12 + 1)[..bytes].to_owned();
        api.db
            .connection()
            .execute(
                "INSERT INTO ec_posts (id, slug, status, title, hero) VALUES (?1, ?1, 'published', ?2, ?1)",
                [format!("s{i}"), title],
            )
            .unwrap();
    }
    let ticks = ticks_under(&api, &policy);
    let most = ((0.3 + heavy) * 1000.0).ceil() as u64;
    assert!(ticks.iter().all(|&(_, us)| us <= most), "{ticks:?}");
    assert_eq!(scalar(&api.db, "SELECT count(*) FROM _emdash_media_usage"), 6);
    assert_eq!(scalar(&api.db, "SELECT count(*) FROM _emdash_media_usage_work"), 0, "none failed");
}
