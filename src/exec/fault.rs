//! Fault injection: "crash" an invocation at a chosen statement boundary.
//!
//! With `fail_from = Some(n)`, the n-th statement of the invocation (1-based) and every later one
//! fail without reaching the database, as if the isolate had died there. A batch containing the
//! n-th statement fails whole, as D1 would roll it back. `None` passes everything through.

use std::cell::Cell;

use super::{Error, Executor, Outcome, Statement};

#[derive(Debug)]
pub struct Faulty<E> {
    inner: E,
    fail_from: Option<u64>,
    seen: Cell<u64>,
}

impl<E: Executor> Faulty<E> {
    /// Fails from the `fail_from`-th statement on (`MEDIA_USAGE_FAULT_AFTER_STATEMENTS`).
    pub fn new(inner: E, fail_from: Option<u64>) -> Self {
        Faulty { inner, fail_from, seen: Cell::new(0) }
    }

    pub fn inner(&self) -> &E {
        &self.inner
    }

    /// Counts `n` statements and says whether the last of them is at or past the fault point.
    fn admit(&self, n: u64) -> Result<(), Error> {
        let last = self.seen.get() + n;
        self.seen.set(last);
        match self.fail_from {
            Some(at) if last >= at => Err(Error::Fault(at.max(last - n + 1))),
            _ => Ok(()),
        }
    }
}

impl<E: Executor> Executor for Faulty<E> {
    async fn run(&self, stmt: Statement) -> Result<Outcome, Error> {
        self.admit(1)?;
        self.inner.run(stmt).await
    }

    async fn batch(&self, stmts: Vec<Statement>) -> Result<Vec<Outcome>, Error> {
        self.admit(stmts.len() as u64)?;
        self.inner.batch(stmts).await
    }
}
