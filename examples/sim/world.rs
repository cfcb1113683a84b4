//! The simulated world: one database and one object store shared by every operation in flight,
//! the simulated clock, and the executor and store each operation gets, which yield to the
//! scheduler before every statement and storage call and inject that operation's fault.

use std::cell::{Cell, RefCell};
use std::collections::{BTreeMap, BTreeSet};
use std::future::Future;
use std::pin::Pin;
use std::rc::Rc;
use std::task::{Context, Poll};

use futures::future::LocalBoxFuture;
use media_usage_worker::exec::fault::COMMIT_UNKNOWN_MESSAGE;
use media_usage_worker::exec::sqlite::SqliteExecutor;
use media_usage_worker::exec::{Error, Executor, Outcome, Statement};
use media_usage_worker::migrations;
use media_usage_worker::repo::lease;
use media_usage_worker::storage::memory::MemoryStorage;
use media_usage_worker::storage::{Listing, PartTag, Storage, StorageError, StoredObject};
use rusqlite::functions::FunctionFlags;
use serde::{Deserialize, Serialize};

use crate::model;

/// The simulated clock's start: 2030-01-01T00:00:00Z, in milliseconds since the epoch.
pub const START_MS: f64 = 1_893_456_000_000.0;

thread_local! {
    static NOW_MS: Cell<f64> = const { Cell::new(START_MS) };
}

/// The simulated time (milliseconds since the epoch): the database's clock, the store's, and
/// the handlers' elapsed-time clock (which stands still within a step).
pub fn now_ms() -> f64 {
    NOW_MS.with(Cell::get)
}

/// How an operation fails, and at which of its statements (or storage calls) (1-based).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum FaultKind {
    /// The isolate dies before the statement: it and everything after never happen.
    Crash,
    /// The statement (or its batch) commits, then the caller sees a transient error.
    CommitUnknown,
    /// The statement fails with a transient error without reaching the database.
    Transient,
    /// The storage call fails (R2 put, delete, list …).
    Storage,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct Fault {
    pub kind: FaultKind,
    pub at: u32,
}

/// What the world knows of one operation in flight.
#[derive(Debug)]
pub struct OpState {
    pub serial: u64,
    pub label: String,
    pub fault: Option<Fault>,
    statements: Cell<u32>,
    storage_calls: Cell<u32>,
    /// The fault happened (a request failed by it may answer 5xx).
    pub fault_fired: Cell<bool>,
    /// The isolate died: the scheduler drops the operation.
    pub dead: Cell<bool>,
    /// The media item an admin's forced permanent delete asked to remove, used or not.
    pub may_remove: Option<String>,
    /// The media item an admin's forced trash asked to move to the trash, used or not.
    pub may_trash: Option<String>,
    /// A permanent delete of a media item (it may remove one in the trash at any time).
    pub permanent_delete: bool,
}

impl OpState {
    pub fn new(
        serial: u64,
        label: String,
        fault: Option<Fault>,
        may_remove: Option<String>,
        may_trash: Option<String>,
    ) -> Rc<OpState> {
        let permanent_delete = label.contains("permanent=true") && label.contains("/media/");
        Rc::new(OpState {
            serial,
            label,
            fault,
            statements: Cell::new(0),
            storage_calls: Cell::new(0),
            fault_fired: Cell::new(false),
            dead: Cell::new(false),
            may_remove,
            may_trash,
            permanent_delete,
        })
    }

    /// The world's steps (statements and storage calls) this operation took.
    pub fn steps_taken(&self) -> u64 {
        u64::from(self.statements.get() + self.storage_calls.get())
    }
}

