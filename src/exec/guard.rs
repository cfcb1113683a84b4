//! Guarded batches: the D1 substitute for a transaction that must check its preconditions.
//!
//! `batch([assert, ...statements])`: the assertion inserts into
//! `_emdash_batch_guard(id NOT NULL)` the guard token only when its preconditions hold, and NULL
//! otherwise. A NULL violates NOT NULL, D1 rolls the whole batch back (DDL included), and the
//! executor reports [`Error::Stale`]. A trigger consumes an inserted token at once, so the table
//! stays empty and the batch needs no cleanup statement.

use super::{Error, Executor, Outcome, Statement};
use crate::ids;

/// An assertion statement whose `?1` is the guard token, bound here. Its SQL must have the shape
/// `INSERT INTO _emdash_batch_guard (id) SELECT CASE WHEN <preconditions> THEN ?1 END`.
#[derive(Debug)]
#[must_use]
pub struct Guard {
    assert: Statement,
}

impl Guard {
    /// Starts an assertion from its SQL; bind the precondition parameters (`?2`…) with
    /// [`Guard::bind`].
    pub fn new(sql: impl Into<std::borrow::Cow<'static, str>>) -> Self {
        Guard { assert: Statement::new(sql).bind(format!("guard:{}", ids::new_id())) }
    }

    pub fn bind(mut self, value: impl Into<super::Value>) -> Self {
        self.assert = self.assert.bind(value);
        self
    }
}

/// Runs `stmts` atomically, only if the guard's preconditions hold at that instant.
/// Returns the outcomes of `stmts` (without the assertion's).
pub async fn guarded_batch<E: Executor>(exec: &E, guard: Guard, stmts: Vec<Statement>) -> Result<Vec<Outcome>, Error> {
    guarded_batch_all(exec, vec![guard], stmts).await
}

/// Runs `stmts` atomically, only if every guard's preconditions hold at that instant (each is
/// its own assertion, so a batch can check what no one statement names: rows of several tables
/// rendered apart). Returns the outcomes of `stmts` (without the assertions').
pub async fn guarded_batch_all<E: Executor>(
    exec: &E,
    guards: Vec<Guard>,
    stmts: Vec<Statement>,
) -> Result<Vec<Outcome>, Error> {
    let asserts = guards.len();
    let mut all = Vec::with_capacity(stmts.len() + asserts);
    all.extend(guards.into_iter().map(|g| g.assert));
    all.extend(stmts);
    let mut outcomes = exec.batch(all).await?;
    outcomes.drain(..asserts);
    Ok(outcomes)
}
