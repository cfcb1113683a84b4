//! The one door to SQL: statements, bound values, row decoding and the [`Executor`] trait.
//!
//! Every statement the crate issues goes through an `Executor`, so the D1 per-statement limits,
//! metering and fault injection apply everywhere alike. Backends: `edge::d1` (wasm) and
//! [`sqlite`] (native tests). Wrappers: [`meter`] and [`fault`]. Atomic guarded batches: [`guard`].

pub mod fault;
pub mod guard;
pub mod meter;
pub mod selfcheck;
#[cfg(not(target_arch = "wasm32"))]
pub mod sqlite;

use std::borrow::Cow;

use serde::de::DeserializeOwned;

/// D1's maximum number of bound parameters in one statement.
pub const MAX_BINDS: usize = 100;
/// D1's maximum SQL statement length in bytes.
pub const MAX_SQL_BYTES: usize = 100_000;
/// D1 carries integers through JS numbers: only these round-trip exactly (the model's bound).
pub use crate::model::MAX_SAFE_INTEGER;
/// D1's largest string, BLOB or row, in bytes.
pub const MAX_ROW_BYTES: i32 = 2_000_000;
/// Terms a compound `SELECT` (`UNION ALL` …) may have on D1: more fail with "too many terms in
/// compound SELECT" (measured on local D1: 5 arms run, 6 fail).
pub const MAX_COMPOUND_SELECT: i32 = 5;

/// A value bound to a statement parameter.
#[derive(Debug, Clone, PartialEq)]
pub enum Value {
    Null,
    /// Must stay within ±(2^53 − 1) to survive D1's JS number path; checked before sending.
    Integer(i64),
    Real(f64),
    Text(String),
}

impl From<&str> for Value {
    fn from(v: &str) -> Self {
        Value::Text(v.to_owned())
    }
}
impl From<String> for Value {
    fn from(v: String) -> Self {
        Value::Text(v)
    }
}
impl From<&String> for Value {
    fn from(v: &String) -> Self {
        Value::Text(v.clone())
    }
}
impl From<i64> for Value {
    fn from(v: i64) -> Self {
        Value::Integer(v)
    }
}
impl From<u32> for Value {
    fn from(v: u32) -> Self {
        Value::Integer(i64::from(v))
    }
}
impl From<f64> for Value {
    fn from(v: f64) -> Self {
        Value::Real(v)
    }
}
impl From<bool> for Value {
    fn from(v: bool) -> Self {
        Value::Integer(i64::from(v))
    }
}
impl<T: Into<Value>> From<Option<T>> for Value {
    fn from(v: Option<T>) -> Self {
        v.map_or(Value::Null, Into::into)
    }
}

/// One SQL statement and its positional (`?1`, `?2`, …) parameters.
#[derive(Debug, Clone)]
#[must_use]
pub struct Statement {
    sql: Cow<'static, str>,
    params: Vec<Value>,
}

impl Statement {
    pub fn new(sql: impl Into<Cow<'static, str>>) -> Self {
        Statement { sql: sql.into(), params: Vec::new() }
    }

    /// Appends the next positional parameter.
    pub fn bind(mut self, value: impl Into<Value>) -> Self {
        self.params.push(value.into());
        self
    }

    pub fn sql(&self) -> &str {
        &self.sql
    }

    pub fn params(&self) -> &[Value] {
        &self.params
    }

    /// Rejects what D1 would reject, before any backend sees the statement.
    pub fn check_limits(&self) -> Result<(), Error> {
        if self.params.len() > MAX_BINDS {
            return Err(Error::LimitExceeded(format!(
                "{} bound parameters (D1 allows {MAX_BINDS})",
                self.params.len()
            )));
        }
        if self.sql.len() > MAX_SQL_BYTES {
            return Err(Error::LimitExceeded(format!("{} bytes of SQL (D1 allows {MAX_SQL_BYTES})", self.sql.len())));
        }
        for value in &self.params {
            if let Value::Integer(i) = value {
                if !(-MAX_SAFE_INTEGER..=MAX_SAFE_INTEGER).contains(i) {
                    return Err(Error::LimitExceeded(format!("integer {i} cannot round-trip through D1")));
                }
            }
        }
        Ok(())
    }
}