/// Everything the operations share.
pub struct World {
    pub db: SqliteExecutor,
    pub store: MemoryStorage,
    /// Invariants found broken, in the order found.
    pub violations: RefCell<Vec<String>>,
    /// Media items whose row an admin's forced permanent delete removed while in use.
    pub forced_gone: RefCell<BTreeSet<String>>,
    /// Statements and storage calls run so far.
    pub steps: Cell<u64>,
    pub faults_fired: Cell<u64>,
    /// Whether statements are watched for media rows removed (off while the world is inspected).
    watch: Cell<bool>,
    /// Every statement run, by operation (with `--verbose`).
    pub statement_log: RefCell<Option<Vec<String>>>,
}

impl World {
    /// A migrated in-memory database whose `'now'` is the simulated clock, and an empty store.
    pub fn new() -> Rc<World> {
        let db = SqliteExecutor::open_in_memory_unmigrated().expect("in-memory database");
        db.connection()
            .create_scalar_function("sim_unix", 0, FunctionFlags::SQLITE_UTF8, |_| Ok(now_ms() / 1000.0))
            .expect("the clock function");
        for m in migrations::ALL {
            db.connection().execute_batch(&on_sim_clock(m.sql)).expect("migration");
        }
        Rc::new(World {
            db,
            store: MemoryStorage::new(START_MS),
            violations: RefCell::new(Vec::new()),
            forced_gone: RefCell::new(BTreeSet::new()),
            steps: Cell::new(0),
            faults_fired: Cell::new(0),
            watch: Cell::new(true),
            statement_log: RefCell::new(None),
        })
    }

    /// Moves the clock on by `ms`.
    pub fn advance(&self, ms: f64) {
        NOW_MS.with(|c| c.set(c.get() + ms));
        self.store.now_ms.set(now_ms());
    }

    pub fn violation(&self, what: String) {
        self.violations.borrow_mut().push(what);
    }

    /// Every media row: id → storage key.
    pub fn media_rows(&self) -> BTreeMap<String, String> {
        model::rows(&self.db, "SELECT id, storage_key FROM media")
            .into_iter()
            .map(|r| (r[0].clone(), r[1].clone()))
            .collect()
    }

    /// The media items in the trash for less than the trash period (`MEDIA_TRASH_DAYS`, one
    /// day here): only a permanent delete may remove them.
    fn recently_trashed(&self) -> BTreeSet<String> {
        model::rows(
            &self.db,
            "SELECT id FROM media WHERE deleted_at > strftime('%Y-%m-%dT%H:%M:%fZ', sim_unix(), 'unixepoch', '-1 days')",
        )
        .into_iter()
        .map(|r| r[0].clone())
        .collect()
    }

    /// The media rows `before` had that are gone: each must have been unused (by the model)
    /// unless an admin's forced permanent delete removed it, and only a permanent delete removes
    /// an item trashed less than the trash period ago.
    fn check_removed_rows(&self, before: &BTreeMap<String, String>, recent: &BTreeSet<String>, op: &OpState) {
        let after = self.media_rows();
        for (id, key) in before.iter().filter(|(id, _)| !after.contains_key(*id)) {
            if recent.contains(id) && !op.permanent_delete {
                self.violation(format!(
                    "media {id} ({key}) purged by op #{} `{}` before its trash period ended",
                    op.serial, op.label
                ));
            }
            let users = model::users_of(&self.db, id, key);
            if users.is_empty() {
                continue;
            }
            if op.may_remove.as_deref() == Some(id.as_str()) {
                self.forced_gone.borrow_mut().insert(key.clone());
            } else {
                self.violation(format!(
                    "media {id} ({key}) removed by op #{} `{}` while used by {users:?}",
                    op.serial, op.label
                ));
            }
        }
    }

    /// Every version row: storage key → media id.
    pub fn version_rows(&self) -> BTreeMap<String, String> {
        model::rows(&self.db, "SELECT storage_key, media_id FROM media_versions")
            .into_iter()
            .map(|r| (r[0].clone(), r[1].clone()))
            .collect()
    }

