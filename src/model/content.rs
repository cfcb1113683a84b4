//! Content entries: statuses, slug and locale rules, and the `_rev` concurrency token.

use super::MAX_SAFE_INTEGER;

/// Longest content slug.
pub const MAX_CONTENT_SLUG: usize = 200;
/// Longest locale tag.
pub const MAX_LOCALE: usize = 35;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Status {
    Draft,
    Published,
    Scheduled,
}

impl Status {
    pub fn parse(raw: &str) -> Option<Status> {
        match raw {
            "draft" => Some(Status::Draft),
            "published" => Some(Status::Published),
            "scheduled" => Some(Status::Scheduled),
            _ => None,
        }
    }

    pub fn as_str(self) -> &'static str {
        match self {
            Status::Draft => "draft",
            Status::Published => "published",
            Status::Scheduled => "scheduled",
        }
    }
}

/// Content slugs: 1..=200 characters, no control characters, no surrounding whitespace.
pub fn check_slug(slug: &str) -> Result<(), &'static str> {
    if slug.is_empty() {
        Err("must not be empty")
    } else if slug.chars().count() > MAX_CONTENT_SLUG {
        Err("must be at most 200 characters")
    } else if slug.chars().any(char::is_control) {
        Err("must not contain control characters")
    } else if slug.trim() != slug {
        Err("must not start or end with whitespace")
    } else {
        Ok(())
    }
}

/// Locales: BCP-47-like tags such as `en`, `de-AT`, `zh-Hant-TW`.
pub fn check_locale(locale: &str) -> Result<(), &'static str> {
    let mut parts = locale.split('-');
    let lang_ok = parts.next().is_some_and(|p| (2..=3).contains(&p.len()) && p.bytes().all(|b| b.is_ascii_lowercase()));
    let rest_ok = parts.all(|p| (2..=8).contains(&p.len()) && p.bytes().all(|b| b.is_ascii_alphanumeric()));
    if lang_ok && rest_ok && locale.len() <= MAX_LOCALE {
        Ok(())
    } else {
        Err("must be a locale tag such as \"en\" or \"de-AT\"")
    }
}

/// The opaque concurrency token of an entry: it changes with every write.
pub fn rev_token(version: i64) -> String {
    use base64::Engine;
    base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(format!("rev:{version}"))
}

/// Parses a `_rev` token back into the version it was issued for: a version is a
/// non-negative integer D1 can hold exactly (up to 2^53 − 1).
pub fn parse_rev(token: &str) -> Option<i64> {
    use base64::Engine;
    let raw = base64::engine::general_purpose::URL_SAFE_NO_PAD.decode(token).ok()?;
    let version: i64 = String::from_utf8(raw).ok()?.strip_prefix("rev:")?.parse().ok()?;
    (0..=MAX_SAFE_INTEGER).contains(&version).then_some(version)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn slug_rules() {
        assert!(check_slug("hello-world").is_ok());
        assert!(check_slug(&"é".repeat(200)).is_ok());
        assert!(check_slug("").is_err());
        assert!(check_slug(&"a".repeat(201)).is_err());
        assert!(check_slug("a\nb").is_err());
        assert!(check_slug(" a").is_err());
    }

    #[test]
    fn locale_rules() {
        for ok in ["en", "de-AT", "zh-Hant-TW", "fil"] {
            assert!(check_locale(ok).is_ok(), "{ok}");
        }
        for bad in ["", "EN", "e", "en_US", "en-", "english"] {
            assert!(check_locale(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn rev_tokens_round_trip_and_reject_garbage() {
        assert_eq!(parse_rev(&rev_token(7)), Some(7));
        assert_eq!(parse_rev("%%%"), None);
        assert_eq!(parse_rev("cmV2Ong"), None);
        assert_eq!(parse_rev(&rev_token(MAX_SAFE_INTEGER)), Some(MAX_SAFE_INTEGER));
        assert_eq!(parse_rev(&rev_token(MAX_SAFE_INTEGER + 1)), None);
        assert_eq!(parse_rev(&rev_token(-1)), None);
    }
}
