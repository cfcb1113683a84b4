//! Capture: a collection's coverage row and its three capture triggers, coverage invalidation
//! on schema changes, and the coverage rows the read paths aggregate.

use serde::{Deserialize, Deserializer};
use sha2::{Digest, Sha256};

use super::lease;
use crate::exec::{Error, Executor, Statement};
use crate::model::collection::Collection;
use crate::model::ident::Ident;
use crate::model::state::{CaptureState, CoverageStatus};
use crate::sql::{render, Fragment};

const CAPTURE_TRIGGER: &str = include_str!("../sql/usage/capture_trigger.sql");
const INSERT_STATUS: &str = include_str!("../sql/usage/insert_status.sql");
const INVALIDATE_FOR_SCHEMA_CHANGE: &str = include_str!("../sql/usage/invalidate_for_schema_change.sql");
const COVERAGE_ROWS: &str = include_str!("../sql/usage/coverage_rows.sql");

/// The three capture triggers (after insert, update, delete): suffix, event, row alias.
const TRIGGERS: [(&str, &str, &str); 3] =
    [("_ai", "INSERT", "NEW"), ("_au", "UPDATE", "NEW"), ("_ad", "DELETE", "OLD")];

/// Name of one of a collection's capture triggers, bound to its exact identity:
/// `emdash_mu_<first 16 bytes of sha256("1:<id>:<slug>"), hex>_<suffix>`.
fn trigger_name(collection_id: &str, slug: &Ident, suffix: &str) -> String {
    let digest = Sha256::digest(format!("1:{collection_id}:{slug}").as_bytes());
    format!("emdash_mu_{}{suffix}", hex::encode(&digest[..16]))
}

/// The names of a collection's three capture triggers, as stored in `sqlite_master`.
pub fn trigger_names(collection_id: &str, slug: &Ident) -> [String; 3] {
    TRIGGERS.map(|(suffix, _, _)| trigger_name(collection_id, slug, suffix))
}

/// The statements that start capture for a new collection: its `active` status row and its
/// three triggers. They go into the collection's creation batch. A new collection has no entries,
/// so its coverage is proven under the deployed reference rules (`rules_id`).
pub fn capture_statements(collection_id: &str, slug: &Ident, rules_id: &str) -> Result<Vec<Statement>, Error> {
    let id_literal = Fragment::id_literal(collection_id)
        .ok_or_else(|| Error::Backend(format!("collection id {collection_id:?} is not a generated id")))?;
    let table = Fragment::content_table(slug);
    let slug_literal = Fragment::literal(slug);
    let mut stmts = vec![Statement::new(INSERT_STATUS).bind(slug.as_str()).bind(collection_id).bind(rules_id)];
    for (suffix, event, row) in TRIGGERS {
        let name = Fragment::digest_name(&trigger_name(collection_id, slug, suffix));
        // The trigger queues its entry with the work queue's upsert (`{requeue_work}`).
        let sql = lease::render(
            CAPTURE_TRIGGER,
            &[
                ("trigger", &name),
                ("event", &Fragment::keyword(event)),
                ("table", &table),
                ("row", &Fragment::keyword(row)),
                ("slug", &slug_literal),
                ("collection_id", &id_literal),
            ],
        );
        stmts.push(Statement::new(sql));
    }
    Ok(stmts)
}

/// Invalidates coverage after a schema change that matters for extraction: stale with
/// reconciliation required when the collection has entries.
pub fn invalidate_for_schema_change(c: &Collection) -> Statement {
    Statement::new(render(INVALIDATE_FOR_SCHEMA_CHANGE, &[("table", &Fragment::content_table(&c.slug))]))
        .bind(c.id.as_str())
        .bind(c.slug.as_str())
}

/// One registered collection's coverage row (all `None` when it has no status row).
#[derive(Debug, Clone, Deserialize)]
pub struct CoverageRow {
    pub collection_id: String,
    pub collection: String,
    /// A stored word this code does not know reads as `Unknown`, which keeps coverage from
    /// ever aggregating to `complete` (fail closed) instead of failing every read.
    #[serde(deserialize_with = "lenient_status")]
    pub status: Option<CoverageStatus>,
    pub capture_state: Option<CaptureState>,
    pub change_epoch: Option<i64>,
    pub reconciliation_required: Option<i64>,
    pub last_error_code: Option<String>,
    pub schema_version: Option<i64>,
    /// The reference rules the coverage was proven under (`''`: a re-check was asked for).
    pub rules_version: Option<String>,
    pub indexed_source_count: Option<i64>,
    pub failed_source_count: Option<i64>,
    pub started_at: Option<String>,
    pub completed_at: Option<String>,
}

fn lenient_status<'de, D: Deserializer<'de>>(d: D) -> Result<Option<CoverageStatus>, D::Error> {
    let raw: Option<String> = Option::deserialize(d)?;
    Ok(raw.map(|s| CoverageStatus::parse(&s).unwrap_or(CoverageStatus::Unknown)))
}

/// Every registered collection with its coverage row, by slug.
pub async fn coverage_rows<E: Executor>(exec: &E) -> Result<Vec<CoverageRow>, Error> {
    exec.query(Statement::new(COVERAGE_ROWS)).await
}
