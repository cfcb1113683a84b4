//! The media lifecycle's outcomes, each reached through `lifecycle::media` itself: the safe and
//! forced trash, the permanent delete (and the objects it forgets), the bulk trash and the
//! restore. What each outcome answers over HTTP is `api::media`'s unit tests; the requests end to
//! end are `safe_delete`, `permanent_delete` and `media_*`.

use media_usage_worker::exec::sqlite::SqliteExecutor;
use media_usage_worker::exec::{Error, Executor, Outcome, Statement};
use media_usage_worker::lifecycle::media::{
    self, BulkOutcome, DeleteOutcome, EntryRef, Forget, KeptObject, Removal, RestoreOutcome,
};
use media_usage_worker::model::state::CoverageStatus;
use media_usage_worker::repo::media::{self as repo, NewMedia, Purged};
use media_usage_worker::storage::memory::MemoryStorage;
use media_usage_worker::storage::{Storage, MARKER};
use serde_json::json;

use crate::support::{data, now, rules, Api};

fn setup() -> Api {
    let api = Api::new();
    data(&api.post(
        "/schema/collections",
        &json!({"slug": "posts", "label": "Posts", "fields": [{"slug": "hero", "type": "image"}]}),
    ));
    api
}

/// A media row named `key`: uploaded (its content hash set) or registered by JSON, by `author`.
fn media_row(api: &Api, key: &str, uploaded: bool, author: Option<&str>) -> String {
    let new = NewMedia {
        filename: key.to_owned(),
        mime_type: "image/png".to_owned(),
        size: None,
        width: None,
        height: None,
        alt: None,
        caption: None,
        storage_key: key.to_owned(),
        content_hash: uploaded.then(|| format!("{:0>64}", key.len())),
        author_id: author.map(str::to_owned),
    };
    now(repo::insert(&api.db, new)).unwrap().id
}

fn entry(api: &Api, slug: &str, hero: &str) -> String {
    let r = api.post("/content/posts", &json!({"slug": slug, "status": "published", "data": {"hero": hero}}));
    data(&r)["item"]["id"].as_str().unwrap().to_owned()
}

fn delete_on<E: Executor>(exec: &E, store: Option<&dyn Storage>, id: &str, removal: Removal<'_>) -> DeleteOutcome {
    now(media::delete(exec, store, &rules(), id, removal)).unwrap()
}

fn delete(api: &Api, id: &str, removal: Removal<'_>) -> DeleteOutcome {
    delete_on(&api.db, None, id, removal)
}

const SAFE: Removal<'static> = Removal::Trash { force: false, only_own: None };
const FORCED: Removal<'static> = Removal::Trash { force: true, only_own: None };
const PERMANENT: Removal<'static> = Removal::Permanent { force: false };
const PERMANENT_FORCED: Removal<'static> = Removal::Permanent { force: true };

fn trashed(api: &Api, id: &str) -> bool {
    now(repo::get(&api.db, id)).unwrap().is_some_and(|m| m.deleted_at.is_some())
}

#[test]
fn a_safe_trash_moves_an_unused_item_and_answers_a_retry_as_the_first_try() {
    let api = setup();
    let m = media_row(&api, "a.png", false, None);
    assert!(matches!(delete(&api, &m, SAFE), DeleteOutcome::Trashed));
    assert!(trashed(&api, &m));
    assert!(matches!(delete(&api, &m, SAFE), DeleteOutcome::Trashed), "in the trash already");
    for removal in [SAFE, FORCED, PERMANENT, PERMANENT_FORCED] {
        assert!(matches!(delete(&api, "nope", removal), DeleteOutcome::NotFound), "{removal:?}");
    }
}

#[test]
fn the_rule_refuses_an_item_in_use_naming_the_entries_and_an_unproven_item_naming_the_coverage() {
    let api = setup();
    let used = media_row(&api, "used.png", false, None);
    let a = entry(&api, "a", &used);
    for removal in [SAFE, PERMANENT] {
        match delete(&api, &used, removal) {
            DeleteOutcome::InUse { count, entries } => {
                assert_eq!((count, entries.len()), (1, 1), "{removal:?}");
                assert_eq!(
                    (entries[0].collection_slug.as_str(), entries[0].content_id.as_str()),
                    ("posts", a.as_str())
                );
            }
            other => panic!("{removal:?}: {other:?}"),
        }
    }
    // A write not yet projected: coverage is stale until its work row is processed.
    let unused = media_row(&api, "unused.png", false, None);
    let b = entry(&api, "b", "other");
    api.db.connection().execute_batch(&format!("UPDATE ec_posts SET hero = '{unused}' WHERE id = '{b}'")).unwrap();
    for removal in [SAFE, PERMANENT] {
        match delete(&api, &unused, removal) {
            DeleteOutcome::CoverageIncomplete { status } => assert_eq!(status, CoverageStatus::Stale, "{removal:?}"),
            other => panic!("{removal:?}: {other:?}"),
        }
    }
    assert!(now(repo::get(&api.db, &used)).unwrap().is_some_and(|m| m.deleted_at.is_none()), "nothing changed");
    assert!(now(repo::get(&api.db, &unused)).unwrap().is_some_and(|m| m.deleted_at.is_none()), "nothing changed");
    // Forced, either removal takes an item in use.
    assert!(matches!(delete(&api, &used, FORCED), DeleteOutcome::Trashed));
    assert!(trashed(&api, &used));
    assert!(matches!(delete(&api, &used, PERMANENT_FORCED), DeleteOutcome::Deleted { kept: None }));
    assert!(now(repo::get(&api.db, &used)).unwrap().is_none());
}

