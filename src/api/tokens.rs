//! `POST /admin/tokens`: mint an API token (the secret is shown once, only its hash is kept).

use serde_json::json;

use super::error::ApiError;
use super::input::{json_body, Issues, Obj};
use super::{Ctx, Reply, Request};
use crate::exec::Executor;
use crate::ids;
use crate::model::auth::{hash_token, Role, Scope};
use crate::repo::tokens as repo;

/// Prefix that makes leaked tokens recognisable to secret scanners.
pub const TOKEN_PREFIX: &str = "emdash_";

pub async fn create<E: Executor>(ctx: &Ctx<'_, E>, req: &Request) -> Result<Reply, ApiError> {
    let body = json_body(req)?;
    let mut issues = Issues::default();
    let Some(obj) = Obj::new(&mut issues, "", &body, &["name", "role", "scopes"]) else {
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
    let (name, role) = issues.finish_with(name.zip(role))?;
    let token = format!("{TOKEN_PREFIX}{}", ids::new_secret());
    let id = repo::insert(ctx.exec, &name, &hex::encode(hash_token(&token)), role, &scopes).await?;
    Ok((
        201,
        json!({"id": id, "token": token, "name": name, "role": role.name(),
        "scopes": scopes.iter().map(|s| s.name()).collect::<Vec<_>>()}),
    ))
}
