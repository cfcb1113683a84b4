//! The leased-queue idiom, written once for the five queues of the index: projection work
//! (`_emdash_media_usage_work`), repair runs (`_emdash_media_usage_reconciliations`), collection
//! deletion tombstones (`_emdash_media_usage_collection_deletions`), field deletions
//! (`_emdash_media_usage_field_deletions`) and the continuation baton
//! (`_emdash_media_usage_continuation`).
//!
//! A queue row is claimed by one statement that leases it under a fresh token for the queue's
//! lease length (measured by the database clock), counts the attempt, and is then changed only
//! by statements that carry the token. The four row queues share their lease columns (`state`,
//! `lease_token`, `lease_expires_at`, `attempt_count`, `next_attempt_at`, `updated_at`), so what
//! those statements set is written once, as fragments that [`render`] fills into each queue's
//! statements:
//!
//! - `{set_leased}` (`sql/lease/set_leased.sql`): the SET list of a claim, bound `?1` = token and
//!   `?2` = lease seconds ([`Queue::claim`]);
//! - `{fail}` (`sql/lease/fail.sql`): the SET list of a failed attempt, bound `?1` = terminal,
//!   `?2` = backoff seconds, `?3` = error code ([`Failure::statement`]);
//! - `{release}` (`sql/lease/release.sql`): the SET list that hands a row back unleased
//!   (pending, neither token nor expiry), when `{released}` is 1: a statement that always releases
//!   leaves it to its default, `1`; a checkpoint that releases only on request fills in its
//!   parameter ([`render_releasing_on`]);
//! - `{reset_pending}` (`sql/lease/reset_pending.sql`): the SET list that queues a row afresh
//!   (released, due now, no attempt counted);
//! - `{requeue_work}` (`sql/usage/requeue_work.sql`): the work queue's upsert clause (a new work
//!   version, queued afresh), shared by the enqueue statement, the capture triggers and the
//!   re-queue of linking entries.
//!
//! What differs stays in each queue's statement: which rows are due and in what order, what a
//! failure must still hold (a work row its version; a deletion a live lease), and each table's
//! own columns. The continuation baton is a single row without state or attempts: its claim binds
//! its lease length the same way but has no fragment to share.

use serde::Deserialize;

use crate::exec::Statement;
use crate::model::state::QueueState;
use crate::sql::{self, Fragment};

const SET_LEASED: &str = include_str!("../sql/lease/set_leased.sql");
const FAIL: &str = include_str!("../sql/lease/fail.sql");
const RESET_PENDING: &str = include_str!("../sql/lease/reset_pending.sql");
const RELEASE: &str = include_str!("../sql/lease/release.sql");
const REQUEUE_WORK: &str = include_str!("../sql/usage/requeue_work.sql");

/// A leased queue: the table whose rows are claimed, and how long a claim holds one.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Queue {
    /// The queue's table.
    pub table: &'static str,
    /// How long a claim holds a row before another holder may take it over (its holder is then
    /// presumed dead). Longer than any step the holder makes under one claim.
    pub lease_seconds: i64,
}

/// Projection work: one job (or group job) per claim.
pub const WORK: Queue = Queue { table: "_emdash_media_usage_work", lease_seconds: 60 };

/// Repair runs: one step per claim.
pub const REPAIR: Queue = Queue { table: "_emdash_media_usage_reconciliations", lease_seconds: 60 };

/// Collection deletions: a DELETE request's front phases, or a tick's steps, per claim.
pub const DELETION: Queue = Queue { table: "_emdash_media_usage_collection_deletions", lease_seconds: 300 };

/// Field deletions: a tick's steps per claim (the longest, dropping a column, rewrites its table).
pub const FIELD_DELETION: Queue = Queue { table: "_emdash_media_usage_field_deletions", lease_seconds: 120 };

/// The continuation baton: how long a continuation message may be in flight before another tick
/// may send a new one (a lost message delays work by at most this, or until the next cron tick).
pub const CONTINUATION: Queue = Queue { table: "_emdash_media_usage_continuation", lease_seconds: 60 };

impl Queue {
    /// A claim of this queue under `token`: `template` with the lease fragments filled, bound
    /// `?1` = `token` and `?2` = this queue's lease length in seconds; the caller binds the rest,
    /// from `?3`.
    pub fn claim(&self, template: &'static str, token: &str) -> Statement {
        Statement::new(render(template, &[])).bind(token).bind(self.lease_seconds)
    }
}