#[test]
fn below_editor_only_the_callers_own_items_go_to_the_trash() {
    let api = setup();
    let mine = media_row(&api, "mine.png", false, Some("me"));
    let theirs = media_row(&api, "theirs.png", false, Some("them"));
    let nobodys = media_row(&api, "nobodys.png", false, None);
    for force in [false, true] {
        let removal = Removal::Trash { force, only_own: Some("me") };
        for id in [&theirs, &nobodys] {
            assert!(matches!(delete(&api, id, removal), DeleteOutcome::NotOwn), "force {force}");
            assert!(!trashed(&api, id));
        }
    }
    assert!(matches!(
        delete(&api, &mine, Removal::Trash { force: false, only_own: Some("me") }),
        DeleteOutcome::Trashed
    ));
    assert!(trashed(&api, &mine));
}

/// D1 as a delete sees it while other requests change the database around one of its
/// statements: `before` runs right before, and `after` right after, each statement (or batch)
/// whose SQL contains `marker`; `hits` counts them.
struct Around<'a> {
    db: &'a SqliteExecutor,
    marker: &'a str,
    before: &'a str,
    after: &'a str,
    hits: std::cell::Cell<u32>,
}

impl<'a> Around<'a> {
    fn new(db: &'a SqliteExecutor, marker: &'a str, before: &'a str, after: &'a str) -> Self {
        Around { db, marker, before, after, hits: std::cell::Cell::new(0) }
    }

    fn meanwhile(&self, hit: bool, sql: &str) {
        if hit {
            self.db.connection().execute_batch(sql).unwrap();
        }
    }
}

impl Executor for Around<'_> {
    async fn run(&self, stmt: Statement) -> Result<Outcome, Error> {
        let hit = stmt.sql().contains(self.marker);
        self.hits.set(self.hits.get() + u32::from(hit));
        self.meanwhile(hit, self.before);
        let out = self.db.run(stmt).await;
        self.meanwhile(hit, self.after);
        out
    }

    async fn batch(&self, stmts: Vec<Statement>) -> Result<Vec<Outcome>, Error> {
        let hit = stmts.iter().any(|s| s.sql().contains(self.marker));
        self.hits.set(self.hits.get() + u32::from(hit));
        self.meanwhile(hit, self.before);
        let out = self.db.batch(stmts).await;
        self.meanwhile(hit, self.after);
        out
    }
}

const TRASH_MARKER: &str = "UPDATE media SET deleted_at";
const DELETE_MARKER: &str = "DELETE FROM media\nWHERE id = ?1\n  AND";

#[test]
fn an_item_trashed_and_restored_around_the_move_is_changed() {
    let api = setup();
    let m = media_row(&api, "raced.png", false, None);
    let before = format!("UPDATE media SET deleted_at = '2001-01-01T00:00:00.000Z' WHERE id = '{m}'");
    let after = format!("UPDATE media SET deleted_at = NULL WHERE id = '{m}'");
    let exec = Around::new(&api.db, TRASH_MARKER, &before, &after);
    assert!(matches!(delete_on(&exec, None, &m, SAFE), DeleteOutcome::Changed));
    assert!(!trashed(&api, &m));
}

#[test]
fn a_refusal_whose_reason_is_gone_each_time_is_tried_twice_then_answered_as_unproven() {
    // Coverage is incomplete at each try of the rule and complete again at each re-check: the
    // reason cannot be named, and after two tries the delete says coverage did not prove it.
    let api = setup();
    let m = media_row(&api, "flaky.png", false, None);
    let before = "UPDATE _emdash_media_usage_index_status SET status = 'running'";
    let after = "UPDATE _emdash_media_usage_index_status SET status = 'complete'";
    for (marker, removal) in [(TRASH_MARKER, SAFE), (DELETE_MARKER, PERMANENT)] {
        let exec = Around::new(&api.db, marker, before, after);
        match delete_on(&exec, None, &m, removal) {
            DeleteOutcome::CoverageIncomplete { status } => assert_eq!(status, CoverageStatus::Complete, "{removal:?}"),
            other => panic!("{removal:?}: {other:?}"),
        }
        assert_eq!(exec.hits.get(), 2, "{removal:?}");
        assert!(now(repo::get(&api.db, &m)).unwrap().is_some_and(|m| m.deleted_at.is_none()));
    }
    // Once the reason is gone for good, the next try takes it.
    assert!(matches!(delete(&api, &m, PERMANENT), DeleteOutcome::Deleted { kept: None }));
}

fn store_with(keys: &[&str]) -> MemoryStorage {
    let store = MemoryStorage::new(0.0);
    for key in keys {
        store.put_foreign(key, b"x".to_vec(), "image/png", &[MARKER]);
    }
    store
}

