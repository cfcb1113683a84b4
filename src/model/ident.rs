//! Identifiers (`^[a-z][a-z0-9_]*$`): collection and field slugs, and so SQL table and column
//! names. Parsed before any SQL is built; table names are only ever made from these.

use std::fmt;

/// Longest collection slug (so `ec_<slug>` and the names derived from it stay short).
pub const MAX_COLLECTION_SLUG: usize = 63;
/// Longest field slug.
pub const MAX_FIELD_SLUG: usize = 63;

/// A validated identifier.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Ident(String);

/// Why a string is not an identifier.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum IdentError {
    #[error("must not be empty")]
    Empty,
    #[error("must be at most {0} characters")]
    TooLong(usize),
    #[error("must start with a lowercase letter and contain only lowercase letters, digits and underscores")]
    BadCharacters,
}

impl Ident {
    /// Parses an identifier of at most [`MAX_COLLECTION_SLUG`] characters.
    pub fn parse(raw: &str) -> Result<Ident, IdentError> {
        Self::parse_max(raw, MAX_COLLECTION_SLUG)
    }

    pub fn parse_max(raw: &str, max: usize) -> Result<Ident, IdentError> {
        let mut chars = raw.chars();
        match chars.next() {
            None => return Err(IdentError::Empty),
            Some(c) if !c.is_ascii_lowercase() => return Err(IdentError::BadCharacters),
            Some(_) => {}
        }
        if !chars.all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_') {
            return Err(IdentError::BadCharacters);
        }
        if raw.len() > max {
            return Err(IdentError::TooLong(max));
        }
        Ok(Ident(raw.to_owned()))
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl fmt::Display for Ident {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn identifier_rules() {
        for ok in ["posts", "a", "blog_posts2", &"a".repeat(63)] {
            assert!(Ident::parse(ok).is_ok(), "{ok}");
        }
        let cases: &[(&str, IdentError)] = &[
            ("", IdentError::Empty),
            ("Bad-Slug", IdentError::BadCharacters),
            ("posts\";drop", IdentError::BadCharacters),
            ("posts\";drop_table", IdentError::BadCharacters),
            ("1posts", IdentError::BadCharacters),
            ("_posts", IdentError::BadCharacters),
            ("pöst", IdentError::BadCharacters),
            ("posts ", IdentError::BadCharacters),
        ];
        for (raw, want) in cases {
            assert_eq!(Ident::parse(raw), Err(*want), "{raw:?}");
        }
        assert_eq!(Ident::parse(&"a".repeat(64)), Err(IdentError::TooLong(63)));
    }
}
