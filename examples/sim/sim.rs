//! The scheduler: a trace of events (spawn an operation with its fault, step one operation by
//! one statement, let time pass, quiesce) run against the world, with the invariants checked as
//! it goes and at every quiescence.

use std::collections::{BTreeMap, BTreeSet};
use std::future::Future;
use std::pin::Pin;
use std::rc::Rc;
use std::task::{Context, Poll};

use media_usage_worker::api::{self, Config, Request, Response};
use media_usage_worker::clock::FnClock;
use media_usage_worker::exec::meter::Metered;
use media_usage_worker::ids;
use media_usage_worker::model::state::TickOutcome;
use media_usage_worker::settings::Settings;
use media_usage_worker::tick::budget::Budget;
use media_usage_worker::tick::lanes::BackgroundPolicy;
use media_usage_worker::tick::report::TickReport;
use media_usage_worker::tick::{self, Continuation, TickTime};
use serde::{Deserialize, Serialize};
use serde_json::{json, Value as Json};

use crate::model::{self, Entry};
use crate::ops::{self, Known, Op, Who};
use crate::rng::Rng;
use crate::world::{self, Fault, FaultKind, OpExec, OpState, OpStore, World};

/// The admin secret of the simulated deployment.
pub const ADMIN: &str = "sim-admin-token-0123456789abcdef0123";
/// Its media origin (`MEDIA_PUBLIC_URL`).
pub const MEDIA_ORIGIN: &str = "https://cdn.example/media/";
/// Operations in flight at most.
const MAX_IN_FLIGHT: usize = 6;
/// Operations between two quiescences.
pub const QUIESCE_EVERY: u64 = 2_000;

/// One thing that happens.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub enum Event {
    /// A client (or the platform) starts `op`; `fault` hits it; after a failure the client sends
    /// it again when `retry`.
    /// `id` names it for the steps (its retry is `id` + 1; ids are even).
    Spawn { id: u64, op: Op, fault: Option<Fault>, retry: bool },
    /// The operation `op` runs one more statement, if it is in flight (a shrunk trace may have
    /// lost it).
    Step { op: u64 },
    /// Time passes (seconds while requests are in flight, up to days between them).
    Time { ms: u64 },
    /// Every operation in flight finishes, ticks run the background work to its end, and the
    /// index is compared with the model.
    Quiesce,
}

enum Done {
    Http(Response),
    Tick(TickReport),
}

struct InFlight {
    /// The id its steps name.
    key: u64,
    state: Rc<OpState>,
    op: Op,
    /// The request sent, kept for a retry.
    request: Option<Request>,
    retry: bool,
    /// The world's steps when the operation started: it ran alone when its own steps are all
    /// that happened since.
    started_at: u64,
    future: Pin<Box<dyn Future<Output = Done>>>,
}

/// The deployment every operation sees.
pub struct Shared {
    pub config: Config,
    pub budget: Budget,
    pub policy: BackgroundPolicy,
}

/// Counters of a run.
#[derive(Debug, Default, Clone)]
pub struct Stats {
    pub ops: u64,
    pub retries: u64,
    pub interleavings: u64,
    pub quiescences: u64,
    pub ticks: u64,
    /// Jobs that published an entry's live columns alone (`splitJobs`), leaving its draft overlay
    /// to the next job.
    pub split_jobs: u64,
    pub answers_5xx: u64,
}

pub struct Sim {
    pub world: Rc<World>,
    shared: Rc<Shared>,
    known: Known,
    in_flight: Vec<InFlight>,
    serial: u64,
    pub stats: Stats,
    /// Rows written by ticks per simulated UTC day.
    daily: BTreeMap<i64, u64>,
    /// The last operation stepped (a step of another one is an interleaving).
    last_stepped: u64,
    /// The world's steps when the leases were last checked.
    leases_checked_at: u64,
    /// What happened, for the report of a failure.
    pub log: Vec<String>,
    verbose: bool,
}

fn settings() -> Settings {
    let vars = [
        ("EMDASH_ADMIN_TOKEN", ADMIN),
        ("SITE_URL", "https://site.example"),
        ("MEDIA_PUBLIC_URL", MEDIA_ORIGIN),
        ("MEDIA_TRASH_DAYS", "1"),
    ];
    let (settings, warnings) =
        Settings::parse(|name| vars.iter().find(|(n, _)| *n == name).map(|(_, v)| (*v).to_owned()));
    assert!(warnings.is_empty(), "{warnings:?}");
    settings
}

