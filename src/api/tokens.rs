//! `/admin/tokens`: mint (the secret is shown once, only its hash is kept), list and revoke API
//! tokens. Each token records its minter (`createdBy`) and never outlives it; a cascade revoke
//! takes everything minted from a token with it.

use serde_json::{json, Value as Json};

use super::error::ApiError;
use super::input::{self, json_body, query_flag, Issues, Obj};
use super::{Ctx, Reply, Request};
use crate::exec::Executor;
use crate::ids;
use crate::model::auth::{hash_token, Role, Scope};
use crate::model::field::is_iso_datetime;
use crate::repo::tokens::{self as repo, MintRefused, NewToken, TokenInfo};

pub use crate::model::auth::TOKEN_PREFIX;

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
        "createdBy": t.created_by,
    })
}

/// `POST /admin/tokens {name, role, scopes, expiresAt?}`: a token never carries a role above its
/// minter's (403 `FORBIDDEN`) or a scope its minter lacks (403 `INSUFFICIENT_SCOPE`), and never
/// outlives its minter: its expiry defaults to the minter's and is capped at it (the bootstrap
/// token's mints are uncapped). A minter revoked or expired since it authenticated → 401.
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
            "FORBIDDEN",
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
    let new = NewToken {
        name: &name,
        hash_hex: &hash,
        role,
        scopes: &scopes,
        expires_at: expires_at.as_deref(),
        minted_by: &minter.token_id,
    };
    let info = match repo::insert(ctx.exec, &new).await? {
        Ok(info) => info,
        Err(MintRefused::BadExpiry) => return Err(ApiError::invalid("expiresAt", "Must lie in the future")),
        Err(MintRefused::MinterGone) => {
            return Err(ApiError::new(401, "UNAUTHORIZED", "The token minting this one was revoked or has expired"))
        }
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
    Ok((200, input::page(rows.iter().map(token_json).collect::<Vec<_>>(), next)))
}

/// `DELETE /admin/tokens/{id}?cascade=`: revokes at once — with `cascade`, also every token
/// minted from it, transitively, in the same statement; 404 when no token has this id. Answers
/// how many tokens were revoked.
pub async fn revoke<E: Executor>(ctx: &Ctx<'_, E>, id: &str, req: &Request) -> Result<Reply, ApiError> {
    let revoked = if id.len() > 64 {
        0
    } else if query_flag(req, "cascade") {
        repo::delete_tree(ctx.exec, id).await?
    } else {
        u64::from(repo::delete(ctx.exec, id).await?)
    };
    if revoked == 0 {
        return Err(ApiError::not_found("No token has this id"));
    }
    Ok((200, json!({"id": id, "revoked": revoked})))
}

#[cfg(test)]
mod tests {
    use futures::executor::block_on;

    use super::*;
    use crate::api::Config;
    use crate::exec::sqlite::SqliteExecutor;
    use crate::model::auth::Principal;

    fn config() -> Config {
        Config::default()
    }

    /// Mints as `principal` through the handler itself (the route lets only admins in).
    fn mint_as(exec: &SqliteExecutor, principal: Principal, body: Json) -> Result<Reply, ApiError> {
        let config = config();
        let ctx = Ctx { exec, config: &config, storage: None, principal: Some(principal), log: Default::default() };
        let req = Request { method: "POST".into(), body: body.to_string().into_bytes(), ..Request::default() };
        block_on(create(&ctx, &req))
    }

    #[test]
    fn a_role_above_the_minters_is_forbidden_and_a_scope_it_lacks_is_insufficient_scope() {
        let exec = SqliteExecutor::open_in_memory().unwrap();
        let editor = Principal {
            token_id: crate::model::auth::BOOTSTRAP_TOKEN_ID.into(),
            role: Role::Editor,
            scopes: vec![Scope::MediaRead],
        };
        let e = mint_as(&exec, editor.clone(), json!({"name": "x", "role": "admin", "scopes": ["media:read"]}))
            .unwrap_err();
        assert_eq!((e.status, e.code), (403, "FORBIDDEN"));
        assert!(e.message.contains("admin role"), "{}", e.message);
        let e = mint_as(&exec, editor.clone(), json!({"name": "x", "role": "editor", "scopes": ["media:write"]}))
            .unwrap_err();
        assert_eq!((e.status, e.code), (403, "INSUFFICIENT_SCOPE"));
        assert!(e.message.contains("media:write"), "{}", e.message);
        let n = |exec: &SqliteExecutor| block_on(repo::list(exec, None, 100)).unwrap().len();
        assert_eq!(n(&exec), 0, "nothing minted");
        let (status, _) =
            mint_as(&exec, editor, json!({"name": "x", "role": "editor", "scopes": ["media:read"]})).unwrap();
        assert_eq!((status, n(&exec)), (201, 1));
    }
}
