//! Relinks: `POST /media/{id}/relink` and the `relink` lane rewrite every file URL of an item's
//! earlier keys, in live data and drafts (trashed entries too), to its current key, as ordinary
//! content writes guarded on the entry as loaded; only URL text changes.

use futures::executor::block_on;
use media_usage_worker::clock::FnClock;
use media_usage_worker::exec::sqlite::SqliteExecutor;
use media_usage_worker::exec::Executor;
use media_usage_worker::lane::{Counts, Ctx, Lane, LaneStep, RowCount};
use media_usage_worker::lifecycle::media::relink::{RelinkLane, MAX_CONFLICTS};
use media_usage_worker::model::state::TickOutcome;
use serde_json::{json, Value as Json};

use crate::deletion::Hooked;
use crate::support::{code, data, exec_sql, scalar, text, text_if_any, Api, ADMIN, MEDIA_PUBLIC_URL};

/// The item's key before the replace: a page writes its space percent-encoded.
pub const OLD_KEY: &str = "uploads/old photo.png";
/// Its key after.
pub const NEW_KEY: &str = "uploads/v2/new-photo.png";

/// The spellings a page writes a key in: as a path (`/` kept), and every reserved character
/// percent-encoded.
fn path_form(key: &str) -> String {
    key.replace(' ', "%20")
}

fn encoded_form(key: &str) -> String {
    key.replace(' ', "%20").replace('/', "%2F")
}

/// The key's path form inside a percent-encoded query value (encoded once more).
fn query_form(key: &str) -> String {
    path_form(key).replace('%', "%25").replace('/', "%2F")
}

/// A text field's value linking `key` in every spelling the extractor reads: HTML attributes
/// and a srcset, an absolute site URL with a query, Markdown, a transformation URL, the public
/// URL, an image endpoint's encoded query value, JSON escapes, character references.
pub fn body(key: &str) -> String {
    let (p, e) = (path_form(key), encoded_form(key));
    let q = query_form(key);
    format!(
        "<p><img src=\"/_emdash/api/media/file/{p}\" srcset=\"/_emdash/api/media/file/{p} 1x, \
         https://site.example/_emdash/api/media/file/{p}?w=2#x 2x\"></p>\n\
         [pdf](/_emdash/api/media/file/{e}). \
         ![t](https://site.example/cdn-cgi/image/width=80,format=auto/_emdash/api/media/file/{p} \"t\")\n\
         {MEDIA_PUBLIC_URL}{p}, /_image?href=%2F_emdash%2Fapi%2Fmedia%2Ffile%2F{q}&amp;w=800 \
         \\/_emdash\\/api\\/media\\/file\\/{} &#47;_emdash&#x2F;api&sol;media/file/{p}.",
        p.replace('/', "\\/")
    )
}

/// A Portable Text value with a link and an image URL inside its spans.
pub fn blocks(key: &str) -> Json {
    let p = path_form(key);
    json!([
        {"_type": "block", "_key": "a", "children": [
            {"_type": "span", "text": format!("<a href=\"/_emdash/api/media/file/{p}\">the file</a>")},
            {"_type": "span", "text": "no link here", "marks": ["strong"]}
        ]},
        {"_type": "embed", "url": format!("https://site.example/_emdash/api/media/file/{p}")}
    ])
}

/// A collection `posts` (title, body, content) and the item registered under [`OLD_KEY`].
pub fn site() -> (Api, String) {
    let api = Api::new();
    let fields = json!([
        {"slug": "title", "type": "string"},
        {"slug": "body", "type": "text"},
        {"slug": "content", "type": "portableText"}
    ]);
    data(&api.post("/schema/collections", &json!({"slug": "posts", "label": "Posts", "fields": fields})));
    let media = api.register_media(OLD_KEY);
    (api, media)
}

