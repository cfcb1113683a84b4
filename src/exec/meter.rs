//! Metering: counts what an invocation costs (statements, binds, SQL bytes, rows, time).
//!
//! Budgets are enforced against these counts and tests assert on them. Each statement of a
//! batch counts as one statement, the way D1 bills them.

use std::cell::RefCell;

use super::{Error, Executor, Outcome, Statement};
use crate::clock::Clock;

/// Cumulative cost of the statements issued through a [`Metered`] executor.
#[derive(Debug, Default, Clone, Copy, PartialEq)]
pub struct Usage {
    /// Statements sent, every statement of a batch counted.
    pub statements: u64,
    /// Statement results the backend returned (D1 returns one, with its meta, per statement
    /// that ran).
    pub results: u64,
    /// Statements that failed (every statement of a failed batch: D1 rolls it back whole).
    /// `results + failed == statements`.
    pub failed: u64,
    pub binds: u64,
    pub sql_bytes: u64,
    pub rows_read: u64,
    pub rows_written: u64,
    /// The largest number of binds seen in one statement.
    pub max_binds: u64,
    /// The largest SQL text seen in one statement, in bytes.
    pub max_sql_bytes: u64,
    /// Wall time spent waiting on the database, in milliseconds.
    pub duration_ms: f64,
}

/// Wraps an executor and counts everything that passes through it.
#[derive(Debug)]
pub struct Metered<E, C> {
    inner: E,
    clock: C,
    usage: RefCell<Usage>,
}

impl<E: Executor, C: Clock> Metered<E, C> {
    pub fn new(inner: E, clock: C) -> Self {
        Metered { inner, clock, usage: RefCell::new(Usage::default()) }
    }

    /// What was spent so far.
    pub fn usage(&self) -> Usage {
        *self.usage.borrow()
    }

    pub fn inner(&self) -> &E {
        &self.inner
    }

    fn count(&self, stmt: &Statement) {
        let mut u = self.usage.borrow_mut();
        let binds = stmt.params().len() as u64;
        let bytes = stmt.sql().len() as u64;
        u.statements += 1;
        u.binds += binds;
        u.sql_bytes += bytes;
        u.max_binds = u.max_binds.max(binds);
        u.max_sql_bytes = u.max_sql_bytes.max(bytes);
    }

    fn record(&self, outcomes: &[Outcome], started: f64) {
        let mut u = self.usage.borrow_mut();
        u.results += outcomes.len() as u64;
        for o in outcomes {
            u.rows_read += o.rows_read;
            u.rows_written += o.rows_written;
        }
        u.duration_ms += (self.clock.now_ms() - started).max(0.0);
    }
}

impl<E: Executor, C: Clock> Metered<E, C> {
    fn record_failure(&self, n: u64, started: f64) {
        self.record(&[], started);
        self.usage.borrow_mut().failed += n;
    }
}

impl<E: Executor, C: Clock> Executor for Metered<E, C> {
    async fn run(&self, stmt: Statement) -> Result<Outcome, Error> {
        self.count(&stmt);
        let started = self.clock.now_ms();
        let res = self.inner.run(stmt).await;
        match &res {
            Ok(o) => self.record(std::slice::from_ref(o), started),
            Err(_) => self.record_failure(1, started),
        }
        res
    }

    async fn batch(&self, stmts: Vec<Statement>) -> Result<Vec<Outcome>, Error> {
        stmts.iter().for_each(|s| self.count(s));
        let n = stmts.len() as u64;
        let started = self.clock.now_ms();
        let res = self.inner.batch(stmts).await;
        match &res {
            Ok(o) => self.record(o, started),
            Err(_) => self.record_failure(n, started),
        }
        res
    }
}
