//! Bearer-token authentication and role/scope authorization.

use super::error::ApiError;
use super::Config;
use crate::exec::Executor;
use crate::model::auth::{
    has_stored_token_shape, hash_token, hashes_equal, Principal, Role, Scope, BOOTSTRAP_TOKEN_ID, MAX_TOKEN_BYTES,
};
use crate::repo::tokens;

/// Resolves the `Authorization` header to a principal: the bootstrap admin token (compared by
/// hash, in constant time; see [`crate::model::auth::bootstrap_hash`]) or a stored token (one
/// indexed read, only for a token of a minted token's shape). No header → `None`; a bad header or
/// an unknown token → 401.
pub async fn authenticate<E: Executor>(
    exec: &E,
    config: &Config,
    header: Option<&str>,
) -> Result<Option<Principal>, ApiError> {
    let Some(header) = header else {
        return Ok(None);
    };
    let unauthorized = || ApiError::new(401, "UNAUTHORIZED", "Invalid or unknown token");
    // The scheme name is case-insensitive (RFC 7235 §2.1).
    let token = header
        .split_once(' ')
        .filter(|(scheme, _)| scheme.eq_ignore_ascii_case("Bearer"))
        .map(|(_, t)| t.trim())
        .filter(|t| !t.is_empty() && t.len() <= MAX_TOKEN_BYTES)
        .ok_or_else(unauthorized)?;
    let hash = hash_token(token);
    if let Some(admin) = &config.admin_token_hash {
        if hashes_equal(admin, &hash) {
            return Ok(Some(Principal {
                token_id: BOOTSTRAP_TOKEN_ID.into(),
                role: Role::Admin,
                scopes: Scope::ALL.to_vec(),
            }));
        }
    }
    // Only a token of a minted token's shape can be stored: any other reads nothing.
    if !has_stored_token_shape(token) {
        return Err(unauthorized());
    }
    let hash_hex = hex::encode(hash);
    let row = tokens::find_by_hash(exec, &hash_hex).await?.ok_or_else(unauthorized)?;
    let mut stored = [0u8; 32];
    hex::decode_to_slice(&row.token_hash, &mut stored).map_err(|_| unauthorized())?;
    if !hashes_equal(&stored, &hash) {
        return Err(unauthorized());
    }
    let role = Role::from_level(row.role)
        .ok_or_else(|| ApiError::internal(format!("token {} has role {}", row.id, row.role)))?;
    let names: Vec<String> = serde_json::from_str(&row.scopes).map_err(|e| ApiError::internal(e.to_string()))?;
    let scopes = names.iter().filter_map(|n| Scope::parse(n)).collect();
    // At most one write a minute per token; a failed write does not fail the request.
    if row.touch != 0 {
        let _ = tokens::touch(exec, &row.id).await;
    }
    Ok(Some(Principal { token_id: row.id, role, scopes }))
}

/// No principal → 401; role below the floor → 403 `FORBIDDEN`; scope missing → 403
/// `INSUFFICIENT_SCOPE`.
pub fn authorize(principal: Option<&Principal>, role: Role, scope: Scope) -> Result<(), ApiError> {
    let p = principal.ok_or_else(|| ApiError::new(401, "UNAUTHORIZED", "Authentication required"))?;
    if p.role < role {
        return Err(ApiError::new(403, "FORBIDDEN", format!("Requires the {} role", role.name())));
    }
    if !p.has_scope(scope) {
        return Err(ApiError::new(403, "INSUFFICIENT_SCOPE", format!("Token lacks the {} scope", scope.name())));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use futures::executor::block_on;

    use super::*;
    use crate::exec::sqlite::SqliteExecutor;

    #[test]
    fn the_bearer_scheme_is_case_insensitive() {
        let exec = SqliteExecutor::open_in_memory().unwrap();
        let config =
            Config { admin_token_hash: Some(hash_token("secret-0123456789abcdef0123456789")), ..Config::default() };
        for header in [
            "Bearer secret-0123456789abcdef0123456789",
            "bearer secret-0123456789abcdef0123456789",
            "BEARER  secret-0123456789abcdef0123456789 ",
        ] {
            let p = block_on(authenticate(&exec, &config, Some(header))).unwrap();
            assert_eq!(p.map(|p| p.role), Some(Role::Admin), "{header}");
        }
        for header in [
            "Bearer",
            "Bearer ",
            "Basic secret-0123456789abcdef0123456789",
            "secret-0123456789abcdef0123456789",
            "Bearersecret-0123456789abcdef0123456789",
        ] {
            let e = block_on(authenticate(&exec, &config, Some(header))).unwrap_err();
            assert_eq!(e.status, 401, "{header}");
        }
    }
}
