//! Guarded batches: the D1 substitute for a transaction that must check its preconditions.
//!
//! `batch([assert, ...statements, cleanup])`: the assertion inserts into
//! `_emdash_batch_guard(id NOT NULL)` the guard token only when its preconditions hold, and NULL
//! otherwise. A NULL violates NOT NULL, D1 rolls the whole batch back (DDL included), and the
//! executor reports [`Error::Stale`]. The cleanup removes the token, so the table stays empty.

use super::{Error, Executor, Outcome, Statement};
use crate::ids;

const CLEANUP: &str = include_str!("../sql/guard/cleanup.sql");

/// An assertion statement whose `?1` is the guard token, bound here. Its SQL must have the shape
/// `INSERT INTO _emdash_batch_guard (id) SELECT CASE WHEN <preconditions> THEN ?1 END`.
#[derive(Debug)]
#[must_use]
pub struct Guard {
    token: String,
    assert: Statement,
}

impl Guard {
    /// Starts an assertion from its SQL; bind the precondition parameters (`?2`…) with
    /// [`Guard::bind`].
    pub fn new(sql: impl Into<std::borrow::Cow<'static, str>>) -> Self {
        let token = format!("guard:{}", ids::new_id());
        let assert = Statement::new(sql).bind(token.clone());
        Guard { token, assert }
    }

    pub fn bind(mut self, value: impl Into<super::Value>) -> Self {
        self.assert = self.assert.bind(value);
        self
    }
}

/// Runs `stmts` atomically, only if the guard's preconditions hold at that instant.
/// Returns the outcomes of `stmts` (without the assertion and cleanup).
pub async fn guarded_batch<E: Executor>(exec: &E, guard: Guard, stmts: Vec<Statement>) -> Result<Vec<Outcome>, Error> {
    let n = stmts.len();
    let mut all = Vec::with_capacity(n + 2);
    all.push(guard.assert);
    all.extend(stmts);
    all.push(Statement::new(CLEANUP).bind(guard.token));
    let mut outcomes = exec.batch(all).await?;
    outcomes.truncate(n + 1);
    outcomes.remove(0);
    Ok(outcomes)
}
