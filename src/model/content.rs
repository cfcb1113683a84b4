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

/// Longest slug made from a title (EmDash's `slugify` bound), before a `-N` suffix.
pub const MAX_GENERATED_SLUG: usize = 80;

/// The text a slug is made from when a create gives none: the entry's `title`, else its
/// `name`, when it is a non-empty string (EmDash's `getSlugSource`).
pub fn slug_source(data: &serde_json::Map<String, serde_json::Value>) -> Option<&str> {
    ["title", "name"].iter().find_map(|k| data.get(*k).and_then(serde_json::Value::as_str).filter(|s| !s.is_empty()))
}

/// A URL slug made from `text` as EmDash's `slugify` makes it: lower-cased, decomposed (NFD) with
/// its combining diacritics (U+0300..U+036F) dropped, so `Café` is `cafe`; runs of whitespace and
/// `_` become one `-`; anything but `a-z`, `0-9` and `-` goes; runs of `-` become one; one
/// leading and one trailing `-` go; then it is cut to [`MAX_GENERATED_SLUG`] characters and a
/// `-` the cut left at the end goes. Empty when nothing is left (a title in a script without
/// Latin letters): such an entry has no slug, as in EmDash.
pub fn slugify(text: &str) -> String {
    let lower = text.to_lowercase();
    let mut out = String::with_capacity(lower.len());
    for ch in lower.chars() {
        if is_js_whitespace(ch) || ch == '_' {
            out.push('-');
        } else if ch.is_ascii_lowercase() || ch.is_ascii_digit() || ch == '-' {
            out.push(ch);
        } else if let Some(base) = super::decomposed::ascii_in(ch) {
            // What NFD leaves of it once its diacritics and everything else not kept go.
            out.push(base);
        }
    }
    let mut collapsed = String::with_capacity(out.len());
    for ch in out.chars() {
        if !(ch == '-' && collapsed.ends_with('-')) {
            collapsed.push(ch);
        }
    }
    let trimmed = collapsed.strip_prefix('-').unwrap_or(&collapsed);
    let trimmed = trimmed.strip_suffix('-').unwrap_or(trimmed);
    // Only ASCII is left: a byte is a character.
    let cut = &trimmed[..trimmed.len().min(MAX_GENERATED_SLUG)];
    cut.strip_suffix('-').unwrap_or(cut).to_owned()
}

/// JavaScript's `\s`: the Unicode space separators and line terminators, tab, vertical tab, form
/// feed and the byte order mark (not U+0085, which Rust's `char::is_whitespace` counts).
fn is_js_whitespace(ch: char) -> bool {
    matches!(
        ch,
        '\t' | '\n' | '\u{b}' | '\u{c}' | '\r' | ' ' | '\u{a0}' | '\u{1680}' | '\u{2000}'
            ..='\u{200a}' | '\u{2028}' | '\u{2029}' | '\u{202f}' | '\u{205f}' | '\u{3000}' | '\u{feff}'
    )
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
    fn slugs_are_made_from_titles_as_emdash_makes_them() {
        for (title, slug) in [
            ("Hello World", "hello-world"),
            ("  Hello,   World!  ", "hello-world"),
            ("Café naïve Ångström", "cafe-naive-angstrom"),
            ("snake_case__and--dashes", "snake-case-and-dashes"),
            ("-lead and trail-", "lead-and-trail"),
            ("Ça va? Déjà vu — 2026", "ca-va-deja-vu-2026"),
            ("Straße", "strae"),
            ("\u{212A}elvin", "kelvin"),
            ("İstanbul", "istanbul"),
            ("tab\there\u{a0}nbsp\u{3000}ideo\u{feff}bom", "tab-here-nbsp-ideo-bom"),
            ("next\u{85}line", "nextline"),
            ("ﬁne", "ne"),
            ("మేష రాసి", ""),
            ("日本語", ""),
            ("!!!", ""),
            ("-", ""),
            ("", ""),
        ] {
            assert_eq!(slugify(title), slug, "{title:?}");
        }
        // Cut at 80 characters, and a hyphen the cut leaves at the end goes.
        assert_eq!(slugify(&"a".repeat(100)), "a".repeat(80));
        assert_eq!(slugify(&format!("{} b", "a".repeat(79))), "a".repeat(79));
        assert_eq!(slugify(&format!("{} bc", "a".repeat(78))), format!("{}-b", "a".repeat(78)));
        assert_eq!(slugify(&"é".repeat(100)), "e".repeat(80), "counted after decomposition");
    }

    #[test]
    fn a_slug_is_made_from_the_title_else_the_name() {
        let data = |v: serde_json::Value| v.as_object().cloned().unwrap();
        assert_eq!(slug_source(&data(serde_json::json!({"title": "T", "name": "N"}))), Some("T"));
        assert_eq!(slug_source(&data(serde_json::json!({"title": "", "name": "N"}))), Some("N"));
        assert_eq!(slug_source(&data(serde_json::json!({"title": 3, "name": "N"}))), Some("N"));
        assert_eq!(slug_source(&data(serde_json::json!({"title": null}))), None);
        assert_eq!(slug_source(&data(serde_json::json!({"heading": "H"}))), None);
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