/// A request as the edge hands it over.
fn request(who: Who, method: &str, path_and_query: &str, body: Option<&Json>, known: &Known) -> Request {
    let (path, query) = path_and_query.split_once('?').unwrap_or((path_and_query, ""));
    let token = match who {
        Who::Admin => ADMIN.to_owned(),
        Who::Editor => known.editor.clone(),
        Who::Author(i) => known.authors[usize::from(i) % 2].clone(),
    };
    Request {
        method: method.to_owned(),
        path: format!("{}{path}", api::BASE_PATH),
        query: query
            .split('&')
            .filter(|kv| !kv.is_empty())
            .map(|kv| {
                let (k, v) = kv.split_once('=').unwrap_or((kv, ""));
                (k.to_owned(), v.to_owned())
            })
            .collect(),
        authorization: Some(format!("Bearer {token}")),
        body: body.map(|b| b.to_string().into_bytes()).unwrap_or_default(),
        content_type: body.map(|_| "application/json".to_owned()),
        ..Default::default()
    }
}

fn body(r: &Response) -> Json {
    serde_json::from_str(&r.body).unwrap_or(Json::Null)
}

impl Sim {
    /// A fresh world seeded with `seed`: collections `posts` and `pages`, an editor and two
    /// authors.
    pub fn new(seed: u64, verbose: bool) -> Sim {
        ids::seeded::seed_this_thread(Some(seed ^ 0x05EE_D1D5));
        let world = World::new();
        let settings = settings();
        let mut config = settings.config(world::now_ms);
        // Requests too: a write leaves its projection to the ticks unless it fits the budget.
        config.background = config.background.clone().with_cpu_ms(cpu_ms(seed));
        let shared = Rc::new(Shared {
            config,
            budget: settings.budget(),
            policy: settings.background().with_cpu_ms(cpu_ms(seed)),
        });
        let mut sim = Sim {
            world,
            shared,
            known: Known::default(),
            in_flight: Vec::new(),
            serial: 0,
            stats: Stats::default(),
            daily: BTreeMap::new(),
            last_stepped: 0,
            leases_checked_at: 0,
            log: Vec::new(),
            verbose,
        };
        if verbose {
            *sim.world.statement_log.borrow_mut() = Some(Vec::new());
        }
        for slug in ["posts", "pages"] {
            let r = sim.call(Who::Admin, "POST", "/schema/collections", Some(&ops::collection_body(slug)));
            assert_eq!(r.status, 201, "{}", r.body);
        }
        let mint = |sim: &mut Sim, role: &str| {
            let scopes = ["content:read", "content:write", "media:read", "media:write"];
            let r = sim.call(
                Who::Admin,
                "POST",
                "/admin/tokens",
                Some(&json!({"name": role, "role": role, "scopes": scopes})),
            );
            assert_eq!(r.status, 201, "{}", r.body);
            body(&r)["data"]["token"].as_str().expect("a secret").to_owned()
        };
        sim.known.editor = mint(&mut sim, "editor");
        sim.known.authors = [mint(&mut sim, "author"), mint(&mut sim, "author")];
        sim
    }

    /// Sends a request with no fault and runs it alone to its end.
    fn call(&mut self, who: Who, method: &str, path: &str, body: Option<&Json>) -> Response {
        let req = request(who, method, path, body, &self.known);
        let label = format!("{method} {path}");
        match self.run_alone(Op::Repair, label, Some(req)) {
            Done::Http(r) => r,
            Done::Tick(_) => unreachable!("a request answers"),
        }
    }

    fn run_alone(&mut self, op: Op, label: String, req: Option<Request>) -> Done {
        let flight = self.start(op, label, req, None, false, None);
        self.in_flight.push(flight);
        let slot = self.in_flight.len() - 1;
        loop {
            let waker = futures::task::noop_waker();
            let mut cx = Context::from_waker(&waker);
            if let Poll::Ready(done) = self.in_flight[slot].future.as_mut().poll(&mut cx) {
                self.in_flight.remove(slot);
                return done;
            }
        }
    }