    /// The version rows `before` had that are gone: no entry may link one (a page would show a
    /// broken file) unless an admin's forced permanent delete removed its item. A version made
    /// current again (a revert) is not gone: its key is its item's.
    fn check_removed_versions(&self, before: &BTreeMap<String, String>, op: &OpState) {
        let after = self.version_rows();
        let current: BTreeSet<String> = self.media_rows().into_values().collect();
        for (key, id) in before.iter().filter(|(key, _)| !after.contains_key(*key) && !current.contains(*key)) {
            let linking = model::linking(&self.db, key);
            if linking.is_empty() {
                continue;
            }
            if op.may_remove.as_deref() == Some(id.as_str()) {
                self.forced_gone.borrow_mut().insert(key.clone());
            } else {
                self.violation(format!(
                    "version {key} of media {id} removed by op #{} `{}` while linked by {linking:?}",
                    op.serial, op.label
                ));
            }
        }
    }

    /// The media items in the trash.
    pub fn trashed(&self) -> BTreeSet<String> {
        model::rows(&self.db, "SELECT id FROM media WHERE deleted_at IS NOT NULL")
            .into_iter()
            .map(|r| r[0].clone())
            .collect()
    }

    /// The items moved to the trash since `before` were unused (by the model) unless an admin's
    /// forced trash moved it.
    fn check_trashed(&self, before: &BTreeSet<String>, op: &OpState) {
        let rows = self.media_rows();
        for id in self.trashed().difference(before) {
            let Some(key) = rows.get(id) else { continue };
            let users = model::users_of(&self.db, id, key);
            if !users.is_empty() && op.may_trash.as_deref() != Some(id.as_str()) {
                self.violation(format!(
                    "media {id} ({key}) moved to the trash by op #{} `{}` while used by {users:?}",
                    op.serial, op.label
                ));
            }
        }
    }

    /// No lease runs longer than its queue's lease from now: a holder that died frees its rows
    /// within that time.
    pub fn check_leases(&self) {
        for queue in [lease::WORK, lease::REPAIR, lease::DELETION, lease::FIELD_DELETION] {
            let sql = format!(
                "SELECT count(*) FROM {} WHERE state = 'leased' AND lease_expires_at > \
                 strftime('%Y-%m-%dT%H:%M:%fZ', sim_unix(), 'unixepoch', '+{} seconds')",
                queue.table, queue.lease_seconds
            );
            let n = &model::rows(&self.db, &sql)[0][0];
            if n != "0" {
                self.violation(format!("{n} leases of {} run past their {} s", queue.table, queue.lease_seconds));
            }
        }
    }

    /// An object is deleted only once no media row or version row names it.
    fn check_removed_objects(&self, keys: &[String], op: &OpState) {
        let mut rows = self.media_rows();
        rows.extend(self.version_rows().into_iter().map(|(key, id)| (format!("{id} (a version)"), key)));
        for key in keys {
            if let Some((id, _)) = rows.iter().find(|(_, k)| *k == key) {
                if self.store.bytes(key).is_some() {
                    self.violation(format!(
                        "object {key} deleted by op #{} `{}` while media row {id} names it",
                        op.serial, op.label
                    ));
                }
            }
        }
    }
}

/// `sql` on the simulated clock: every `'now'` becomes the clock function's time.
fn on_sim_clock(sql: &str) -> String {
    sql.replace("'now'", "sim_unix(), 'unixepoch'")
}

/// Whether a statement may move media items to the trash.
fn trashes_media(sql: &str) -> bool {
    sql.contains("UPDATE media SET deleted_at")
}

/// Whether a statement may remove media rows (then the rows before and after are compared).
fn removes_media(sql: &str) -> bool {
    sql.contains("DELETE FROM media\n") || sql.contains("DELETE FROM media ") || sql.ends_with("DELETE FROM media")
}

/// Returns `Pending` once: a point where the scheduler may run another operation.
struct Yield(bool);

impl Future for Yield {
    type Output = ();
    fn poll(mut self: Pin<&mut Self>, _: &mut Context<'_>) -> Poll<()> {
        if self.0 {
            Poll::Ready(())
        } else {
            self.0 = true;
            Poll::Pending
        }
    }
}