/// One result row, keyed by column name, as D1 returns it.
pub type Row = serde_json::Map<String, serde_json::Value>;

/// What one statement returned and cost.
#[derive(Debug, Default, Clone)]
pub struct Outcome {
    pub rows: Vec<Row>,
    /// Rows changed, triggers included (SQLite `total_changes` delta, as D1 reports it).
    pub changes: u64,
    pub rows_read: u64,
    pub rows_written: u64,
}

impl Outcome {
    /// Decodes every row into `T` (the same serde path for both backends).
    pub fn decode<T: DeserializeOwned>(&self) -> Result<Vec<T>, Error> {
        self.rows.iter().map(decode_row).collect()
    }

    /// Decodes the first row, if any.
    pub fn first<T: DeserializeOwned>(&self) -> Result<Option<T>, Error> {
        self.rows.first().map(decode_row).transpose()
    }
}

fn decode_row<T: DeserializeOwned>(row: &Row) -> Result<T, Error> {
    serde_json::from_value(serde_json::Value::Object(row.clone())).map_err(|e| Error::Decode(e.to_string()))
}

/// Failures the callers branch on. Everything else is `Backend` and ends as an opaque 500.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// A guarded batch's assertion found its preconditions false; the batch was rolled back.
    #[error("a guarded batch's preconditions no longer hold")]
    Stale,
    /// The statement would exceed a D1 per-statement limit; it was never sent.
    #[error("statement exceeds a D1 limit: {0}")]
    LimitExceeded(String),
    /// A UNIQUE or PRIMARY KEY constraint rejected the write.
    #[error("unique constraint failed: {0}")]
    Unique(String),
    /// A capture trigger refused a content write (the collection is not actively captured).
    #[error("media usage capture inactive")]
    CaptureInactive,
    /// Another constraint (NOT NULL, CHECK, FOREIGN KEY) rejected the write.
    #[error("constraint failed: {0}")]
    Constraint(String),
    /// The fault injector failed this statement (tests and `MEDIA_USAGE_FAULT_AFTER_STATEMENTS`).
    #[error("injected fault at statement {0}")]
    Fault(u64),
    /// A string, BLOB or row would pass D1's 2,000,000-byte limit; nothing was written.
    #[error("value or row too big: {0}")]
    TooBig(String),
    /// A statement named a table that does not exist: the table's name (the whole message when
    /// it names none). A missing content table is a collection dropped by its deletion while a
    /// request or job still held its name ([`Error::is_missing_content_table`]); a missing system
    /// table is a broken database.
    #[error("no such table: {0}")]
    NoSuchTable(String),
    /// A statement named a column its table does not have: a field deleted (its column renamed
    /// out of reach) while a request that had read the field still wrote it. Nothing was written.
    #[error("no such column: {0}")]
    NoSuchColumn(String),
    /// The database reported a transient failure (D1: the network connection was lost, the
    /// storage object was reset): the statement, or the whole batch, may or may not have been
    /// committed. D1 retries read-only queries itself; a write is never retried by D1, and this
    /// crate retries none within an invocation (docs/errors-and-retries.md).
    #[error("transient database error; the write may have been committed: {0}")]
    Transient(String),
    /// A row did not have the shape the caller expected.
    #[error("row decode failed: {0}")]
    Decode(String),
    #[error("database error: {0}")]
    Backend(String),
}

impl Error {
    /// Whether a collection's content table (`ec_<slug>`) is what was missing — the one missing
    /// table that means a collection is gone rather than that the database is broken.
    pub fn is_missing_content_table(&self) -> bool {
        matches!(self, Error::NoSuchTable(table) if table.starts_with(crate::sql::CONTENT_TABLE_PREFIX))
    }