    /// The operation's future, over its own executor and store.
    fn start(
        &mut self,
        op: Op,
        label: String,
        request: Option<Request>,
        fault: Option<Fault>,
        retry: bool,
        handing_on: Option<String>,
    ) -> InFlight {
        self.serial += 1;
        let may_remove = match (&op, &request) {
            (Op::DeleteMedia { force: true, .. }, Some(req)) => req.path.rsplit('/').next().map(str::to_owned),
            _ => None,
        };
        let may_trash = match (&op, &request) {
            (Op::TrashMedia { force: true, .. }, Some(req)) => req.path.rsplit('/').next().map(str::to_owned),
            _ => None,
        };
        let state = OpState::new(self.serial, label, fault, may_remove, may_trash);
        let exec = OpExec { world: Rc::clone(&self.world), op: Rc::clone(&state) };
        let store = OpStore { world: Rc::clone(&self.world), op: Rc::clone(&state) };
        let shared = Rc::clone(&self.shared);
        let future: Pin<Box<dyn Future<Output = Done>>> = match request.clone() {
            Some(req) => {
                Box::pin(async move { Done::Http(api::handle_with(&exec, &shared.config, Some(&store), &req).await) })
            }
            None => Box::pin(async move {
                let clock = FnClock(world::now_ms);
                let metered = Metered::new(exec, clock);
                let continuation = Continuation::On { handing_on: handing_on.as_deref() };
                let when = TickTime::database();
                Done::Tick(
                    tick::run_on(&metered, &clock, shared.budget, &shared.policy, continuation, Some(&store), &when)
                        .await,
                )
            }),
        };
        InFlight { key: u64::MAX, state, op, request, retry, started_at: self.world.steps.get(), future }
    }

    /// Runs one event.
    /// The ids of the operations in flight.
    pub fn in_flight(&self) -> Vec<u64> {
        self.in_flight.iter().map(|f| f.key).collect()
    }

    pub fn apply(&mut self, event: &Event) {
        self.apply_event(event);
        self.flush_statements();
        if self.world.steps.get() / 64 != self.leases_checked_at / 64 {
            self.leases_checked_at = self.world.steps.get();
            self.world.check_leases();
        }
    }

    fn apply_event(&mut self, event: &Event) {
        match event {
            Event::Spawn { id, op, fault, retry } => self.spawn(*id, op.clone(), *fault, *retry),
            Event::Step { op } => {
                if let Some(slot) = self.in_flight.iter().position(|f| f.key == *op) {
                    self.step(slot);
                }
            }
            Event::Time { ms } => {
                // Long stretches only pass between requests; while one is in flight at most 90 s
                // (a stalled statement): enough for a lease to lapse under its holder.
                let ms = if self.in_flight.is_empty() { *ms } else { (*ms).min(90_000) };
                self.world.advance(ms as f64);
            }
            Event::Quiesce => self.quiesce(),
        }
    }

    fn spawn(&mut self, key: u64, op: Op, fault: Option<Fault>, retry: bool) {
        self.stats.ops += 1;
        let flight = match &op {
            Op::Tick => Some(self.start(op.clone(), "tick".into(), None, fault, false, None)),
            Op::Continue { which, keep } => {
                if self.known.continuations.is_empty() {
                    None
                } else {
                    let i = *which as usize % self.known.continuations.len();
                    let token =
                        if *keep { self.known.continuations[i].clone() } else { self.known.continuations.remove(i) };
                    Some(self.start(op.clone(), format!("continuation {token}"), None, fault, false, Some(token)))
                }
            }
            Op::Upload { who, salt } => {
                let (content_type, form) = ops::upload_form(&ops::png(*salt));
                let mut req = request(*who, "POST", "/media", None, &self.known);
                req.content_type = Some(content_type);
                req.body = form;
                Some(self.start(op.clone(), "POST /media (upload)".into(), Some(req), fault, retry, None))
            }
            Op::ReplaceMedia { salt, .. } => ops::request(&op, &self.known, MEDIA_ORIGIN).map(|(who, _, path, _)| {
                let (content_type, form) = ops::upload_form(&ops::png(*salt));
                let mut req = request(who, "POST", &path, None, &self.known);
                req.content_type = Some(content_type);
                req.body = form;
                self.start(op.clone(), format!("POST {path} (replace)"), Some(req), fault, retry, None)
            }),
            _ => ops::request(&op, &self.known, MEDIA_ORIGIN).map(|(who, method, path, body)| {
                let req = request(who, &method, &path, body.as_ref(), &self.known);
                self.start(op.clone(), format!("{method} {path}"), Some(req), fault, retry, None)
            }),
        };
        if let Some(mut flight) = flight {
            flight.key = key;
            if self.verbose {
                self.log.push(format!("#{} start {}{}", flight.state.serial, flight.state.label, fault_note(fault)));
            }
            self.in_flight.push(flight);
        }
    }

