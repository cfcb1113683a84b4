//! `/admin/tokens`: mint (the secret is shown once, only its hash is kept), list and revoke API
//! tokens.

use serde_json::{json, Value as Json};

use super::error::ApiError;
use super::input::{self, json_body, Issues, Obj};
use super::{Ctx, Reply, Request};
use crate::exec::Executor;
use crate::ids;
use crate::model::auth::{hash_token, Role, Scope};
use crate::model::field::is_iso_datetime;
use crate::repo::tokens::{self as repo, TokenInfo};

/// Prefix that makes leaked tokens recognisable to secret scanners.
pub const TOKEN_PREFIX: &str = "emdash_";

fn token_json(t: &TokenInfo) -> Json {
    let scopes: Vec<String> = serde_json::from_str(&t.scopes).unwrap_or_default();
    json!({
        "id": t.id,
        "name": t.name,
        "role": Role::from_level(t.role).map(Role::name),
        "scopes": scopes,
        "createdAt": t.created_at,
        "lastUsedAt": t.last_used_at,
        "expiresAt": t.expires_at,
    })
}

/// `POST /admin/tokens {name, role, scopes, expiresAt?}`: a token never carries a role or a
/// scope its minter lacks.
pub async fn create<E: Executor>(ctx: &Ctx<'_, E>, req: &Request) -> Result<Reply, ApiError> {
    let body = json_body(req)?;
    let mut issues = Issues::default();
    let Some(obj) = Obj::new(&mut issues, "", &body, &["name", "role", "scopes", "expiresAt"]) else {
        return Err(issues.finish().unwrap_err());
    };
    let name = obj.string(&mut issues, "name", true, 1, 100);
    let role = obj.string(&mut issues, "role", true, 1, 32).and_then(|r| {
        let parsed = Role::parse(&r);
        if parsed.is_none() {
            issues.add("role", "Expected subscriber, contributor, author, editor or admin");
        }
        parsed
    });
    let mut scopes = Vec::new();
    if let Some(list) = obj.array(&mut issues, "scopes", true) {
        if list.is_empty() {
            issues.add("scopes", "At least one scope is required");
        }
        for (i, v) in list.iter().enumerate() {
            match v.as_str().and_then(Scope::parse) {
                Some(s) if !scopes.contains(&s) => scopes.push(s),
                Some(_) => issues.add(format!("scopes[{i}]"), "Duplicate scope"),
                None => issues.add(format!("scopes[{i}]"), "Unknown scope"),
            }
        }
    }
    let expires_at = obj.string(&mut issues, "expiresAt", false, 10, 40);
    if expires_at.as_deref().is_some_and(|e| !is_iso_datetime(e) || e.len() == 10) {
        issues.add("expiresAt", "Expected an ISO-8601 date-time with a time zone, e.g. 2027-01-01T00:00:00Z");
    }
    let (name, role) = issues.finish_with(name.zip(role))?;
    // The route requires a principal; a token may not grant more than its minter holds.
    let minter = ctx.principal.as_ref().ok_or_else(|| ApiError::new(401, "UNAUTHORIZED", "Authentication required"))?;
    if role > minter.role {
        return Err(ApiError::new(
            403,
            "INSUFFICIENT_SCOPE",
            format!("Cannot mint a token with the {} role: above your own", role.name()),
        ));
    }
    if let Some(s) = scopes.iter().find(|s| !minter.has_scope(**s)) {
        return Err(ApiError::new(
            403,
            "INSUFFICIENT_SCOPE",
            format!("Cannot mint a token with the {} scope: you lack it", s.name()),
        ));
    }
    let token = format!("{TOKEN_PREFIX}{}", ids::new_secret());
    let hash = hex::encode(hash_token(&token));
    let Some(info) = repo::insert(ctx.exec, &name, &hash, role, &scopes, expires_at.as_deref()).await? else {
        let mut issues = Issues::default();
        issues.add("expiresAt", "Must lie in the future");
        return Err(issues.finish().unwrap_err());
    };
    let mut out = token_json(&info);
    out["token"] = json!(token);
    Ok((201, out))
}

/// `GET /admin/tokens?limit=&cursor=`: tokens, newest first, without secrets.
pub async fn list<E: Executor>(ctx: &Ctx<'_, E>, req: &Request) -> Result<Reply, ApiError> {
    let mut issues = Issues::default();
    let limit = input::limit(req, &mut issues);
    let after = input::cursor(req, &mut issues)?;
    issues.finish()?;
    let mut rows = repo::list(ctx.exec, after, limit + 1).await?;
    let next = input::paginate(&mut rows, limit, |t| (t.created_at.clone(), t.id.clone()));
    Ok((200, json!({"items": rows.iter().map(token_json).collect::<Vec<_>>(), "nextCursor": next})))
}

/// `DELETE /admin/tokens/{id}`: revokes at once; 404 when no token has this id.
pub async fn revoke<E: Executor>(ctx: &Ctx<'_, E>, id: &str) -> Result<Reply, ApiError> {
    if id.len() > 64 || !repo::delete(ctx.exec, id).await? {
        return Err(ApiError::not_found("No token has this id"));
    }
    Ok((200, json!({"id": id})))
}