    /// The column a statement named that its table does not have (`NoSuchColumn`).
    pub fn missing_column(&self) -> Option<&str> {
        let Error::NoSuchColumn(message) = self else { return None };
        const NEEDLE: &str = "no such column: ";
        let at = message.to_ascii_lowercase().find(NEEDLE)? + NEEDLE.len();
        let rest = &message[at..];
        let end = rest.find(|c: char| !(c.is_ascii_alphanumeric() || c == '_' || c == '.')).unwrap_or(rest.len());
        let name = &rest[..end];
        let name = name.rsplit('.').next().unwrap_or(name);
        (!name.is_empty()).then_some(name)
    }

    /// Whether the failed statement may nevertheless have been committed: a transient error, or
    /// an error nobody classified. A refusal (a constraint, a failed guard, a limit, a missing
    /// table, a statement never sent) committed nothing.
    pub fn may_have_committed(&self) -> bool {
        matches!(self, Error::Transient(_) | Error::Backend(_))
    }
}

/// How D1 words the transient errors it documents as retryable (`retry-queries`): whatever the
/// statement did may have been committed.
const TRANSIENT_MESSAGES: &[&str] =
    &["network connection lost", "storage caused object to be reset", "reset because its code was updated"];

/// The table a "no such table" message names (without a `main.` schema prefix), if any.
fn missing_table(message: &str) -> Option<&str> {
    const NEEDLE: &str = "no such table: ";
    let at = message.to_ascii_lowercase().find(NEEDLE)? + NEEDLE.len();
    let rest = &message[at..];
    let end = rest.find(|c: char| !(c.is_ascii_alphanumeric() || c == '_' || c == '.')).unwrap_or(rest.len());
    let name = &rest[..end];
    let name = name.strip_prefix("main.").unwrap_or(name);
    (!name.is_empty()).then_some(name)
}

/// Maps an SQLite/D1 error message to an [`Error`]. Both backends share this one classifier.
pub fn classify(message: &str) -> Error {
    let lower = message.to_ascii_lowercase();
    if lower.contains("not null constraint failed: _emdash_batch_guard.id") {
        Error::Stale
    } else if lower.contains("media usage capture inactive") {
        Error::CaptureInactive
    } else if lower.contains("unique constraint failed") {
        Error::Unique(message.to_owned())
    } else if lower.contains("constraint failed") {
        Error::Constraint(message.to_owned())
    } else if lower.contains("string or blob too big") {
        Error::TooBig(message.to_owned())
    } else if lower.contains("no such table") {
        Error::NoSuchTable(missing_table(message).unwrap_or(message).to_owned())
    } else if lower.contains("no such column") {
        Error::NoSuchColumn(message.to_owned())
    } else if TRANSIENT_MESSAGES.iter().any(|m| lower.contains(m)) {
        Error::Transient(message.to_owned())
    } else {
        Error::Backend(message.to_owned())
    }
}

/// Runs statements. D1 has no interactive transactions, so neither does this trait: a
/// multi-statement change is one [`Executor::batch`] (atomic) or a sequence of individually
/// guarded statements.
#[allow(async_fn_in_trait)] // Single-threaded on workerd and in native tests; no Send bound.
pub trait Executor {
    /// Runs one statement.
    async fn run(&self, stmt: Statement) -> Result<Outcome, Error>;

    /// Runs statements atomically: all apply, or none does.
    async fn batch(&self, stmts: Vec<Statement>) -> Result<Vec<Outcome>, Error>;

    /// Runs a statement and decodes its rows.
    async fn query<T: DeserializeOwned>(&self, stmt: Statement) -> Result<Vec<T>, Error> {
        self.run(stmt).await?.decode()
    }

    /// Runs a statement and decodes its first row.
    async fn query_first<T: DeserializeOwned>(&self, stmt: Statement) -> Result<Option<T>, Error> {
        self.run(stmt).await?.first()
    }

    /// Runs a statement and returns the number of rows it changed.
    async fn execute(&self, stmt: Statement) -> Result<u64, Error> {
        Ok(self.run(stmt).await?.changes)
    }
}