#[test]
fn a_permanent_delete_forgets_the_object_of_an_upload_only_and_reports_one_it_could_not() {
    let api = setup();
    let uploaded = media_row(&api, "up.png", true, None);
    let registered = media_row(&api, "json.png", false, None);
    let store = store_with(&["up.png", "json.png"]);
    assert!(matches!(delete_on(&api.db, Some(&store), &uploaded, PERMANENT), DeleteOutcome::Deleted { kept: None }));
    assert!(matches!(delete_on(&api.db, Some(&store), &registered, PERMANENT), DeleteOutcome::Deleted { kept: None }));
    assert_eq!(store.keys(), ["json.png"], "a JSON row's object is not ours to delete");
    assert!(matches!(delete_on(&api.db, Some(&store), &uploaded, PERMANENT), DeleteOutcome::NotFound), "a retry");
    // The object's delete fails: the row is gone all the same, and the object named.
    let again = media_row(&api, "again.png", true, None);
    let store = store_with(&["again.png"]);
    store.fail_deletes.set(true);
    match delete_on(&api.db, Some(&store), &again, PERMANENT_FORCED) {
        DeleteOutcome::Deleted { kept: Some(KeptObject { key, .. }) } => assert_eq!(key, "again.png"),
        other => panic!("{other:?}"),
    }
    assert!(now(repo::get(&api.db, &again)).unwrap().is_none());
    assert_eq!(store.keys(), ["again.png"]);
}

#[test]
fn forgetting_objects_deletes_those_of_uploads_in_one_operation_or_none() {
    let purged = |key: &str, uploaded: bool| Purged {
        id: key.to_owned(),
        storage_key: key.to_owned(),
        content_hash: uploaded.then(|| "ab".repeat(32)),
    };
    let rows = [purged("u1", true), purged("j1", false), purged("u2", true)];
    assert!(matches!(now(media::forget_objects(None, &rows)), Forget::NoOperation), "no store");
    let store = store_with(&["u1", "j1", "u2"]);
    let json_only = [purged("j1", false)];
    assert!(matches!(now(media::forget_objects(Some(&store), &json_only)), Forget::NoOperation));
    assert!(matches!(now(media::forget_objects(Some(&store), &[])), Forget::NoOperation));
    store.fail_deletes.set(true);
    assert!(matches!(now(media::forget_objects(Some(&store), &rows)), Forget::Failed { objects: 2, .. }));
    assert_eq!(store.keys().len(), 3);
    store.fail_deletes.set(false);
    assert!(matches!(now(media::forget_objects(Some(&store), &rows)), Forget::Deleted { objects: 2 }));
    assert_eq!(store.keys(), ["j1"]);
}

#[test]
fn a_bulk_trash_says_what_became_of_each_id() {
    let api = setup();
    let unused = media_row(&api, "unused.png", false, None);
    let used = media_row(&api, "used.png", false, None);
    let gone = media_row(&api, "gone.png", false, None);
    let a = entry(&api, "a", &used);
    assert!(matches!(delete(&api, &gone, SAFE), DeleteOutcome::Trashed));
    let ids = [unused.clone(), used.clone(), gone.clone(), "nope".to_owned()];
    let outcomes = now(media::bulk_trash(&api.db, rules().id(), &ids, 5)).unwrap();
    let expected = [
        (unused.clone(), BulkOutcome::Trashed),
        (
            used.clone(),
            BulkOutcome::InUse {
                entries: vec![EntryRef { collection: "posts".into(), content_id: a, slug: Some("a".into()) }],
            },
        ),
        (gone, BulkOutcome::Trashed),
        ("nope".to_owned(), BulkOutcome::NotFound),
    ];
    assert_eq!(outcomes, expected);
    // Coverage incomplete: an item nothing is known to use stays, unproven.
    let other = media_row(&api, "other.png", false, None);
    let b = entry(&api, "b", "x");
    api.db.connection().execute_batch(&format!("UPDATE ec_posts SET hero = '{other}' WHERE id = '{b}'")).unwrap();
    let outcomes = now(media::bulk_trash(&api.db, rules().id(), std::slice::from_ref(&other), 5)).unwrap();
    assert_eq!(outcomes, [(other, BulkOutcome::CoverageIncomplete)]);
}

#[test]
fn a_restore_brings_an_item_back_and_leaves_one_outside_the_trash_as_it_is() {
    let api = setup();
    let m = media_row(&api, "r.png", false, None);
    assert!(matches!(now(media::restore(&api.db, &m)).unwrap(), RestoreOutcome::NotInTrash(x) if x.id == m));
    assert!(matches!(delete(&api, &m, SAFE), DeleteOutcome::Trashed));
    match now(media::restore(&api.db, &m)).unwrap() {
        RestoreOutcome::Restored(x) => assert_eq!((x.id, x.deleted_at), (m.clone(), None)),
        other => panic!("{other:?}"),
    }
    assert!(!trashed(&api, &m));
    assert_eq!(now(media::restore(&api.db, "nope")).unwrap(), RestoreOutcome::NotFound);
}