    fn step(&mut self, slot: usize) {
        let serial = self.in_flight[slot].state.serial;
        if serial != self.last_stepped {
            self.stats.interleavings += 1;
            self.last_stepped = serial;
        }
        let waker = futures::task::noop_waker();
        let mut cx = Context::from_waker(&waker);
        match self.in_flight[slot].future.as_mut().poll(&mut cx) {
            Poll::Ready(done) => {
                let flight = self.in_flight.remove(slot);
                self.finish(flight, Some(done));
            }
            Poll::Pending if self.in_flight[slot].state.dead.get() => {
                let flight = self.in_flight.remove(slot);
                self.finish(flight, None);
            }
            Poll::Pending => {}
        }
    }

    fn finish(&mut self, flight: InFlight, done: Option<Done>) {
        let state = &flight.state;
        let failed = match &done {
            None => {
                self.note(format!("#{} died ({})", state.serial, state.label));
                true
            }
            Some(Done::Http(r)) => {
                if self.verbose {
                    self.log.push(format!("#{} {} -> {} {}", state.serial, state.label, r.status, clip(&r.body)));
                }
                if r.status >= 500 {
                    self.stats.answers_5xx += 1;
                    if !state.fault_fired.get() {
                        self.world.violation(format!(
                            "op #{} `{}` answered {} with no fault injected: {:?}",
                            state.serial, state.label, r.status, r.cause
                        ));
                    }
                }
                self.learn(&flight, r);
                r.status >= 500
            }
            Some(Done::Tick(report)) => {
                self.stats.ticks += 1;
                self.check_tick(state, report);
                if let Some(token) = &report.continue_with {
                    self.known.continuations.push(token.clone());
                }
                false
            }
        };
        if failed && flight.retry {
            if let Some(req) = flight.request.clone() {
                self.stats.ops += 1;
                self.stats.retries += 1;
                let label = format!("{} (retry of #{})", state.label, state.serial);
                let mut again = self.start(flight.op.clone(), label, Some(req), None, false, None);
                again.key = flight.key + 1;
                self.in_flight.push(again);
            }
        }
    }

    /// Moves the statements run since the last call into the log.
    fn flush_statements(&mut self) {
        if let Some(lines) = self.world.statement_log.borrow_mut().as_mut() {
            self.log.append(lines);
        }
    }

    fn note(&mut self, line: String) {
        if self.verbose {
            self.log.push(line);
        }
    }

    /// Learns what a successful answer names, and checks a "Used in" read that ran alone.
    fn learn(&mut self, flight: &InFlight, r: &Response) {
        if r.status >= 300 {
            return;
        }
        let b = body(r);
        let item = &b["data"]["item"];
        match &flight.op {
            Op::CreateEntry { .. } => {
                let slug = flight.request.as_ref().and_then(|q| q.path.rsplit('/').next()).unwrap_or_default();
                if let Some(id) = item["id"].as_str() {
                    self.known.entries.push((slug.to_owned(), id.to_owned()));
                }
            }
            Op::ReplaceMedia { .. } | Op::RevertMedia { .. } => {
                let id = item["id"].as_str().unwrap_or_default();
                for v in item["versions"].as_array().into_iter().flatten() {
                    if let Some(key) = v["storageKey"].as_str() {
                        if !self.known.versions.iter().any(|(_, k)| k == key) {
                            self.known.versions.push((id.to_owned(), key.to_owned()));
                        }
                    }
                }
            }
            Op::Upload { .. } | Op::Register { .. } => {
                if let (Some(id), Some(key)) = (item["id"].as_str(), item["storageKey"].as_str()) {
                    if !self.known.media.iter().any(|(m, _)| m == id) {
                        self.known.media.push((id.to_owned(), key.to_owned()));
                    }
                }
            }
            Op::MintToken { .. } => {
                if let (Some(id), Some(secret)) = (b["data"]["id"].as_str(), b["data"]["token"].as_str()) {
                    self.known.tokens.push((id.to_owned(), secret.to_owned()));
                }
            }
            Op::UsedIn { .. } => {
                let ran_alone = self.world.steps.get() - flight.started_at <= flight.state.steps_taken();
                if ran_alone && b["data"]["coverage"]["status"] == "complete" && b["data"]["nextCursor"].is_null() {
                    let id = flight.request.as_ref().and_then(|q| q.path.split('/').rev().nth(1)).unwrap_or_default();
                    self.check_used_in(id, &b["data"]);
                }
            }
            _ => {}
        }
    }

