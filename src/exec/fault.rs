//! Fault injection: make an invocation fail at a chosen statement, in one of the two ways D1
//! can fail a write.
//!
//! - [`Fault::Crash`]: the isolate dies before its n-th statement (1-based). That statement and
//!   every later one fail without reaching the database. A batch containing the n-th statement
//!   fails whole, as D1 would roll it back. `MEDIA_USAGE_FAULT_AFTER_STATEMENTS` arms this one.
//! - [`Fault::CommitUnknown`]: the n-th statement (or the batch containing it) reaches the
//!   database and commits, and then the executor reports a transient error
//!   ([`Error::Transient`]), as D1 does when the connection is lost after the write. Every other
//!   statement runs normally, so the caller's own error handling runs too.
//!
//! No fault passes everything through.

use std::cell::Cell;

use super::{Error, Executor, Outcome, Statement};

/// Which failure to inject, and at which statement of the invocation (1-based).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Fault {
    /// Statements from the n-th on fail unsent: the isolate died there.
    Crash(u64),
    /// The n-th statement commits, then reports a transient error.
    CommitUnknown(u64),
}

/// The message of an injected commit-unknown error: what D1 says when it lost the connection.
pub const COMMIT_UNKNOWN_MESSAGE: &str = "Network connection lost (injected after the statement committed)";

#[derive(Debug)]
pub struct Faulty<E> {
    inner: E,
    fault: Option<Fault>,
    seen: Cell<u64>,
}

/// What happens to the statements the executor is about to run.
enum Fate {
    Run,
    /// Fails unsent, naming the first statement at or past the crash point.
    Refuse(u64),
    /// Runs, then reports a transient error if it committed.
    RunThenFail,
}

impl<E: Executor> Faulty<E> {
    /// Crashes from the `fail_from`-th statement on (`MEDIA_USAGE_FAULT_AFTER_STATEMENTS`).
    pub fn new(inner: E, fail_from: Option<u64>) -> Self {
        Self::injecting(inner, fail_from.map(Fault::Crash))
    }

    /// Injects `fault`, if any.
    pub fn injecting(inner: E, fault: Option<Fault>) -> Self {
        Faulty { inner, fault, seen: Cell::new(0) }
    }

    /// The n-th statement commits and then reports [`Error::Transient`].
    pub fn commit_unknown(inner: E, at: u64) -> Self {
        Self::injecting(inner, Some(Fault::CommitUnknown(at)))
    }

    pub fn inner(&self) -> &E {
        &self.inner
    }

    /// Counts `n` statements and decides their fate.
    fn admit(&self, n: u64) -> Fate {
        let first = self.seen.get() + 1;
        let last = self.seen.get() + n;
        self.seen.set(last);
        match self.fault {
            Some(Fault::Crash(at)) if last >= at => Fate::Refuse(at.max(first)),
            Some(Fault::CommitUnknown(at)) if (first..=last).contains(&at) => Fate::RunThenFail,
            _ => Fate::Run,
        }
    }
}

/// A definite refusal by the database stays what it is (nothing committed); success becomes the
/// transient error.
fn reported<T>(res: Result<T, Error>) -> Result<T, Error> {
    res.and_then(|_| Err(Error::Transient(COMMIT_UNKNOWN_MESSAGE.into())))
}

impl<E: Executor> Executor for Faulty<E> {
    async fn run(&self, stmt: Statement) -> Result<Outcome, Error> {
        match self.admit(1) {
            Fate::Run => self.inner.run(stmt).await,
            Fate::Refuse(at) => Err(Error::Fault(at)),
            Fate::RunThenFail => reported(self.inner.run(stmt).await),
        }
    }

    async fn batch(&self, stmts: Vec<Statement>) -> Result<Vec<Outcome>, Error> {
        match self.admit(stmts.len() as u64) {
            Fate::Run => self.inner.batch(stmts).await,
            Fate::Refuse(at) => Err(Error::Fault(at)),
            Fate::RunThenFail => reported(self.inner.batch(stmts).await),
        }
    }
}
