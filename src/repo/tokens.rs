//! API tokens, stored as SHA-256 hashes with a role, scopes and an optional expiry.

use serde::Deserialize;

use crate::exec::{Error, Executor, Statement};
use crate::ids;
use crate::model::auth::{Role, Scope, BOOTSTRAP_TOKEN_ID};

const INSERT: &str = include_str!("../sql/tokens/insert.sql");
const FIND_BY_HASH: &str = include_str!("../sql/tokens/find_by_hash.sql");
const TOUCH: &str = include_str!("../sql/tokens/touch.sql");
const LIST: &str = include_str!("../sql/tokens/list.sql");
const DELETE: &str = include_str!("../sql/tokens/delete.sql");
const DELETE_TREE: &str = include_str!("../sql/tokens/delete_tree.sql");
const EXPIRY_IS_FUTURE: &str = include_str!("../sql/tokens/expiry_is_future.sql");

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
    /// Who minted it: the minter's token id, or `bootstrap`; `None` for tokens minted before
    /// this was recorded.
    pub created_by: Option<String>,
}

/// A token to mint.
#[derive(Debug, Clone, Copy)]
pub struct NewToken<'a> {
    pub name: &'a str,
    /// Lowercase hex SHA-256 of the secret.
    pub hash_hex: &'a str,
    pub role: Role,
    pub scopes: &'a [Scope],
    /// The requested expiry (any ISO-8601 date-time), if any.
    pub expires_at: Option<&'a str>,
    /// The minter's token id ([`BOOTSTRAP_TOKEN_ID`] for the bootstrap token).
    pub minted_by: &'a str,
}

/// Why a mint inserted nothing.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MintRefused {
    /// The requested expiry is not a future date-time the database understands.
    BadExpiry,
    /// The minter's row is gone (revoked) or expired.
    MinterGone,
}

/// Stores a token hash in one statement that inserts only while the minter (unless it is the
/// bootstrap token) still exists and is live. Its expiry is the requested one capped at the
/// minter's stored expiry (the minter's when none is requested); the bootstrap token's mints are
/// uncapped. When nothing was inserted, one more statement tells why.
pub async fn insert<E: Executor>(exec: &E, new: &NewToken<'_>) -> Result<Result<TokenInfo, MintRefused>, Error> {
    let names: Vec<&str> = new.scopes.iter().map(|s| s.name()).collect();
    let scopes_json = serde_json::to_string(&names).map_err(|e| Error::Backend(e.to_string()))?;
    let stored_minter = (new.minted_by != BOOTSTRAP_TOKEN_ID).then_some(new.minted_by);
    let stmt = Statement::new(INSERT)
        .bind(ids::new_id())
        .bind(new.name)
        .bind(new.hash_hex)
        .bind(new.role.level())
        .bind(scopes_json)
        .bind(new.expires_at)
        .bind(stored_minter)
        .bind(new.minted_by);
    if let Some(info) = exec.query_first(stmt).await? {
        return Ok(Ok(info));
    }
    #[derive(Deserialize)]
    struct Future {
        future: i64,
    }
    let check: Option<Future> = exec.query_first(Statement::new(EXPIRY_IS_FUTURE).bind(new.expires_at)).await?;
    Ok(Err(if check.is_some_and(|c| c.future != 0) { MintRefused::MinterGone } else { MintRefused::BadExpiry }))
}

/// A token's `last_used_at` is written at most once per this many seconds (a throttle on
/// writes, not a lease).
pub const TOUCH_INTERVAL_SECONDS: i64 = 60;

/// The live (unexpired) token with this hash.
pub async fn find_by_hash<E: Executor>(exec: &E, hash_hex: &str) -> Result<Option<TokenRow>, Error> {
    exec.query_first(Statement::new(FIND_BY_HASH).bind(hash_hex).bind(TOUCH_INTERVAL_SECONDS)).await
}

/// Records a use of the token, unless one was recorded within the last
/// [`TOUCH_INTERVAL_SECONDS`].
pub async fn touch<E: Executor>(exec: &E, id: &str) -> Result<(), Error> {
    exec.execute(Statement::new(TOUCH).bind(id).bind(TOUCH_INTERVAL_SECONDS)).await.map(drop)
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

/// Revokes a token and every token minted from it, transitively, in one statement; returns how
/// many were revoked (0 when no token has this id).
pub async fn delete_tree<E: Executor>(exec: &E, id: &str) -> Result<u64, Error> {
    // One returned row per revoked token (`changes` would also count trigger writes).
    Ok(exec.run(Statement::new(DELETE_TREE).bind(id)).await?.rows.len() as u64)
}