    /// "Used in" of media `id` (one page of an answer) equals the model.
    fn check_used_in(&mut self, id: &str, page: &Json) {
        let listed: BTreeSet<Entry> = page["items"]
            .as_array()
            .into_iter()
            .flatten()
            .chain(page["unindexed"].as_array().into_iter().flatten())
            .map(|i| {
                (i["collection"].as_str().unwrap_or("").to_owned(), i["contentId"].as_str().unwrap_or("").to_owned())
            })
            .collect();
        let Some(key) = self.world.media_rows().get(id).cloned() else { return };
        let expected: BTreeSet<Entry> = model::shown_in(&self.world.db, id, &key).into_iter().collect();
        if listed != expected {
            self.world.violation(format!(
                "coverage complete, but \"Used in\" of {id} ({key}) lists {listed:?}; the content uses it in {expected:?}"
            ));
        }
    }

    /// A tick stays within its budgets, and within the daily budget by at most one tick's rows.
    fn check_tick(&mut self, state: &OpState, report: &TickReport) {
        self.stats.split_jobs += report.count("splitJobs");
        let budget = self.shared.budget;
        if let Some(e) = &report.error {
            if !state.fault_fired.get() {
                let orphans = model::rows(
                    &self.world.db,
                    "SELECT * FROM _emdash_media_usage_work WHERE collection_id NOT IN (SELECT id FROM _emdash_collections)",
                );
                self.world.violation(format!(
                    "tick #{} failed with no fault injected: {e} (work rows of no registered collection: {orphans:?})",
                    state.serial
                ));
            }
        }
        if report.statements > budget.max_statements {
            self.world.violation(format!(
                "tick #{} issued {} statements (budget {})",
                state.serial, report.statements, budget.max_statements
            ));
        }
        if report.rows.written > budget.max_rows.written || report.rows.read > budget.max_rows.read {
            self.world.violation(format!(
                "tick #{} spent {:?} rows (budget {:?})",
                state.serial, report.rows, budget.max_rows
            ));
        }
        let day = (world::now_ms() / 86_400_000.0).floor() as i64;
        let spent = self.daily.entry(day).or_default();
        *spent += report.rows.written;
        if budget.daily_rows_written > 0 && *spent > budget.daily_rows_written + budget.max_rows.written {
            self.world.violation(format!(
                "ticks wrote {spent} rows on day {day} (daily budget {} plus one tick's {})",
                budget.daily_rows_written, budget.max_rows.written
            ));
        }
    }

    /// Lets every operation in flight finish, runs the background work to its end with time
    /// passing, and compares the whole index with the model.
    fn quiesce(&mut self) {
        self.stats.quiescences += 1;
        let mut turn = 0;
        while !self.in_flight.is_empty() && self.world.violations.borrow().is_empty() {
            let slot = turn % self.in_flight.len();
            self.step(slot);
            turn += 1;
        }
        if !self.world.violations.borrow().is_empty() {
            return;
        }
        self.known.continuations.clear();
        let mut complete = false;
        for round in 0..400 {
            self.world.advance(5.0 * 60_000.0);
            let report = match self.run_alone(Op::Tick, "settling tick".into(), None) {
                Done::Tick(report) => report,
                Done::Http(_) => unreachable!("a tick reports"),
            };
            self.check_tick(&OpState::new(0, "settling tick".into(), None, None, None), &report);
            if report.daily_spent {
                self.world.advance(86_400_000.0);
            }
            if report.outcome != TickOutcome::Idle {
                continue;
            }
            let status = body(&self.call(Who::Admin, "GET", "/admin/media-usage/status", None));
            let deletions: Vec<String> = status["data"]["deletions"]
                .as_array()
                .into_iter()
                .flatten()
                .filter_map(|d| d["collectionId"].as_str().map(str::to_owned))
                .collect();
            if status["data"]["status"] == "complete" && deletions.is_empty() {
                complete = true;
                break;
            }
            // A deletion that failed for good (its holders kept dying) waits for an operator.
            if round % 10 == 9 {
                for id in &deletions {
                    let body = json!({"collectionId": id});
                    self.call(Who::Admin, "POST", "/admin/media-usage/collection-deletions/retry", Some(&body));
                }
            }
            // What an operator does: repair what a schema change left stale (a repair run the
            // ticks carry on), and retry failed work after its back-off.
            self.world.advance(3_600_000.0);
            if round % 4 == 0 {
                let r = self.call(Who::Admin, "POST", "/admin/media-usage/repair", Some(&json!({"scope": "all"})));
                self.note(format!("settling: repair -> {} {}", r.status, clip(&r.body)));
            }
            if round % 10 == 9 {
                self.call(Who::Admin, "POST", "/admin/media-usage/work/retry", Some(&json!({})));
            }
        }
        if !complete {
            let status = body(&self.call(Who::Admin, "GET", "/admin/media-usage/status", None));
            self.world.violation(format!("coverage not complete, or deletions left, at quiescence: {status}"));
            return;
        }
        self.check_index();
        self.check_leftovers();
    }

