//! Native executor over bundled SQLite, configured to fail where D1 fails.
//!
//! Foreign keys are on (D1 enforces them), strings and rows stop at D1's 2,000,000 bytes,
//! statements over D1's limits are refused before SQLite sees them, and a batch runs in one
//! transaction (D1 batches are atomic).

use rusqlite::types::ValueRef;
use rusqlite::Connection;

use super::{classify, Error, Executor, Outcome, Row, Statement, Value};
use crate::migrations;

#[derive(Debug)]
pub struct SqliteExecutor {
    conn: Connection,
}

impl SqliteExecutor {
    /// A fresh in-memory database with every migration applied.
    pub fn open_in_memory() -> Result<Self, Error> {
        let exec = Self::open_in_memory_unmigrated()?;
        for m in migrations::ALL {
            exec.conn.execute_batch(m.sql).map_err(|e| classify(&e.to_string()))?;
        }
        Ok(exec)
    }

    /// A fresh in-memory database with no schema (for migration tests).
    pub fn open_in_memory_unmigrated() -> Result<Self, Error> {
        let conn = Connection::open_in_memory().map_err(|e| Error::Backend(e.to_string()))?;
        conn.execute_batch("PRAGMA foreign_keys = ON;").map_err(|e| Error::Backend(e.to_string()))?;
        // D1's largest string, BLOB or row.
        conn.set_limit(rusqlite::limits::Limit::SQLITE_LIMIT_LENGTH, super::MAX_ROW_BYTES)
            .map_err(|e| Error::Backend(e.to_string()))?;
        // D1's compound selects: a statement with more arms fails here as it would there.
        conn.set_limit(rusqlite::limits::Limit::SQLITE_LIMIT_COMPOUND_SELECT, super::MAX_COMPOUND_SELECT)
            .map_err(|e| Error::Backend(e.to_string()))?;
        Ok(SqliteExecutor { conn })
    }

    /// A copy of this database in a new in-memory database, configured alike: a fixture built
    /// once and copied for each run of a matrix of fault tests.
    pub fn snapshot(&self) -> Result<Self, Error> {
        let mut copy = Self::open_in_memory_unmigrated()?;
        rusqlite::backup::Backup::new(&self.conn, &mut copy.conn)
            .and_then(|b| b.run_to_completion(1 << 20, std::time::Duration::ZERO, None))
            .map_err(|e| Error::Backend(e.to_string()))?;
        Ok(copy)
    }

    /// The raw connection, for test fixtures and schema inspection.
    pub fn connection(&self) -> &Connection {
        &self.conn
    }

    fn run_one(&self, stmt: &Statement) -> Result<Outcome, Error> {
        stmt.check_limits()?;
        let map = |e: rusqlite::Error| classify(&e.to_string());
        let mut prepared = self.conn.prepare(stmt.sql()).map_err(map)?;
        for (i, value) in stmt.params().iter().enumerate() {
            let idx = i + 1;
            match value {
                Value::Null => prepared.raw_bind_parameter(idx, rusqlite::types::Null),
                Value::Integer(v) => prepared.raw_bind_parameter(idx, v),
                Value::Real(v) => prepared.raw_bind_parameter(idx, v),
                Value::Text(v) => prepared.raw_bind_parameter(idx, v),
            }
            .map_err(map)?;
        }
        let names: Vec<String> = prepared.column_names().iter().map(|s| (*s).to_owned()).collect();
        let readonly = prepared.readonly();
        let before = self.conn.total_changes();
        let mut rows = Vec::new();
        {
            let mut cursor = prepared.raw_query();
            while let Some(row) = cursor.next().map_err(map)? {
                let mut out = Row::new();
                for (i, name) in names.iter().enumerate() {
                    out.insert(name.clone(), to_json(row.get_ref(i).map_err(map)?));
                }
                rows.push(out);
            }
        }
        let changes = if readonly { 0 } else { self.conn.total_changes().saturating_sub(before) };
        // D1 bills the rows a statement reads; SQLite counts the steps of its full table scans
        // (foreign-key checks included), which is the part that grows with a table. Rows read
        // here are the larger of those steps and the rows returned: an index lookup reads about
        // what it returns, and a scan shows.
        let scanned = u64::try_from(prepared.get_status(rusqlite::StatementStatus::FullscanStep)).unwrap_or(0);
        Ok(Outcome { rows_read: (rows.len() as u64).max(scanned), rows, changes, rows_written: changes })
    }
}

fn to_json(value: ValueRef<'_>) -> serde_json::Value {
    match value {
        ValueRef::Null => serde_json::Value::Null,
        ValueRef::Integer(i) => i.into(),
        ValueRef::Real(f) => serde_json::Number::from_f64(f).map_or(serde_json::Value::Null, Into::into),
        ValueRef::Text(t) => String::from_utf8_lossy(t).into_owned().into(),
        ValueRef::Blob(b) => b.iter().map(|x| serde_json::Value::from(*x)).collect(),
    }
}

impl Executor for SqliteExecutor {
    async fn run(&self, stmt: Statement) -> Result<Outcome, Error> {
        self.run_one(&stmt)
    }

    async fn batch(&self, stmts: Vec<Statement>) -> Result<Vec<Outcome>, Error> {
        for stmt in &stmts {
            stmt.check_limits()?;
        }
        let tx = self.conn.unchecked_transaction().map_err(|e| classify(&e.to_string()))?;
        let outcomes = stmts.iter().map(|s| self.run_one(s)).collect::<Result<Vec<_>, _>>()?;
        tx.commit().map_err(|e| classify(&e.to_string()))?;
        Ok(outcomes)
    }
}
