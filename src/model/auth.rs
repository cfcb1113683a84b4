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

/// The `token_id` of the bootstrap token (`EMDASH_ADMIN_TOKEN`), and what `created_by` records
/// for the tokens it mints. No stored token has it (stored ids are 32 hex digits).
pub const BOOTSTRAP_TOKEN_ID: &str = "bootstrap";

/// The fewest characters a bootstrap secret may have (after trimming).
pub const MIN_BOOTSTRAP_SECRET_CHARS: usize = 32;

/// The longest bearer token, in bytes, that authentication reads.
pub const MAX_TOKEN_BYTES: usize = 512;

/// Prefix that makes leaked tokens recognisable to secret scanners.
pub const TOKEN_PREFIX: &str = "emdash_";

/// Whether `token` has the shape of a minted token (the prefix and 64 lowercase hex digits, a
/// 32-byte secret): any other token can only be the bootstrap token, and is known without the
/// database not to be a stored one.
pub fn has_stored_token_shape(token: &str) -> bool {
    token.strip_prefix(TOKEN_PREFIX).is_some_and(|secret| {
        secret.len() == 64 && secret.bytes().all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b))
    })
}

/// Who is calling: an authenticated token's role and scopes.
#[derive(Debug, Clone, PartialEq)]
pub struct Principal {
    /// The stored token's id, or [`BOOTSTRAP_TOKEN_ID`].
    pub token_id: String,
    pub role: Role,
    pub scopes: Vec<Scope>,
}

impl Principal {
    pub fn has_scope(&self, scope: Scope) -> bool {
        self.scopes.contains(&scope)
    }

    /// The author whose entries and media alone this principal may change (EmDash's RBAC: below
    /// editor, only entries you authored and media you uploaded or registered), or `None` when it
    /// may change any.
    pub fn only_own(&self) -> Option<&str> {
        (self.role < Role::Editor).then_some(self.token_id.as_str())
    }
}

/// SHA-256 of a bearer token, as stored.
pub fn hash_token(token: &str) -> [u8; 32] {
    Sha256::digest(token.as_bytes()).into()
}

/// The hash the bootstrap secret (`EMDASH_ADMIN_TOKEN`) is compared by: the secret trimmed as a
/// presented token is. `Err` says why a secret is ignored (never the secret itself): shorter than
/// [`MIN_BOOTSTRAP_SECRET_CHARS`] characters, or longer than a presented token may be.
pub fn bootstrap_hash(secret: &str) -> Result<[u8; 32], String> {
    let secret = secret.trim();
    let chars = secret.chars().count();
    if chars < MIN_BOOTSTRAP_SECRET_CHARS {
        return Err(format!(
            "EMDASH_ADMIN_TOKEN is ignored: it has {chars} characters after trimming, fewer than \
             {MIN_BOOTSTRAP_SECRET_CHARS}; requests bearing it answer 401"
        ));
    }
    if secret.len() > MAX_TOKEN_BYTES {
        return Err(format!(
            "EMDASH_ADMIN_TOKEN is ignored: it is longer than the {MAX_TOKEN_BYTES} bytes a bearer token may have"
        ));
    }
    Ok(hash_token(secret))
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
    fn the_bootstrap_secret_is_trimmed_and_at_least_32_characters() {
        let long = "0123456789abcdef0123456789abcdef";
        assert_eq!(bootstrap_hash(long), Ok(hash_token(long)));
        assert_eq!(bootstrap_hash(&format!(" \t{long}\n")), Ok(hash_token(long)));
        let short = &long[..31];
        let why = bootstrap_hash(&format!("  {short}   ")).unwrap_err();
        assert!(why.contains("31 characters") && !why.contains(short), "{why}");
        // Characters, not bytes.
        assert!(bootstrap_hash(&"é".repeat(31)).is_err());
        assert!(bootstrap_hash(&"é".repeat(32)).is_ok());
        assert!(bootstrap_hash(&"x".repeat(MAX_TOKEN_BYTES)).is_ok());
        assert!(bootstrap_hash(&"x".repeat(MAX_TOKEN_BYTES + 1)).is_err());
    }

    #[test]
    fn hash_comparison() {
        let a = hash_token("secret");
        assert!(hashes_equal(&a, &hash_token("secret")));
        assert!(!hashes_equal(&a, &hash_token("secreT")));
        assert_eq!(hex::encode(hash_token("abc")), "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
    }

    #[test]
    fn only_a_prefixed_64_digit_lowercase_hex_secret_has_a_stored_tokens_shape() {
        let secret = "0123456789abcdef".repeat(4);
        assert!(has_stored_token_shape(&format!("emdash_{secret}")));
        for junk in [
            "x".to_owned(),
            secret.clone(),
            format!("emdash_{}", secret.to_uppercase()),
            format!("emdash_{}", &secret[1..]),
            format!("emdash_{secret}0"),
            format!("emdash_{}g", &secret[1..]),
            format!("Emdash_{secret}"),
        ] {
            assert!(!has_stored_token_shape(&junk), "{junk}");
        }
    }
}
