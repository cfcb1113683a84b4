//! Domain types: validated identifiers, the field and content model, roles and scopes.
//!
//! Pure: nothing here names the executor, SQL text, the repository, the API or the edge. How a
//! value is bound to a statement lives in `repo::encode`, how a row is shown in `api`, and how a
//! collection's table is named in `sql`.

pub mod auth;
pub mod collection;
pub mod content;
pub mod decomposed;
pub mod field;
pub mod ident;
pub mod source;
pub mod state;
pub mod time;

/// The largest integer the index stores and hands on exactly: D1 carries integers through
/// JavaScript numbers, so only those within ±(2^53 − 1) round-trip (versions, sizes, cursor ids).
pub const MAX_SAFE_INTEGER: i64 = (1 << 53) - 1;
