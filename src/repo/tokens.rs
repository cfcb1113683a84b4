//! API tokens, stored as SHA-256 hashes with a role and scopes.

use serde::Deserialize;

use crate::exec::{Error, Executor, Statement};
use crate::ids;
use crate::model::auth::{Role, Scope};

const INSERT: &str = include_str!("../sql/tokens/insert.sql");
const FIND_BY_HASH: &str = include_str!("../sql/tokens/find_by_hash.sql");

/// A stored token (never the secret itself).
#[derive(Debug, Clone, Deserialize)]
pub struct TokenRow {
    pub id: String,
    pub role: i64,
    /// JSON array of scope names.
    pub scopes: String,
    /// Lowercase hex SHA-256 of the secret.
    pub token_hash: String,
}

/// Stores a token hash and returns the token's id.
pub async fn insert<E: Executor>(
    exec: &E,
    name: &str,
    hash_hex: &str,
    role: Role,
    scopes: &[Scope],
) -> Result<String, Error> {
    let id = ids::new_id();
    let names: Vec<&str> = scopes.iter().map(|s| s.name()).collect();
    let scopes_json = serde_json::to_string(&names).map_err(|e| Error::Backend(e.to_string()))?;
    exec.execute(
        Statement::new(INSERT).bind(id.as_str()).bind(name).bind(hash_hex).bind(role.level()).bind(scopes_json),
    )
    .await?;
    Ok(id)
}

pub async fn find_by_hash<E: Executor>(exec: &E, hash_hex: &str) -> Result<Option<TokenRow>, Error> {
    exec.query_first(Statement::new(FIND_BY_HASH).bind(hash_hex)).await
}