    /// At quiescence "Used in" of every media item equals the model exactly.
    fn check_index(&mut self) {
        let expected = self.world.unwatched(|| model::usage(&self.world.db));
        for (id, users) in expected {
            let mut listed = BTreeSet::new();
            let mut cursor: Option<String> = None;
            loop {
                let path = match &cursor {
                    Some(c) => format!("/media/{id}/usage?limit=100&cursor={c}"),
                    None => format!("/media/{id}/usage?limit=100"),
                };
                let r = self.call(Who::Admin, "GET", &path, None);
                let b = body(&r);
                for i in b["data"]["items"].as_array().into_iter().flatten() {
                    listed.insert((
                        i["collection"].as_str().unwrap_or("").to_owned(),
                        i["contentId"].as_str().unwrap_or("").to_owned(),
                    ));
                }
                match b["data"]["nextCursor"].as_str() {
                    Some(c) => cursor = Some(c.to_owned()),
                    None => break,
                }
            }
            if listed != users {
                let db = &self.world.db;
                let occurrences = model::rows(db, &format!("SELECT source_key, generation, field_path, reference_type FROM _emdash_media_usage WHERE media_id = '{id}'"));
                let sources: Vec<Vec<String>> = users.iter().flat_map(|(_, e)| model::rows(db, &format!("SELECT source_key, current_generation, source_version, content_status, content_deleted_at FROM _emdash_media_usage_sources WHERE content_id = '{e}'"))).collect();
                let work: Vec<Vec<String>> = users
                    .iter()
                    .flat_map(|(_, e)| {
                        model::rows(db, &format!("SELECT * FROM _emdash_media_usage_work WHERE content_id = '{e}'"))
                    })
                    .collect();
                self.world.violation(format!(
                    "at quiescence \"Used in\" of {id} lists {listed:?}; the content uses it in {users:?} (occurrences {occurrences:?}, sources {sources:?}, work {work:?})"
                ));
            }
        }
    }

    /// At quiescence nothing of a deleted collection is left, and every uploaded file's row has
    /// its object.
    fn check_leftovers(&mut self) {
        let db = &self.world.db;
        let tables = model::rows(db, "SELECT name FROM sqlite_master WHERE type = 'table' ORDER BY name");
        let registered: BTreeSet<String> =
            model::rows(db, "SELECT slug FROM _emdash_collections").into_iter().map(|r| r[0].clone()).collect();
        for t in tables.iter().map(|r| &r[0]) {
            if let Some(slug) = t.strip_prefix("ec_") {
                if !registered.contains(slug) {
                    self.world.violation(format!("table {t} is left of a deleted collection"));
                }
            }
            let has_collection = model::rows(db, &format!("SELECT name FROM pragma_table_info('{t}')"))
                .iter()
                .any(|c| c[0] == "collection_id");
            if has_collection && !t.starts_with("ec_") {
                let left = model::rows(
                    db,
                    &format!(
                        "SELECT count(*) FROM {t} WHERE collection_id NOT IN (SELECT id FROM _emdash_collections)"
                    ),
                );
                if left[0][0] != "0" {
                    let rows = model::rows(
                        db,
                        &format!(
                            "SELECT * FROM {t} WHERE collection_id NOT IN (SELECT id FROM _emdash_collections) LIMIT 3"
                        ),
                    );
                    self.world
                        .violation(format!("{} rows of {t} belong to no registered collection: {rows:?}", left[0][0]));
                }
            }
        }
        let uploaded = model::rows(db, "SELECT id, storage_key FROM media WHERE storage_key NOT LIKE 'reg-%'");
        for m in uploaded {
            if self.world.store.bytes(&m[1]).is_none() {
                self.world.violation(format!("media {} names object {} that is gone", m[0], m[1]));
            }
        }
    }
}

