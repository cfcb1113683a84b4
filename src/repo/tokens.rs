//! API tokens, stored as SHA-256 hashes with a role, scopes and an optional expiry.

use serde::Deserialize;

use crate::exec::{Error, Executor, Statement};
use crate::ids;
use crate::model::auth::{Role, Scope};

const INSERT: &str = include_str!("../sql/tokens/insert.sql");
const FIND_BY_HASH: &str = include_str!("../sql/tokens/find_by_hash.sql");
const TOUCH: &str = include_str!("../sql/tokens/touch.sql");
const LIST: &str = include_str!("../sql/tokens/list.sql");
const DELETE: &str = include_str!("../sql/tokens/delete.sql");

/// A live stored token as authentication reads it (never the secret itself).
#[derive(Debug, Clone, Deserialize)]
pub struct TokenRow {
    pub id: String,
    pub role: i64,
    /// JSON array of scope names.
    pub scopes: String,
    /// Lowercase hex SHA-256 of the secret.
    pub token_hash: String,
    /// Its last use was recorded more than a minute ago (or never).
    pub touch: i64,
}

/// A token as operators see it: no secret, no hash.
#[derive(Debug, Clone, Deserialize, PartialEq)]
pub struct TokenInfo {
    pub id: String,
    pub name: String,
    pub role: i64,
    /// JSON array of scope names.
    pub scopes: String,
    pub created_at: String,
    pub last_used_at: Option<String>,
    pub expires_at: Option<String>,
}

/// Stores a token hash; `None` when `expires_at` does not lie in the future (by the database
/// clock) or is not a date-time the database understands.
pub async fn insert<E: Executor>(
    exec: &E,
    name: &str,
    hash_hex: &str,
    role: Role,
    scopes: &[Scope],
    expires_at: Option<&str>,
) -> Result<Option<TokenInfo>, Error> {
    let names: Vec<&str> = scopes.iter().map(|s| s.name()).collect();
    let scopes_json = serde_json::to_string(&names).map_err(|e| Error::Backend(e.to_string()))?;
    let stmt = Statement::new(INSERT)
        .bind(ids::new_id())
        .bind(name)
        .bind(hash_hex)
        .bind(role.level())
        .bind(scopes_json)
        .bind(expires_at);
    exec.query_first(stmt).await
}

/// The live (unexpired) token with this hash.
pub async fn find_by_hash<E: Executor>(exec: &E, hash_hex: &str) -> Result<Option<TokenRow>, Error> {
    exec.query_first(Statement::new(FIND_BY_HASH).bind(hash_hex)).await
}

/// Records a use of the token, unless one was recorded within the last minute.
pub async fn touch<E: Executor>(exec: &E, id: &str) -> Result<(), Error> {
    exec.execute(Statement::new(TOUCH).bind(id)).await.map(drop)
}

/// Tokens, newest first: up to `limit` rows after the `(created_at, id)` position.
pub async fn list<E: Executor>(exec: &E, after: Option<(String, String)>, limit: u32) -> Result<Vec<TokenInfo>, Error> {
    let (at, id) = after.unzip();
    exec.query(Statement::new(LIST).bind(at).bind(id).bind(i64::from(limit))).await
}

/// Revokes a token at once; false when no token has this id.
pub async fn delete<E: Executor>(exec: &E, id: &str) -> Result<bool, Error> {
    Ok(exec.execute(Statement::new(DELETE).bind(id)).await? > 0)
}
