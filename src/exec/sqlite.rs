//! Native executor over bundled SQLite, configured to fail where D1 fails.
//!
//! Foreign keys are on (D1 enforces them), strings and rows stop at D1's 2,000,000 bytes,
//! statements over D1's limits are refused before SQLite sees them, and a batch runs in one
//! transaction (D1 batches are atomic).
//!
//! Rows read and written approximate what D1's meta reports (D1 counts them inside its SQLite;
//! stock SQLite has no such counters). Measured on local D1: an inserted row writes itself and
//! each of its table's indexes, a deleted row writes one and reads itself and each index, an
//! updated row writes itself and the indexes its new values touch, and a query reads every row
//! it visits. Here, from SQLite's update hook (every row a statement or its triggers change,
//! with its table): an insert writes `1 + indexes`, an update `1 + indexes` (every index, so at
//! least D1's figure), a delete `1`; reads are the rows returned, the full-scan steps, and
//! `1 + indexes` per row changed. Index range reads of a query are not counted, so a query's
//! reads here can be below D1's; the workerd tests assert D1's own figures.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use rusqlite::hooks::Action;
use rusqlite::types::ValueRef;
use rusqlite::{Connection, StatementStatus};

use super::{classify, Error, Executor, Outcome, Row, Statement, Value};
use crate::migrations;

/// Prepared statements kept per connection: more than the crate has distinct statement texts
/// on any one path.
const STATEMENT_CACHE: usize = 512;

#[derive(Debug)]
pub struct SqliteExecutor {
    conn: Connection,
    /// The rows the statement under way changed (by its triggers too): action and table.
    changed: Arc<Mutex<Vec<(Action, String)>>>,
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
        conn.set_prepared_statement_cache_capacity(STATEMENT_CACHE);
        let changed = Arc::new(Mutex::new(Vec::new()));
        let sink = Arc::clone(&changed);
        conn.update_hook(Some(move |action: Action, _db: &str, table: &str, _rowid: i64| {
            if let Ok(mut rows) = sink.lock() {
                rows.push((action, table.to_owned()));
            }
        }));
        Ok(SqliteExecutor { conn, changed })
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
        // Changes made outside statements (test fixtures through `connection`) cost nothing.
        if let Ok(mut rows) = self.changed.lock() {
            rows.clear();
        }
        let map = |e: rusqlite::Error| classify(&e.to_string());
        // Prepared once per text and kept (the crate's statements are few and reused); SQLite
        // prepares a kept statement again itself after a schema change.
        let mut prepared = self.conn.prepare_cached(stmt.sql()).map_err(map)?;
        prepared.reset_status(StatementStatus::FullscanStep);
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
        let readonly = prepared.readonly();
        let before = self.conn.total_changes();
        let mut rows = Vec::new();
        {
            let mut cursor = prepared.raw_query();
            // The columns as the statement has them once stepped: a kept statement prepared
            // again after a schema change (`SELECT *` of a table that gained a column) has the
            // new ones.
            let mut names: Vec<String> = Vec::new();
            while let Some(row) = cursor.next().map_err(map)? {
                if names.is_empty() {
                    let stmt = row.as_ref();
                    names = (0..stmt.column_count())
                        .map(|i| stmt.column_name(i).map_or_else(|_| String::new(), str::to_owned))
                        .collect();
                }
                let mut out = Row::new();
                for (i, name) in names.iter().enumerate() {
                    out.insert(name.clone(), to_json(row.get_ref(i).map_err(map)?));
                }
                rows.push(out);
            }
        }
        let changes = if readonly { 0 } else { self.conn.total_changes().saturating_sub(before) };
        let scanned = u64::try_from(prepared.get_status(StatementStatus::FullscanStep)).unwrap_or(0);
        drop(prepared);
        let (changed_read, rows_written) = self.changed_rows();
        Ok(Outcome { rows_read: rows.len() as u64 + scanned + changed_read, rows, changes, rows_written })
    }

    /// What the rows the last statement changed cost, as (rows read, rows written): see the
    /// module's note. Clears the record.
    fn changed_rows(&self) -> (u64, u64) {
        let changed = self.changed.lock().map(|mut rows| std::mem::take(&mut *rows)).unwrap_or_default();
        let mut indexes: HashMap<String, u64> = HashMap::new();
        let (mut read, mut written) = (0, 0);
        for (action, table) in changed {
            let n = match indexes.get(&table) {
                Some(n) => *n,
                None => {
                    let n = self
                        .conn
                        .query_row("SELECT count(*) FROM pragma_index_list(?1)", [&table], |r| r.get::<_, i64>(0))
                        .map_or(0, |n| u64::try_from(n).unwrap_or(0));
                    indexes.insert(table, n);
                    n
                }
            };
            read += 1 + n;
            written += match action {
                Action::SQLITE_DELETE => 1,
                _ => 1 + n,
            };
        }
        (read, written)
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