/// How a failed attempt is recorded (`{fail}`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Failure {
    /// The row fails for good (`failed`, until an operator retries it); else it is retried.
    pub terminal: bool,
    /// When it is due again, from now (its `next_attempt_at` also when terminal).
    pub delay_seconds: i64,
}

impl Failure {
    /// Failed for good at once, whatever the attempts (the row can never succeed).
    pub const FINAL: Failure = Failure { terminal: true, delay_seconds: 0 };

    /// A failure statement: `template` with the lease fragments filled, bound `?1` = terminal,
    /// `?2` = delay and `?3` = `code`; the caller binds the rest, from `?4`.
    pub fn statement(self, template: &'static str, code: &str) -> Statement {
        Statement::new(render(template, &[])).bind(self.terminal).bind(self.delay_seconds).bind(code)
    }
}

/// Fills the lease fragments, then `vars`, into `template` (see [`sql::render`]); a
/// `{release}` releases always.
///
/// # Panics
/// When a placeholder is left unfilled (a programming error caught by the SQL-file test).
pub fn render(template: &'static str, vars: &[(&str, &Fragment)]) -> String {
    let requeue_work = Fragment::static_sql(REQUEUE_WORK);
    let set_leased = Fragment::static_sql(SET_LEASED);
    let fail = Fragment::static_sql(FAIL);
    let reset_pending = Fragment::static_sql(RESET_PENDING);
    let release = Fragment::static_sql(RELEASE);
    let always = Fragment::static_sql("1");
    // Filled in order: `{requeue_work}` holds `{reset_pending}`, which holds `{release}`, which
    // holds `{released}` (the caller's, if given, else always).
    let mut all: Vec<(&str, &Fragment)> = vec![
        ("requeue_work", &requeue_work),
        ("set_leased", &set_leased),
        ("fail", &fail),
        ("reset_pending", &reset_pending),
        ("release", &release),
    ];
    all.extend_from_slice(vars);
    all.push(("released", &always));
    sql::render(template, &all)
}

/// [`render`], with `{release}` handing the row back only when the parameter `released` is 1.
pub fn render_releasing_on(template: &'static str, released: usize) -> String {
    render(template, &[("released", &Fragment::parameter(released))])
}

/// The lease and attempt columns every row of the four row queues carries, as a row read reads
/// them: each queue's row struct flattens it (`#[serde(flatten)] lease: LeaseState`). A repair
/// run has no error column (it records no failures of its own): its `last_error_code` is `None`.
#[derive(Debug, Clone, PartialEq, Deserialize)]
pub struct LeaseState {
    pub state: QueueState,
    /// Claims counted against the row (the one under way included).
    pub attempt_count: i64,
    pub next_attempt_at: String,
    /// Set exactly while the row is leased.
    pub lease_token: Option<String>,
    /// Set exactly while the row is leased.
    pub lease_expires_at: Option<String>,
    pub last_error_code: Option<String>,
    pub updated_at: String,
}

impl LeaseState {
    /// As operators see it (never the token).
    pub fn view(&self) -> LeaseView<'_> {
        LeaseView {
            state: self.state,
            attempt_count: self.attempt_count,
            next_attempt_at: &self.next_attempt_at,
            lease_expires_at: self.lease_expires_at.as_deref(),
            last_error_code: self.last_error_code.as_deref(),
            updated_at: &self.updated_at,
        }
    }
}