/// A site with `n` entries linking the item's old key in their live data, the item replaced
/// (its old key a version) and a relink of it started: the relink, its item and the entries.
fn relinking(n: usize) -> (Api, String, Vec<String>) {
    let (api, media) = site();
    let ids = (0..n).map(|i| entry(&api, &format!("e{i}"), OLD_KEY)).collect();
    api.drain();
    replace_by_sql(&api, &media, NEW_KEY);
    data(&api.call("POST", &format!("/media/{media}/relink"), Some(ADMIN), None));
    (api, media, ids)
}

/// An entry linking `key` in its live data (title `title`).
pub fn entry(api: &Api, slug: &str, key: &str) -> String {
    let d = json!({"title": format!("Entry {slug}"), "body": body(key), "content": blocks(key)});
    let r = api.post("/content/posts", &json!({"slug": slug, "status": "published", "data": d}));
    data(&r)["item"]["id"].as_str().unwrap().to_owned()
}

/// Replaces the item's file as a replace would: its key becomes `new`, the old one a version.
pub fn replace_by_sql(api: &Api, media: &str, new: &str) {
    exec_sql(
        api,
        &format!(
            "INSERT INTO media_versions (storage_key, media_id, filename, mime_type)
               SELECT storage_key, id, filename, mime_type FROM media WHERE id = '{media}';
             UPDATE media SET storage_key = '{new}' WHERE id = '{media}';"
        ),
    );
}

fn stored(api: &Api, id: &str, column: &str) -> String {
    text(api, &format!("SELECT {column} FROM ec_posts WHERE id = '{id}'")).unwrap_or_default()
}

fn draft_data(api: &Api, id: &str) -> Option<String> {
    text_if_any(
        api,
        &format!("SELECT r.data FROM revisions r JOIN ec_posts e ON e.draft_revision_id = r.id WHERE e.id = '{id}'"),
    )
}

fn relink(api: &Api, media: &str) -> Json {
    data(&api.get(&format!("/media/{media}/relink")))["item"].clone()
}

/// Ticks until the relink of `media` is done; the ticks it took.
fn tick_until_done(api: &Api, media: &str) -> usize {
    for n in 1..=400 {
        let report = api.tick();
        assert!(report.error.is_none(), "{:?}", report.error);
        if relink(api, media)["state"] == "done" {
            return n;
        }
    }
    panic!("the relink does not finish: {}", relink(api, media));
}

