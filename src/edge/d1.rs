//! The D1 executor: binds values the way D1 accepts them (integers as JS numbers, never BigInt),
//! enforces the per-statement limits before D1 sees a statement, and classifies D1 errors with
//! the shared classifier.

use wasm_bindgen::JsValue;
use worker::{D1Database, D1PreparedStatement, D1Result};

use crate::exec::{classify, Error, Executor, Outcome, Row, Statement, Value};

#[derive(Debug)]
pub struct D1Executor {
    db: D1Database,
}

impl D1Executor {
    pub fn new(db: D1Database) -> Self {
        D1Executor { db }
    }

    fn prepare(&self, stmt: &Statement) -> Result<D1PreparedStatement, Error> {
        stmt.check_limits()?;
        let values: Vec<JsValue> = stmt
            .params()
            .iter()
            .map(|v| match v {
                Value::Null => JsValue::NULL,
                // Checked to be within ±2^53 by `check_limits`, so exact as a JS number.
                Value::Integer(i) => JsValue::from_f64(*i as f64),
                Value::Real(f) => JsValue::from_f64(*f),
                Value::Text(s) => JsValue::from_str(s),
            })
            .collect();
        self.db.prepare(stmt.sql()).bind(&values).map_err(error)
    }
}

/// The full text of a worker/D1 error (message and cause), for classification and the log.
fn error(e: worker::Error) -> Error {
    let text = match &e {
        worker::Error::D1(d1) => {
            let inner: &js_sys::Error = d1.as_ref();
            format!("{} {}", String::from(inner.message()), d1.cause())
        }
        other => other.to_string(),
    };
    classify(&text)
}

fn outcome(res: D1Result) -> Result<Outcome, Error> {
    if let Some(message) = res.error() {
        return Err(classify(&message));
    }
    let rows: Vec<Row> = res.results::<Row>().map_err(|e| Error::Decode(e.to_string()))?;
    let meta = res.meta().map_err(|e| Error::Decode(e.to_string()))?;
    let (changes, rows_read, rows_written) = meta
        .map(|m| (m.changes.unwrap_or(0), m.rows_read.unwrap_or(0), m.rows_written.unwrap_or(0)))
        .unwrap_or_default();
    Ok(Outcome { rows, changes: changes as u64, rows_read: rows_read as u64, rows_written: rows_written as u64 })
}

impl Executor for D1Executor {
    async fn run(&self, stmt: Statement) -> Result<Outcome, Error> {
        let prepared = self.prepare(&stmt)?;
        outcome(prepared.all().await.map_err(error)?)
    }

    async fn batch(&self, stmts: Vec<Statement>) -> Result<Vec<Outcome>, Error> {
        let prepared = stmts.iter().map(|s| self.prepare(s)).collect::<Result<Vec<_>, _>>()?;
        self.db.batch(prepared).await.map_err(error)?.into_iter().map(outcome).collect()
    }
}
