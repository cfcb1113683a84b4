//! Roles, scopes and bearer-token hashing.

use sha2::{Digest, Sha256};

/// Roles, ordered by power (EmDash's numeric levels).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Role {
    Subscriber = 10,
    Contributor = 20,
    Author = 30,
    Editor = 40,
    Admin = 50,
}

impl Role {
    pub const ALL: &'static [Role] = &[Role::Subscriber, Role::Contributor, Role::Author, Role::Editor, Role::Admin];

    pub fn parse(name: &str) -> Option<Role> {
        Self::ALL.iter().copied().find(|r| r.name() == name)
    }

    pub fn from_level(level: i64) -> Option<Role> {
        Self::ALL.iter().copied().find(|r| *r as i64 == level)
    }

    pub fn level(self) -> i64 {
        self as i64
    }

    pub fn name(self) -> &'static str {
        match self {
            Role::Subscriber => "subscriber",
            Role::Contributor => "contributor",
            Role::Author => "author",
            Role::Editor => "editor",
            Role::Admin => "admin",
        }
    }
}

/// Token scopes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Scope {
    ContentRead,
    ContentWrite,
    MediaRead,
    MediaWrite,
    SchemaRead,
    SchemaWrite,
    Admin,
}

impl Scope {
    pub const ALL: &'static [Scope] = &[
        Scope::ContentRead,
        Scope::ContentWrite,
        Scope::MediaRead,
        Scope::MediaWrite,
        Scope::SchemaRead,
        Scope::SchemaWrite,
        Scope::Admin,
    ];

    pub fn parse(name: &str) -> Option<Scope> {
        Self::ALL.iter().copied().find(|s| s.name() == name)
    }

    pub fn name(self) -> &'static str {
        match self {
            Scope::ContentRead => "content:read",
            Scope::ContentWrite => "content:write",
            Scope::MediaRead => "media:read",
            Scope::MediaWrite => "media:write",
            Scope::SchemaRead => "schema:read",
            Scope::SchemaWrite => "schema:write",
            Scope::Admin => "admin",
        }
    }
}

/// Who is calling: an authenticated token's role and scopes.
#[derive(Debug, Clone, PartialEq)]
pub struct Principal {
    pub token_id: String,
    pub role: Role,
    pub scopes: Vec<Scope>,
}

impl Principal {
    pub fn has_scope(&self, scope: Scope) -> bool {
        self.scopes.contains(&scope)
    }

    /// The author whose entries alone this principal may change (EmDash's RBAC: below editor,
    /// only entries you authored), or `None` when it may change any entry.
    pub fn only_own(&self) -> Option<&str> {
        (self.role < Role::Editor).then_some(self.token_id.as_str())
    }
}

/// SHA-256 of a bearer token, as stored.
pub fn hash_token(token: &str) -> [u8; 32] {
    Sha256::digest(token.as_bytes()).into()
}

/// Compares two hashes without an early exit, so timing reveals nothing about where they differ.
pub fn hashes_equal(a: &[u8; 32], b: &[u8; 32]) -> bool {
    a.iter().zip(b.iter()).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn roles_and_scopes_parse_by_name() {
        assert_eq!(Role::parse("editor"), Some(Role::Editor));
        assert_eq!(Role::parse("root"), None);
        assert!(Role::Admin > Role::Editor);
        assert_eq!(Role::from_level(30), Some(Role::Author));
        assert_eq!(Scope::parse("media:write"), Some(Scope::MediaWrite));
        assert_eq!(Scope::parse("media:*"), None);
    }

    #[test]
    fn hash_comparison() {
        let a = hash_token("secret");
        assert!(hashes_equal(&a, &hash_token("secret")));
        assert!(!hashes_equal(&a, &hash_token("secreT")));
        assert_eq!(hex::encode(hash_token("abc")), "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
    }
}