#[test]
fn a_relink_rewrites_the_live_data_and_drafts_of_many_entries_across_ticks() {
    let (api, media) = site();
    let ids: Vec<String> = (0..24).map(|i| entry(&api, &format!("e{i}"), OLD_KEY)).collect();
    // Half have a draft that links the old key too, with other text around it.
    for id in ids.iter().step_by(2) {
        let d = json!({"draft": true, "data": {"title": "Draft title", "body": format!("draft: {}", body(OLD_KEY))}});
        data(&api.put(&format!("/content/posts/{id}"), &d));
    }
    api.drain();
    let before: Vec<(String, String, Option<String>)> =
        ids.iter().map(|id| (stored(&api, id, "body"), stored(&api, id, "content"), draft_data(&api, id))).collect();
    let versions: Vec<i64> =
        ids.iter().map(|id| scalar(&api, &format!("SELECT version FROM ec_posts WHERE id = '{id}'"))).collect();
    replace_by_sql(&api, &media, NEW_KEY);

    let r = api.call("POST", &format!("/media/{media}/relink"), Some(ADMIN), None);
    assert_eq!(r.status, 202, "{}", r.body);
    let started = data(&r)["item"].clone();
    assert_eq!(started["state"], "queued");
    assert_eq!(started["entriesLeft"], 24);
    assert_eq!(started["entriesLeftCapped"], false);
    assert!(started["eta"]["ticks"].as_u64().unwrap() >= 1, "{started}");
    let ticks = tick_until_done(&api, &media);
    assert!(ticks > 2, "more entries than one tick takes: {ticks} ticks");

    let done = relink(&api, &media);
    assert_eq!((done["entriesDone"].as_i64(), done["entriesChanged"].as_i64()), (Some(24), Some(24)), "{done}");
    assert_eq!((done["entriesLeft"].as_i64(), done["conflicts"].as_i64()), (Some(0), Some(0)));
    assert!(done["finishedAt"].is_string());
    let relinked = |s: &str| {
        s.replace(&query_form(OLD_KEY), &query_form(NEW_KEY))
            .replace(&path_form(OLD_KEY), &path_form(NEW_KEY))
            .replace(&encoded_form(OLD_KEY), &encoded_form(NEW_KEY))
            .replace(&path_form(OLD_KEY).replace('/', "\\/"), &path_form(NEW_KEY).replace('/', "\\/"))
            .replace(&path_form(OLD_KEY).replace('/', "\\\\/"), &path_form(NEW_KEY).replace('/', "\\\\/"))
    };
    for (i, id) in ids.iter().enumerate() {
        let (body, content, draft) = &before[i];
        assert!(body.contains("old%20photo") && content.contains("old%20photo"));
        // Byte for byte what it was, but for the key in each URL.
        assert_eq!(stored(&api, id, "body"), relinked(body), "{id}");
        assert_eq!(stored(&api, id, "content"), relinked(content), "{id}");
        assert_eq!(stored(&api, id, "title"), format!("Entry e{i}"));
        assert!(!stored(&api, id, "body").contains("old"), "{}", stored(&api, id, "body"));
        assert_eq!(draft_data(&api, id), draft.as_deref().map(relinked), "{id}");
        // An ordinary write: a new version, the draft (if any) still current.
        let version = scalar(&api, &format!("SELECT version FROM ec_posts WHERE id = '{id}'"));
        assert_eq!(version, versions[i] + if draft.is_some() { 2 } else { 1 });
        let got = data(&api.get(&format!("/content/posts/{id}")));
        assert_eq!(got["item"]["data"]["title"], format!("Entry e{i}"));
    }
    // Each write is a revision by the editor who asked: the live data as written, now the entry's
    // live revision (as a publish makes the revision it publishes), and each draft.
    assert_eq!(
        scalar(&api, "SELECT count(*) FROM revisions WHERE author_id IS NOT NULL AND data LIKE '%new-photo%'"),
        36
    );
    for id in &ids {
        let live = text(
            &api,
            &format!(
                "SELECT r.data FROM revisions r JOIN ec_posts e ON e.live_revision_id = r.id
                 WHERE e.id = '{id}' AND r.author_id IS NOT NULL AND r.base_version = e.version - (e.draft_revision_id IS NOT NULL AND e.version > 2 AND EXISTS (SELECT 1 FROM revisions d WHERE d.id = e.draft_revision_id AND d.author_id IS NOT NULL))"
            ),
        )
        .unwrap_or_default();
        let got = data(&api.get(&format!("/content/posts/{id}")))["item"]["data"].clone();
        assert_eq!(serde_json::from_str::<Json>(&live).ok(), Some(got), "{id}: the live revision is the live data");
    }
    // Each entry was re-queued and re-projected: its uses of the item are URLs of the new key.
    api.drain();
    let uses =
        scalar(&api, &format!("SELECT count(DISTINCT source_key) FROM _emdash_media_usage WHERE media_id = '{media}'"));
    assert_eq!(uses, 36, "24 live variants and 12 drafts");
}

#[test]
fn the_tick_budget_bounds_a_relink_step_by_step() {
    let (api, _, _) = relinking(6);
    let report = api.tick();
    assert!(report.statements <= api.config.tick_budget.max_statements, "{report:?}");
    assert!(report.lanes.contains(&"relink"), "{report:?}");
}

/// The relink lane alone, stepped by hand over `db`.
struct Stepper<'a> {
    lane: RelinkLane<'a>,
    db: &'a SqliteExecutor,
}