fn fault_note(fault: Option<Fault>) -> String {
    match fault {
        Some(Fault { kind, at }) => format!(" [fault {kind:?} at {at}]"),
        None => String::new(),
    }
}

fn clip(s: &str) -> String {
    s.chars().take(300).collect()
}

/// Draws the events of a run from `seed`: `ops` operations, a quiescence every
/// [`QUIESCE_EVERY`] and at the end. The fault rate and mix are the seed's too.
pub struct Generator {
    rng: Rng,
    fault_rate: f64,
    ops: u64,
    target: u64,
    done: bool,
    /// Operations the scheduler steps rarely (a slow isolate, a stalled connection): others run
    /// many statements, ticks and whole requests between two of theirs.
    slow: std::collections::BTreeSet<u64>,
}

impl Generator {
    pub fn new(seed: u64, target: u64) -> Generator {
        let mut rng = Rng::new(seed);
        let fault_rate = 0.02 + rng.below(20) as f64 / 100.0;
        Generator { rng, fault_rate, ops: 0, target, done: false, slow: Default::default() }
    }

    /// The next event given the operations in flight; `None` at the end.
    pub fn next(&mut self, in_flight: &[u64]) -> Option<Event> {
        if self.done {
            return None;
        }
        if self.ops >= self.target {
            self.done = true;
            return Some(Event::Quiesce);
        }
        let rng = &mut self.rng;
        let roll = rng.below(100);
        if !in_flight.is_empty() && (roll < 62 || in_flight.len() >= MAX_IN_FLIGHT) {
            // A slow operation is stepped one time in fifty it would otherwise be.
            self.slow.retain(|id| in_flight.iter().any(|k| k & !1 == *id));
            let weight = |k: &u64| if self.slow.contains(&(k & !1)) { 1 } else { 50 };
            let total: u64 = in_flight.iter().map(weight).sum();
            let mut pick = rng.below(total);
            for k in in_flight {
                if pick < weight(k) {
                    return Some(Event::Step { op: *k });
                }
                pick -= weight(k);
            }
            unreachable!("a pick within the total weight");
        }
        if roll < 68 {
            let ms = if rng.chance(0.1) { 3_600_000 * (1 + rng.below(48)) } else { 1_000 * (1 + rng.below(30)) };
            return Some(Event::Time { ms });
        }
        self.ops += 1;
        if self.ops.is_multiple_of(QUIESCE_EVERY) {
            return Some(Event::Quiesce);
        }
        let op = Op::random(rng);
        let fault = rng.chance(self.fault_rate).then(|| {
            let kind = match rng.below(4) {
                0 => FaultKind::Crash,
                1 => FaultKind::CommitUnknown,
                2 => FaultKind::Transient,
                _ => FaultKind::Storage,
            };
            Fault { kind, at: 1 + rng.below(12) as u32 }
        });
        let retry = fault.is_some() && rng.chance(0.6);
        if rng.chance(0.03) {
            self.slow.insert(2 * self.ops);
        }
        Some(Event::Spawn { id: 2 * self.ops, op, fault, retry })
    }
}

/// The CPU budget of a seed's ticks: the default, or on even seeds a budget under an entry's
/// fixed cost and a few hundred bytes, so that entries with a draft are projected one variant a
/// job (the ticks run single jobs, one a tick, and writes leave their projections to them).
pub fn cpu_ms(seed: u64) -> f64 {
    if seed.is_multiple_of(2) {
        0.041
    } else {
        media_usage_worker::usage::cost::DEFAULT_TICK_CPU_MS
    }
}

/// The handles of a run (for the log line): the fault rate the seed chose.
pub fn fault_rate(seed: u64) -> f64 {
    Generator::new(seed, 0).fault_rate
}