fn yield_now() -> Yield {
    Yield(false)
}

/// Dies: never returns (the scheduler drops the operation).
async fn die(op: &OpState) -> ! {
    op.dead.set(true);
    futures::future::pending::<()>().await;
    unreachable!("a dead operation is never polled again")
}

/// One operation's database: yields before each statement and injects its fault.
#[derive(Clone)]
pub struct OpExec {
    pub world: Rc<World>,
    pub op: Rc<OpState>,
}

impl OpExec {
    /// The fault that hits statements `first..=last`, if any (counted once).
    fn fate(&self, first: u32, last: u32) -> Option<FaultKind> {
        let f = self.op.fault.filter(|f| f.kind != FaultKind::Storage && (first..=last).contains(&f.at))?;
        self.op.fault_fired.set(true);
        self.world.faults_fired.set(self.world.faults_fired.get() + 1);
        Some(f.kind)
    }

    async fn apply(&self, stmts: Vec<Statement>, single: bool) -> Result<Vec<Outcome>, Error> {
        yield_now().await;
        let n = stmts.len() as u32;
        let first = self.op.statements.get() + 1;
        self.op.statements.set(first + n - 1);
        let fate = self.fate(first, first + n - 1);
        match fate {
            Some(FaultKind::Crash) => die(&self.op).await,
            Some(FaultKind::Transient) => return Err(Error::Transient("injected before the statement ran".into())),
            _ => {}
        }
        self.world.steps.set(self.world.steps.get() + 1);
        let stmts: Vec<Statement> = stmts
            .into_iter()
            .map(|s| s.params().iter().cloned().fold(Statement::new(on_sim_clock(s.sql())), Statement::bind))
            .collect();
        if let Some(log) = self.world.statement_log.borrow_mut().as_mut() {
            for (i, s) in stmts.iter().enumerate() {
                let sql: String =
                    s.sql().lines().filter(|l| !l.trim_start().starts_with("--")).collect::<Vec<_>>().join(" ");
                let sql: String = sql.split_whitespace().collect::<Vec<_>>().join(" ").chars().take(160).collect();
                log.push(format!(
                    "  #{} stmt {}{}: {sql}",
                    self.op.serial,
                    first + i as u32,
                    fate.map(|f| format!(" [{f:?}]")).unwrap_or_default()
                ));
            }
        }
        let watched = self.world.watch.get() && stmts.iter().any(|s| removes_media(s.sql()));
        let before = watched.then(|| (self.world.media_rows(), self.world.recently_trashed()));
        let versions_watched =
            self.world.watch.get() && stmts.iter().any(|s| s.sql().contains("DELETE FROM media_versions"));
        let versions_before = versions_watched.then(|| self.world.version_rows());
        let trash_watched = self.world.watch.get() && stmts.iter().any(|s| trashes_media(s.sql()));
        let trashed_before = trash_watched.then(|| self.world.trashed());
        let result = if single {
            let stmt = stmts.into_iter().next().expect("one statement");
            self.world.db.run(stmt).await.map(|o| vec![o])
        } else {
            self.world.db.batch(stmts).await
        };
        if let (Some((before, recent)), Ok(_)) = (&before, &result) {
            self.world.check_removed_rows(before, recent, &self.op);
        }
        if let (Some(before), Ok(_)) = (&versions_before, &result) {
            self.world.check_removed_versions(before, &self.op);
        }
        if let (Some(before), Ok(_)) = (&trashed_before, &result) {
            self.world.check_trashed(before, &self.op);
        }
        match fate {
            Some(FaultKind::CommitUnknown) => result.and_then(|_| Err(Error::Transient(COMMIT_UNKNOWN_MESSAGE.into()))),
            _ => result,
        }
    }
}

impl Executor for OpExec {
    async fn run(&self, stmt: Statement) -> Result<Outcome, Error> {
        Ok(self.apply(vec![stmt], true).await?.remove(0))
    }

