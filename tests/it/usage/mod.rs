//! The media usage index end to end on SQLite: capture, projection, eligibility, admission,
//! CAS losses, crash resumption at every statement, coverage and the operator endpoints.

use std::cell::Cell;

use futures::executor::block_on;
use media_usage_worker::api::{self, Request, Response};
use media_usage_worker::clock::{FnClock, MonotonicClock};
use media_usage_worker::exec::fault::Faulty;
use media_usage_worker::exec::meter::Metered;
use media_usage_worker::exec::sqlite::SqliteExecutor;
use media_usage_worker::exec::{Error, Executor, Outcome, Statement};
use media_usage_worker::tick::{self, budget::Budget};
use media_usage_worker::usage::project::{self, Admission, JobOutcome};
use serde_json::{json, Value as Json};

use crate::support::{code, collection_id, data, scalar, text, Api, ADMIN};

mod continuation;
mod cpu;
mod faults;
mod groups;
mod index;
mod limits;
mod queue;
mod split;

/// A collection `posts` with a title, an image, a file, Portable Text and a repeater.
fn setup() -> Api {
    let api = Api::new();
    let r = api.post(
        "/schema/collections",
        &json!({"slug": "posts", "label": "Posts", "fields": [
            {"slug": "title", "type": "string"},
            {"slug": "hero", "type": "image"},
            {"slug": "attachment", "type": "file"},
            {"slug": "body", "type": "portableText"},
            {"slug": "gallery", "type": "repeater", "subFields": [{"slug": "image", "type": "image"}, {"slug": "caption", "type": "string"}]}
        ]}),
    );
    assert_eq!(r.status, 201, "{}", r.body);
    api
}

fn create(api: &Api, slug: &str, status: &str, data_: Json) -> String {
    let r = api.post("/content/posts", &json!({"slug": slug, "status": status, "data": data_}));
    assert_eq!(r.status, 201, "{}", r.body);
    data(&r)["item"]["id"].as_str().unwrap().to_owned()
}

fn used_in(api: &Api, media: &str) -> Json {
    data(&api.get(&format!("/media/{media}/usage")))
}

fn coverage(api: &Api) -> String {
    data(&api.get("/admin/media-usage/status"))["status"].as_str().unwrap().to_owned()
}

fn gallery(n: usize, prefix: &str) -> Json {
    Json::Array((0..n).map(|i| json!({"image": format!("{prefix}{i}")})).collect())
}

/// Saves an entry with a gallery behind the API (as an earlier version, or a higher limit, let
/// it be saved: the API refuses what passes the admission limit), captured like any write, and
/// runs the ticks with the API's policy. Returns its id.
fn create_past_api(api: &Api, slug: &str, gallery: &Json) -> String {
    api.db
        .connection()
        .execute(
            "INSERT INTO ec_posts (id, slug, status, gallery) VALUES (?1, ?1, 'published', ?2)",
            [slug, &gallery.to_string()],
        )
        .unwrap();
    block_on(crate::support::drain(
        &api.db,
        &MonotonicClock::default(),
        api.config.tick_budget,
        &api.config.background,
        100,
    ))
    .unwrap();
    slug.to_owned()
}

/// `posts` with projection jobs admitting at most `max` occurrences per variant.
fn setup_admitting(max: usize) -> Api {
    let mut api = setup();
    api.config.background = api.config.background.with_admission(Admission { max_occurrences: max });
    api
}

fn drain(db: &SqliteExecutor) -> u32 {
    let budget = Budget::new(40, 60_000.0);
    block_on(crate::support::drain(db, &MonotonicClock::default(), budget, &crate::support::policy(), 100)).unwrap()
}

/// The media ids the index currently shows for the entry, per source variant.
fn projection(db: &SqliteExecutor) -> Vec<(String, String)> {
    let conn = db.connection();
    let mut stmt = conn
        .prepare(
            "SELECT s.source_variant, u.media_id FROM _emdash_media_usage u
             JOIN _emdash_media_usage_sources s ON s.source_key = u.source_key AND s.current_generation = u.generation
             ORDER BY 1, 2",
        )
        .unwrap();
    stmt.query_map([], |r| Ok((r.get(0)?, r.get(1)?))).unwrap().map(Result::unwrap).collect()
}

/// `n` entries written behind the API: captured (queued) but not projected.
fn backlog(api: &Api, n: usize) {
    for i in 0..n {
        api.db
            .connection()
            .execute(
                "INSERT INTO ec_posts (id, slug, status, hero) VALUES (?1, ?1, 'published', ?2)",
                [format!("b{i}"), format!("m{i}")],
            )
            .unwrap();
    }
}

/// `n` fresh entries written behind the API (captured, queued), `images` images each.
fn queued(api: &Api, n: usize, images: usize) {
    let gallery = |i: usize| Json::Array((0..images).map(|k| json!({"image": format!("q{i}-{k}")})).collect());
    for i in 0..n {
        api.db
            .connection()
            .execute(
                "INSERT INTO ec_posts (id, slug, status, gallery) VALUES (?1, ?1, 'published', ?2)",
                [format!("q{i}"), gallery(i).to_string()],
            )
            .unwrap();
    }
}