impl<'a> Stepper<'a> {
    fn new(api: &'a Api) -> Stepper<'a> {
        let p = &api.config.background;
        Stepper { lane: RelinkLane::new(&p.projection.rules, p.max_revisions, 1e9), db: &api.db }
    }

    fn step(&mut self) -> Option<LaneStep> {
        let db = self.db;
        self.step_on(db)
    }

    /// A step over `exec` (a hooked executor, to interleave an author's edit).
    fn step_on<X: Executor>(&mut self, exec: &X) -> Option<LaneStep> {
        let clock = FnClock(|| 0.0);
        let spent = || RowCount::default();
        let mut counts = Counts::default();
        let mut ctx = Ctx {
            exec,
            clock: &clock,
            room: 100,
            rows: RowCount::new(u64::MAX, u64::MAX),
            spent: &spent,
            counts: &mut counts,
        };
        block_on(self.lane.step(&mut ctx)).unwrap()
    }

    fn finish(mut self) {
        block_on(Lane::<SqliteExecutor, FnClock>::finish(&mut self.lane, self.db)).unwrap();
    }
}

/// The relink's write batch: its guard's SQL.
const WRITE: &str = "A relink's write holds only while the relink";

/// An author's edit of the entry's title, as an update writes it. (Written here rather than
/// through the API, whose write projects the entry at once: until replaces keep the index
/// resolving earlier keys, a projection would drop the entry's old URLs from it.)
fn author_edits(api: &Api, id: &str, title: &str) {
    exec_sql(
        api,
        &format!(
            "UPDATE ec_posts SET title = '{title}', version = version + 1,
                 updated_at = strftime('%Y-%m-%dT%H:%M:%fZ', 'now', '+1 second') WHERE id = '{id}'"
        ),
    );
}

#[test]
fn an_authors_edit_racing_the_rewrite_of_the_same_entry_is_never_lost() {
    let (api, media, ids) = relinking(1);
    let id = ids[0].clone();
    let mut lane = Stepper::new(&api);
    assert!(lane.step().is_some(), "claims the relink");
    // The author edits the entry between the load and the write.
    let hooked = Hooked::new(&api.db).before(WRITE, |_| author_edits(&api, &id, "Edited by its author"));
    assert!(lane.step_on(&hooked).is_some(), "loads the entry, rewrites it, and the write loses to the edit");
    hooked.done();
    drop(hooked);
    assert_eq!(stored(&api, &id, "title"), "Edited by its author");
    assert!(stored(&api, &id, "body").contains("old%20photo"), "nothing written over the edit");
    assert_eq!(scalar(&api, "SELECT conflicts FROM _emdash_media_relinks"), 1);
    // The entry is loaded again, and written: both changes are there.
    while lane.step().is_some() {}
    lane.finish();
    assert_eq!(stored(&api, &id, "title"), "Edited by its author");
    assert!(stored(&api, &id, "body").contains("v2/new-photo.png") && !stored(&api, &id, "body").contains("old"));
    let done = relink(&api, &media);
    assert_eq!(
        (done["state"].as_str(), done["conflicts"].as_i64(), done["entriesChanged"].as_i64()),
        (Some("done"), Some(1), Some(1))
    );
}

#[test]
fn an_entry_that_keeps_changing_is_passed_over_unsettled_never_overwritten() {
    let (api, media, ids) = relinking(1);
    let id = ids[0].clone();
    let mut lane = Stepper::new(&api);
    lane.step();
    for n in 0..MAX_CONFLICTS {
        let title = format!("Edit {n}");
        let hooked = Hooked::new(&api.db).before(WRITE, |_| author_edits(&api, &id, &title));
        lane.step_on(&hooked);
        hooked.done();
    }
    while lane.step().is_some() {}
    lane.finish();
    let done = relink(&api, &media);
    assert_eq!(done["state"], "done");
    assert_eq!(
        (done["conflicts"].as_i64(), done["entriesUnsettled"].as_i64()),
        (Some(MAX_CONFLICTS), Some(1)),
        "{done}"
    );
    assert_eq!(done["entriesChanged"], 0);
    assert_eq!(stored(&api, &id, "title"), format!("Edit {}", MAX_CONFLICTS - 1));
    assert!(stored(&api, &id, "body").contains("old%20photo"));
}

#[test]
fn an_entry_in_the_trash_is_rewritten_too() {
    let (api, media) = site();
    let id = entry(&api, "e0", OLD_KEY);
    data(&api.delete(&format!("/content/posts/{id}")));
    api.drain();
    replace_by_sql(&api, &media, NEW_KEY);
    data(&api.call("POST", &format!("/media/{media}/relink"), Some(ADMIN), None));
    tick_until_done(&api, &media);
    assert!(stored(&api, &id, "body").contains("v2/new-photo.png"));
    assert!(text(&api, &format!("SELECT deleted_at FROM ec_posts WHERE id = '{id}'")).is_some(), "still in the trash");
}

#[test]
fn an_entry_that_no_longer_links_an_earlier_key_is_passed_over_without_a_write() {
    let (api, media) = site();
    let id = entry(&api, "e0", OLD_KEY);
    api.drain();
    replace_by_sql(&api, &media, NEW_KEY);
    // The entry stops linking the old key behind the index's back (its projection not yet run).
    exec_sql(&api, &format!("UPDATE ec_posts SET body = 'no links', content = '[]' WHERE id = '{id}'"));
    let version = scalar(&api, &format!("SELECT version FROM ec_posts WHERE id = '{id}'"));
    let updated = text(&api, &format!("SELECT updated_at FROM ec_posts WHERE id = '{id}'"));
    data(&api.call("POST", &format!("/media/{media}/relink"), Some(ADMIN), None));
    let mut lane = Stepper::new(&api);
    while lane.step().is_some() {}
    lane.finish();
    let done = relink(&api, &media);
    assert_eq!(
        (done["state"].as_str(), done["entriesDone"].as_i64(), done["entriesChanged"].as_i64()),
        (Some("done"), Some(1), Some(0))
    );
    assert_eq!(scalar(&api, &format!("SELECT version FROM ec_posts WHERE id = '{id}'")), version);
    assert_eq!(text(&api, &format!("SELECT updated_at FROM ec_posts WHERE id = '{id}'")), updated);
}

#[test]
fn a_retried_request_answers_the_relink_in_progress_and_never_starts_two() {
    let (api, media) = site();
    entry(&api, "e0", OLD_KEY);
    api.drain();
    replace_by_sql(&api, &media, NEW_KEY);
    let first = api.call("POST", &format!("/media/{media}/relink"), Some(ADMIN), Some(b"{}"));
    assert_eq!(first.status, 202, "{}", first.body);
    let retry = api.call("POST", &format!("/media/{media}/relink"), Some(ADMIN), None);
    assert_eq!(retry.status, 200, "{}", retry.body);
    assert_eq!(data(&retry)["item"]["id"], data(&first)["item"]["id"]);
    assert_eq!(scalar(&api, "SELECT count(*) FROM _emdash_media_relinks"), 1);
    tick_until_done(&api, &media);
    // Once done, a new request starts a new relink (which finds nothing left to rewrite).
    let again = api.call("POST", &format!("/media/{media}/relink"), Some(ADMIN), None);
    assert_eq!(again.status, 202, "{}", again.body);
    assert_ne!(data(&again)["item"]["id"], data(&first)["item"]["id"]);
    assert_eq!(relink(&api, &media)["id"], data(&again)["item"]["id"], "the latest");
}

#[test]
fn only_editors_relink_and_bad_requests_are_refused_clearly() {
    let (api, media) = site();
    let author = api.token("author", &["media:read", "media:write", "content:write"]);
    let editor = api.token("editor", &["media:read", "media:write"]);
    let reader = api.token("editor", &["media:read"]);
    let path = format!("/media/{media}/relink");
    let r = api.call("POST", &path, Some(&author), None);
    assert_eq!((r.status, code(&r)), (403, "FORBIDDEN".to_owned()));
    let r = api.call("POST", &path, Some(&reader), None);
    assert_eq!((r.status, code(&r)), (403, "INSUFFICIENT_SCOPE".to_owned()));
    let r = api.call("GET", &path, Some(&author), None);
    assert_eq!((r.status, code(&r)), (403, "FORBIDDEN".to_owned()));
    let r = api.call("GET", &path, Some(&editor), None);
    assert_eq!((r.status, code(&r)), (404, "NOT_FOUND".to_owned()), "no relink yet");
    let r = api.call("POST", &path, Some(&editor), Some(br#"{"all": true}"#));
    assert_eq!((r.status, code(&r)), (400, "VALIDATION_ERROR".to_owned()), "{}", r.body);
    assert_eq!(r.body_json()["error"]["details"]["issues"][0]["path"], "all");
    let r = api.call("POST", &path, Some(&editor), Some(b"[1]"));
    assert_eq!(r.status, 400, "{}", r.body);
    let r = api.call("POST", &path, Some(&editor), Some(b"{"));
    assert_eq!((r.status, code(&r)), (400, "INVALID_JSON".to_owned()));
    let r = api.call("POST", "/media/nope/relink", Some(&editor), None);
    assert_eq!((r.status, code(&r)), (404, "NOT_FOUND".to_owned()));
    let r = api.call("POST", &path, Some(&editor), Some(b" {} "));
    assert_eq!(r.status, 202, "{}", r.body);
    assert_eq!(
        data(&r)["item"]["requestedBy"],
        scalar_text(&api, "SELECT id FROM _emdash_api_tokens WHERE name = 'editor' AND scopes LIKE '%write%'")
    );
    // An item in the trash: 409 (no relink started).
    let other = api.register_media("other.png");
    data(&api.delete(&format!("/media/{other}")));
    let r = api.call("POST", &format!("/media/{other}/relink"), Some(&editor), None);
    assert_eq!((r.status, code(&r)), (409, "CONFLICT".to_owned()), "{}", r.body);
    assert_eq!(scalar(&api, &format!("SELECT count(*) FROM _emdash_media_relinks WHERE media_id = '{other}'")), 0);
}

fn scalar_text(api: &Api, sql: &str) -> String {
    text(api, sql).unwrap()
}

#[test]
fn the_status_lists_relinks_in_progress_with_an_eta() {
    let (api, media, _) = relinking(3);
    let status = data(&api.get("/admin/media-usage/status"));
    let relinks = status["relinks"].as_array().unwrap();
    assert_eq!(relinks.len(), 1, "{status}");
    assert_eq!(status["relinksMore"], false);
    assert_eq!((relinks[0]["mediaId"].as_str(), relinks[0]["entriesLeft"].as_i64()), (Some(media.as_str()), Some(3)));
    let eta = &relinks[0]["eta"];
    assert!(eta["ticks"].as_u64().unwrap() >= 1 && eta["seconds"].as_u64().unwrap() >= 120, "{eta}");
    tick_until_done(&api, &media);
    assert_eq!(data(&api.get("/admin/media-usage/status"))["relinks"], json!([]));
}

#[test]
fn an_idle_tick_costs_one_read_for_relinks() {
    let (api, _) = site();
    api.drain();
    let report = api.tick();
    assert_eq!(report.outcome, TickOutcome::Idle);
    assert_eq!(scalar(&api, "SELECT count(*) FROM _emdash_media_relinks"), 0);
}

/// At the default budgets a tick walks, loads and writes a batch: many entries a tick, each
/// entry costing its own write's statements and the rest shared, within the tick's budget.
#[test]
fn a_tick_relinks_a_batch_of_entries_within_its_budget() {
    let (api, media, _) = relinking(60);
    let mut per_tick = Vec::new();
    for _ in 0..20 {
        let report = api.tick();
        assert!(report.error.is_none(), "{:?}", report.error);
        assert!(report.statements <= api.config.tick_budget.max_statements, "{report:?}");
        per_tick.push((report.count("entriesRelinked"), report.statements, report.rows.written));
        if relink(&api, &media)["state"] == "done" {
            break;
        }
    }
    // The first tick writes a batch (9 of these entries at the default budget: each its live
    // revision and update, beside their load, guards and pruning); later ticks share their
    // statements with the projections of the entries written before.
    let most = per_tick.iter().map(|(n, _, _)| *n).max().unwrap_or(0);
    assert!(most >= 8, "{per_tick:?}");
    let done = relink(&api, &media);
    assert_eq!((done["state"].as_str(), done["entriesChanged"].as_i64()), (Some("done"), Some(60)), "{done}");
}

/// What a relink's write is guarded on, each alone changed just before the write (behind the
/// API, so nothing else about the entry, the relink or the item moves): the write loses, writes
/// nothing, and the entry is written once the relink has the entry as it is.
#[test]
fn each_precondition_of_a_relink_write_alone_stops_it() {
    let cases: [(&str, &str); 8] = [
        ("the entry's version", "UPDATE ec_posts SET version = version + 1"),
        ("the entry's last write", "UPDATE ec_posts SET updated_at = '2001-01-01T00:00:00.000Z'"),
        (
            "the entry's draft",
            "INSERT INTO revisions (id, collection, entry_id, data) VALUES ('another', 'posts', 'x', '{}');
          UPDATE ec_posts SET draft_revision_id = 'another'",
        ),
        (
            "the entry's live revision",
            "INSERT INTO revisions (id, collection, entry_id, data) VALUES ('another', 'posts', 'x', '{}');
          UPDATE ec_posts SET live_revision_id = 'another'",
        ),
        ("the relink's lease", "UPDATE _emdash_media_relinks SET lease_token = 'another holder'"),
        (
            "the lease's expiry",
            "UPDATE _emdash_media_relinks SET lease_expires_at = strftime('%Y-%m-%dT%H:%M:%fZ', 'now', '-1 second')",
        ),
        ("the relink's state", "UPDATE _emdash_media_relinks SET state = 'pending'"),
        ("the item's current key", "UPDATE media SET storage_key = 'uploads/v3/newer.png'"),
    ];
    for (what, change) in cases {
        let (api, _, ids) = relinking(1);
        let id = ids[0].clone();
        let before = stored(&api, &id, "body");
        let mut lane = Stepper::new(&api);
        lane.step();
        let hooked = Hooked::new(&api.db).before(WRITE, |db| {
            db.connection().execute_batch(change).unwrap();
        });
        lane.step_on(&hooked);
        hooked.done();
        drop(hooked);
        let body = stored(&api, &id, "body");
        assert_eq!(body, before, "{what}: nothing written");
        assert!(!body.contains("v2/new-photo.png"), "{what}");
        assert_eq!(scalar(&api, "SELECT entries_changed FROM _emdash_media_relinks"), 0, "{what}");
    }
}

/// A relink's writes keep an entry's revisions within `MEDIA_USAGE_MAX_REVISIONS_PER_ENTRY`, as a
/// draft save does: its live and draft revisions always kept, the oldest others pruned.
#[test]
fn a_relinked_entry_keeps_at_most_its_revisions() {
    let (api, media) = site();
    let id = entry(&api, "e0", OLD_KEY);
    let max = i64::from(api.config.background.max_revisions);
    for i in 0..max + 5 {
        let d = json!({"draft": true, "data": {"title": format!("Draft {i}"), "body": body(OLD_KEY)}});
        data(&api.put(&format!("/content/posts/{id}"), &d));
    }
    api.drain();
    let count = || scalar(&api, &format!("SELECT count(*) FROM revisions WHERE entry_id = '{id}'"));
    // The draft and the newest others (the entry has no live revision yet).
    assert_eq!(count(), max - 1, "the draft saves pruned to the most kept");
    replace_by_sql(&api, &media, NEW_KEY);
    data(&api.call("POST", &format!("/media/{media}/relink"), Some(ADMIN), None));
    tick_until_done(&api, &media);
    assert_eq!(count(), max, "the live revision and the draft's new one kept, one old one pruned");
    let kept = scalar(
        &api,
        &format!(
            "SELECT count(*) FROM ec_posts e JOIN revisions l ON l.id = e.live_revision_id
             JOIN revisions d ON d.id = e.draft_revision_id
             WHERE e.id = '{id}' AND l.data LIKE '%new-photo%' AND d.data LIKE '%new-photo%'"
        ),
    );
    assert_eq!(kept, 1, "the live and draft revisions are the relinked ones");
}