impl<E: Executor> Executor for &E {
    async fn run(&self, stmt: Statement) -> Result<Outcome, Error> {
        (**self).run(stmt).await
    }

    async fn batch(&self, stmts: Vec<Statement>) -> Result<Vec<Outcome>, Error> {
        (**self).batch(stmts).await
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn limits_reject_what_d1_rejects() {
        let mut ok = Statement::new("SELECT 1");
        for i in 0..100 {
            ok = ok.bind(i64::from(i));
        }
        assert!(ok.check_limits().is_ok());
        let too_many = ok.bind(1i64);
        assert!(matches!(too_many.check_limits(), Err(Error::LimitExceeded(_))));
        let long = Statement::new(format!("SELECT '{}'", "x".repeat(MAX_SQL_BYTES)));
        assert!(matches!(long.check_limits(), Err(Error::LimitExceeded(_))));
        let big = Statement::new("SELECT ?1").bind(MAX_SAFE_INTEGER + 1);
        assert!(matches!(big.check_limits(), Err(Error::LimitExceeded(_))));
        assert!(Statement::new("SELECT ?1").bind(-MAX_SAFE_INTEGER).check_limits().is_ok());
    }

    #[test]
    fn classifier_maps_only_the_guard_column_to_stale() {
        assert!(matches!(
            classify("D1_ERROR: NOT NULL constraint failed: _emdash_batch_guard.id: SQLITE_CONSTRAINT"),
            Error::Stale
        ));
        assert!(matches!(classify("NOT NULL constraint failed: media.filename"), Error::Constraint(_)));
        assert!(matches!(classify("UNIQUE constraint failed: media.storage_key"), Error::Unique(_)));
        assert!(matches!(classify("media usage capture inactive"), Error::CaptureInactive));
        assert!(matches!(classify("D1_ERROR: no such table: ec_posts: SQLITE_ERROR"), Error::NoSuchTable(_)));
        assert!(matches!(classify("D1_ERROR: string or blob too big: SQLITE_TOOBIG"), Error::TooBig(_)));
        assert!(matches!(classify("D1_ERROR: no such column: hero: SQLITE_ERROR"), Error::NoSuchColumn(_)));
        assert!(!classify("no such column: x").may_have_committed());
        assert_eq!(classify("D1_ERROR: no such column: hero: SQLITE_ERROR").missing_column(), Some("hero"));
        assert_eq!(classify("no such column: e.hero").missing_column(), Some("hero"));
        assert_eq!(classify("no such column: ").missing_column(), None);
        assert_eq!(Error::Backend("no such column: hero".into()).missing_column(), None);
        for m in [
            "D1_ERROR: Network connection lost.",
            "D1_ERROR: Internal error while starting up D1 DB storage caused object to be reset.",
            "Durable Object reset because its code was updated.",
        ] {
            let e = classify(m);
            assert!(matches!(e, Error::Transient(_)) && e.may_have_committed(), "{m}");
        }
        assert!(!classify("UNIQUE constraint failed: media.storage_key").may_have_committed());
        assert!(!Error::Fault(1).may_have_committed());
    }

    #[test]
    fn only_a_missing_content_table_means_a_collection_is_gone() {
        let table = |m: &str| match classify(m) {
            Error::NoSuchTable(t) => t,
            other => panic!("{other:?}"),
        };
        assert_eq!(table("D1_ERROR: no such table: ec_posts: SQLITE_ERROR"), "ec_posts");
        assert_eq!(table("no such table: main.ec_posts"), "ec_posts");
        assert_eq!(table("no such table: media"), "media");
        assert_eq!(table("No such table: _emdash_collections (code 1)"), "_emdash_collections");
        assert!(classify("D1_ERROR: no such table: ec_posts: SQLITE_ERROR").is_missing_content_table());
        for m in ["no such table: media", "no such table: _emdash_collections", "no such table: ", "no such table"] {
            assert!(!classify(m).is_missing_content_table(), "{m}");
        }
        assert!(!Error::Backend("no such table: ec_x".into()).is_missing_content_table());
    }
}