    async fn batch(&self, stmts: Vec<Statement>) -> Result<Vec<Outcome>, Error> {
        if stmts.is_empty() {
            return Ok(Vec::new());
        }
        self.apply(stmts, false).await
    }
}

/// One operation's object store: yields before each call and injects its storage fault.
pub struct OpStore {
    pub world: Rc<World>,
    pub op: Rc<OpState>,
}

impl OpStore {
    /// Counts a call; an error when the operation's storage fault is this call.
    async fn call(&self) -> Result<(), StorageError> {
        yield_now().await;
        self.world.steps.set(self.world.steps.get() + 1);
        let n = self.op.storage_calls.get() + 1;
        self.op.storage_calls.set(n);
        match self.op.fault {
            Some(Fault { kind: FaultKind::Storage, at }) if at == n => {
                self.op.fault_fired.set(true);
                self.world.faults_fired.set(self.world.faults_fired.get() + 1);
                Err(StorageError("injected storage failure".into()))
            }
            _ => Ok(()),
        }
    }
}

impl Storage for OpStore {
    fn put<'a>(
        &'a self,
        key: &'a str,
        bytes: Vec<u8>,
        content_type: &'a str,
        sha256: [u8; 32],
    ) -> LocalBoxFuture<'a, Result<(), StorageError>> {
        Box::pin(async move {
            self.call().await?;
            self.world.store.put(key, bytes, content_type, sha256).await
        })
    }

    fn begin_multipart<'a>(
        &'a self,
        key: &'a str,
        content_type: &'a str,
    ) -> LocalBoxFuture<'a, Result<String, StorageError>> {
        Box::pin(async move {
            self.call().await?;
            self.world.store.begin_multipart(key, content_type).await
        })
    }

    fn put_part<'a>(
        &'a self,
        key: &'a str,
        upload_id: &'a str,
        number: u16,
        bytes: Vec<u8>,
    ) -> LocalBoxFuture<'a, Result<PartTag, StorageError>> {
        Box::pin(async move {
            self.call().await?;
            self.world.store.put_part(key, upload_id, number, bytes).await
        })
    }

    fn complete_multipart<'a>(
        &'a self,
        key: &'a str,
        upload_id: &'a str,
        parts: Vec<PartTag>,
    ) -> LocalBoxFuture<'a, Result<(), StorageError>> {
        Box::pin(async move {
            self.call().await?;
            self.world.store.complete_multipart(key, upload_id, parts).await
        })
    }

    fn abort_multipart<'a>(&'a self, key: &'a str, upload_id: &'a str) -> LocalBoxFuture<'a, Result<(), StorageError>> {
        Box::pin(async move {
            self.call().await?;
            self.world.store.abort_multipart(key, upload_id).await
        })
    }

    fn head<'a>(&'a self, key: &'a str) -> LocalBoxFuture<'a, Result<Option<StoredObject>, StorageError>> {
        Box::pin(async move {
            self.call().await?;
            self.world.store.head(key).await
        })
    }

    fn delete<'a>(&'a self, keys: &'a [String]) -> LocalBoxFuture<'a, Result<(), StorageError>> {
        Box::pin(async move {
            self.call().await?;
            self.world.check_removed_objects(keys, &self.op);
            self.world.store.delete(keys).await
        })
    }

    fn list<'a>(&'a self, cursor: Option<&'a str>, limit: u32) -> LocalBoxFuture<'a, Result<Listing, StorageError>> {
        Box::pin(async move {
            self.call().await?;
            self.world.store.list(cursor, limit).await
        })
    }

    fn now_ms(&self) -> f64 {
        now_ms()
    }
}

impl World {
    /// Runs `f` with the removal watch off (the world's own inspection statements).
    pub fn unwatched<T>(&self, f: impl FnOnce() -> T) -> T {
        self.watch.set(false);
        let out = f();
        self.watch.set(true);
        out
    }
}