/// The lease and attempt columns of a queue row, as operators see them (never its token).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LeaseView<'a> {
    pub state: QueueState,
    /// Claims counted against the row (the one under way included).
    pub attempt_count: i64,
    pub next_attempt_at: &'a str,
    /// Set exactly while the row is leased.
    pub lease_expires_at: Option<&'a str>,
    pub last_error_code: Option<&'a str>,
    pub updated_at: &'a str,
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::exec::Value;

    // (Templates here are bare SET lists: rendering does not parse SQL.)

    #[test]
    fn a_claim_binds_the_token_then_its_queues_lease_length() {
        for (queue, seconds) in
            [(WORK, 60i64), (REPAIR, 60), (DELETION, 300), (FIELD_DELETION, 120), (CONTINUATION, 60)]
        {
            let stmt = queue.claim("SET {set_leased} WHERE id = ?3", "tok");
            assert_eq!(stmt.params(), [Value::from("tok"), Value::from(seconds)], "{}", queue.table);
        }
    }

    #[test]
    fn a_claim_sets_the_shared_lease_columns() {
        let stmt = WORK.claim("SET {set_leased} WHERE id = ?3", "tok");
        let sql = stmt.sql();
        assert!(sql.starts_with("SET -- "), "{sql}");
        for set in [
            "state = 'leased'",
            "lease_token = ?1",
            "lease_expires_at = strftime('%Y-%m-%dT%H:%M:%fZ', 'now', '+' || ?2 || ' seconds')",
            "attempt_count = attempt_count + 1",
        ] {
            assert!(sql.contains(set), "{set} missing from {sql}");
        }
        assert!(sql.ends_with("updated_at = strftime('%Y-%m-%dT%H:%M:%fZ', 'now') WHERE id = ?3"), "{sql}");
    }

    #[test]
    fn a_failure_binds_terminal_delay_and_code_in_that_order() {
        let retry = Failure { terminal: false, delay_seconds: 120 }.statement("SET {fail}", "E");
        assert_eq!(retry.params(), [Value::from(false), Value::from(120i64), Value::from("E")]);
        let sql = retry.sql();
        for set in [
            "state = CASE WHEN ?1 = 1 THEN 'failed' ELSE 'retry' END",
            "next_attempt_at = strftime('%Y-%m-%dT%H:%M:%fZ', 'now', '+' || ?2 || ' seconds')",
            "lease_token = NULL",
            "lease_expires_at = NULL",
            "last_error_code = ?3",
        ] {
            assert!(sql.contains(set), "{set} missing from {sql}");
        }
        let final_ = Failure::FINAL.statement("SET {fail}", "F");
        assert_eq!(final_.params(), [Value::from(true), Value::from(0i64), Value::from("F")]);
    }

    #[test]
    fn the_work_upsert_queues_a_row_afresh_under_a_new_version() {
        let sql = render("VALUES (1) {requeue_work}, extra = 1", &[]);
        assert!(!sql.contains('{'), "{sql}");
        for set in [
            "ON CONFLICT (collection_id, content_id) DO UPDATE SET",
            "work_version = work_version + 1",
            "last_error_code = NULL",
            "state = CASE WHEN 1 = 1 THEN 'pending' ELSE state END",
            "attempt_count = 0",
            "lease_token = CASE WHEN 1 = 1 THEN NULL ELSE lease_token END",
            "lease_expires_at = CASE WHEN 1 = 1 THEN NULL ELSE lease_expires_at END",
            "updated_at = strftime('%Y-%m-%dT%H:%M:%fZ', 'now')",
        ] {
            assert!(sql.contains(set), "{set} missing from {sql}");
        }
        assert!(sql.ends_with("next_attempt_at = strftime('%Y-%m-%dT%H:%M:%fZ', 'now'), extra = 1"), "{sql}");
    }

    #[test]
    fn a_release_hands_the_row_back_always_or_when_its_parameter_is_1() {
        let on = |released: &str| {
            [
                format!("state = CASE WHEN {released} = 1 THEN 'pending' ELSE state END"),
                format!("lease_token = CASE WHEN {released} = 1 THEN NULL ELSE lease_token END"),
                format!("lease_expires_at = CASE WHEN {released} = 1 THEN NULL ELSE lease_expires_at END"),
            ]
        };
        let always = render("SET {release} WHERE id = ?1", &[]);
        let requested = render_releasing_on("SET {release} WHERE id = ?1", 6);
        let afresh = render("SET {reset_pending}", &[]);
        for (sql, sets) in [(&always, on("1")), (&requested, on("?6")), (&afresh, on("1"))] {
            assert!(!sql.contains('{'), "{sql}");
            for set in sets {
                assert!(sql.contains(&set), "{set} missing from {sql}");
            }
        }
        assert!(afresh.contains("attempt_count = 0"), "{afresh}");
    }

    #[test]
    fn render_fills_the_callers_fragments_too() {
        let table = Fragment::static_sql("x");
        assert_eq!(render("FROM {table}", &[("table", &table)]), "FROM x");
    }
}
