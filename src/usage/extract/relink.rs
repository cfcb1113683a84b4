//! Relinking text: the file URLs of a stored string that name one of a media item's earlier
//! storage keys, rewritten to name its current key, and nothing else. Pure.
//!
//! A URL is found as the extractor finds it (`text`): after the file route or under
//! `MEDIA_PUBLIC_URL` (image transformation URLs included), in the string as written, as decoded
//! (HTML character references and JSON string escapes, once and twice: a JSON column's stored
//! text holds its strings escaped once more), and inside image endpoints' percent-encoded query
//! values. Of a URL only its key's text is replaced, and the new key is written the way the old
//! one was: percent-encoded where it was, each character spelled as the old text spelled it
//! (`\/`, `&#47;`, `%2F` …), and a character that would end the URL percent-encoded. The
//! prefix, the transformation options, a query string, a fragment and trailing punctuation stay.
//!
//! A rewrite is kept only when reading the result names what the original named, with each of
//! the item's URLs naming its current key: otherwise the string is left as it was.

use std::collections::{BTreeSet, HashMap};

use memchr::memmem::Finder;

use super::text::{
    authority_path, ends_query_value, ends_url_ascii, percent_decode, percent_decode_bytes, NextEnd, Public, Scanner,
    FILE_ROUTE, MAX_KEY_BYTES, MAX_KEY_SPAN, MAX_QUERY_VALUE, TRAILING,
};
use super::{Names, Rules};

/// How many times a string is decoded at most to find what it links: once as the extractor reads
/// a field's string, once more for a string stored inside a JSON column's text.
const DECODE_DEPTH: usize = 2;

/// The keys of one media item a relink rewrites, and the key they are rewritten to.
#[derive(Debug, Clone, Copy)]
pub struct KeyChange<'a> {
    /// The item's earlier keys (its versions).
    pub earlier: &'a BTreeSet<String>,
    /// Its current key.
    pub current: &'a str,
}

impl Rules {
    /// `text` with each file URL that names one of `change.earlier` rewritten to name
    /// `change.current` (see the module); `None` when nothing is rewritten.
    pub fn relink(&self, text: &str, change: KeyChange<'_>) -> Option<String> {
        relink(text, &self.public, change)
    }
}

/// How a view's bytes were decoded from its parent's.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Level {
    /// The string itself.
    Written,
    /// HTML character references and JSON string escapes decoded.
    Escapes,
    /// A query value, percent-decoded.
    Percent,
}

/// A text as a reader decodes it, and where each of its bytes starts in its parent text.
#[derive(Debug, Clone)]
struct View {
    text: String,
    /// `from[i]`: where the sequence that byte `i` was decoded from starts in the parent text;
    /// one more entry, the parent's length.
    from: Vec<usize>,
    level: Level,
}

impl View {
    fn written(s: &str) -> View {
        View { text: s.to_owned(), from: (0..=s.len()).collect(), level: Level::Written }
    }

    /// Each character of `text[a..b]`, then of `text[p..a]`, with the text it was first decoded
    /// from in `parent`.
    fn spellings(&self, parent: &str, p: usize, a: usize, b: usize) -> HashMap<char, String> {
        let mut out = HashMap::new();
        for (x, y) in [(a, b), (p, a)] {
            for (i, c) in self.text[x..y].char_indices() {
                let (s, e) = (self.from[x + i], self.from[x + i + c.len_utf8()]);
                out.entry(c).or_insert_with(|| parent.get(s..e).unwrap_or_default().to_owned());
            }
        }
        out
    }
}

/// A key to rewrite in a view: its bytes, and whether it is written percent-encoded there.
#[derive(Debug, Clone, Copy)]
struct Found {
    start: usize,
    end: usize,
    encoded: bool,
}

fn relink(text: &str, public: &Public, change: KeyChange<'_>) -> Option<String> {
    if change.earlier.is_empty() {
        return None;
    }
    let mut s = text.to_owned();
    for depth in 0..=DECODE_DEPTH {
        let mut chain = vec![View::written(&s)];
        for _ in 0..depth {
            let Some(next) = decode_escapes(&chain[chain.len() - 1].text) else { break };
            chain.push(next);
        }
        if chain.len() != depth + 1 {
            break;
        }
        let mut replacements = Vec::new();
        collect(&mut chain, public, change, &mut replacements);
        s = apply(&s, replacements);
    }
    (s != text && same_names(text, &s, public, change)).then_some(s)
}

/// The replacements (in the written string) of the keys found in the last view of `chain` and in
/// its query values.
fn collect(chain: &mut Vec<View>, public: &Public, change: KeyChange<'_>, out: &mut Vec<(usize, usize, String)>) {
    let view = chain.len() - 1;
    for f in keys(&chain[view].text, public, change) {
        out.extend(replacement(chain, f, change.current));
    }
    for value in query_values(&chain[view].text) {
        let inner = keys(&value.text, public, change);
        if inner.is_empty() {
            continue;
        }
        chain.push(value);
        for f in inner {
            out.extend(replacement(chain, f, change.current));
        }
        chain.pop();
    }
}

/// The written span and text of `current` in place of the key `f` of the chain's last view.
fn replacement(chain: &[View], f: Found, current: &str) -> Option<(usize, usize, String)> {
    let last = &chain[chain.len() - 1];
    let old = last.text.get(f.start..f.end)?;
    let mut new = key_text(current, old, f.encoded);
    // The character before the key (the route's `/`) is spelled too, at every level: it says
    // how a `/` of the new key is written.
    let before = last.text.get(..f.start).and_then(|t| t.chars().next_back()).map_or(0, char::len_utf8);
    let (mut p, mut a, mut b) = (f.start - before, f.start, f.end);
    for k in (1..chain.len()).rev() {
        let view = &chain[k];
        let parent = &chain[k - 1].text;
        let spelled = view.spellings(parent, p, a, b);
        new = new
            .chars()
            .map(|c| match spelled.get(&c) {
                Some(s) => s.clone(),
                None if view.level == Level::Percent && !is_unreserved(c) => percent_encode(c, false),
                None => c.to_string(),
            })
            .collect();
        p = view.from[p];
        a = view.from[a];
        b = view.from[b];
    }
    Some((a, b, new))
}

/// The key `current` written as the key `old` was: percent-encoded (with `old`'s spellings of
/// the characters both have) when `old` was, and otherwise as is but for characters that would
/// end the URL.
fn key_text(current: &str, old: &str, encoded: bool) -> String {
    if !encoded {
        return current.chars().map(|c| if url_safe(c) { c.to_string() } else { percent_encode(c, false) }).collect();
    }
    let lower = old.bytes().any(|b| b.is_ascii_lowercase() && b.is_ascii_hexdigit())
        && old
            .split('%')
            .enumerate()
            .any(|(i, h)| i > 0 && h.get(..2).is_some_and(|h| h.bytes().any(|b| b.is_ascii_lowercase())));
    let spelled = percent_spellings(old);
    current
        .chars()
        .map(|c| match spelled.get(&c) {
            Some(s) => s.clone(),
            None if is_unreserved(c) || c == '/' => c.to_string(),
            None => percent_encode(c, lower),
        })
        .collect()
}

/// How a percent-encoded text spells each character it decodes to.
fn percent_spellings(old: &str) -> HashMap<char, String> {
    let mut out = HashMap::new();
    let b = old.as_bytes();
    let mut i = 0;
    while i < b.len() {
        // One character: a run of `%XX` (or plain bytes) that decodes to one UTF-8 character.
        let mut j = i;
        let mut bytes = Vec::new();
        while let Some(&c) = b.get(j) {
            let hex = |k: usize| b.get(k).and_then(|&x| (x as char).to_digit(16));
            match (c, hex(j + 1), hex(j + 2)) {
                (b'%', Some(h), Some(l)) => {
                    bytes.push((h * 16 + l) as u8);
                    j += 3;
                }
                _ => {
                    bytes.push(c);
                    j += 1;
                }
            }
            if std::str::from_utf8(&bytes).is_ok() || bytes.len() >= 4 {
                break;
            }
        }
        if let Ok(s) = std::str::from_utf8(&bytes) {
            if let Some(c) = s.chars().next() {
                out.entry(c).or_insert_with(|| old[i..j].to_owned());
            }
        }
        i = j.max(i + 1);
    }
    out
}

fn is_unreserved(c: char) -> bool {
    c.is_ascii_alphanumeric() || matches!(c, '-' | '.' | '_' | '~')
}

/// Whether `c` may stand in a URL's key as is: it neither ends the URL nor starts an escape.
fn url_safe(c: char) -> bool {
    if c.is_ascii() {
        !ends_url_ascii(c as u8) && c != '%' && !c.is_ascii_control()
    } else {
        !c.is_whitespace() && !c.is_control()
    }
}

fn percent_encode(c: char, lower: bool) -> String {
    let mut buf = [0u8; 4];
    c.encode_utf8(&mut buf).bytes().map(|b| if lower { format!("%{b:02x}") } else { format!("%{b:02X}") }).collect()
}

/// The keys in `t` to rewrite: of each file URL (after the file route, or under the public URL),
/// the first of its readings that names the item, when that is an earlier key.
fn keys(t: &str, public: &Public, change: KeyChange<'_>) -> Vec<Found> {
    let mut work = 0;
    let mut out = Vec::new();
    let route = Finder::new(FILE_ROUTE.as_bytes());
    let starts = Scanner::find_all(&mut work, t, &route, FILE_ROUTE.len() - 1);
    runs(t, &starts, change, &mut out);
    let starts = match public {
        Public::None => Vec::new(),
        Public::Prefix(p) => Scanner::find_all(&mut work, t, &Finder::new(p.as_bytes()), 1),
        Public::Url { host, port, path } => {
            let slashes = Finder::new(b"//");
            Scanner::find_all(&mut work, t, &slashes, 1)
                .into_iter()
                .filter_map(|(at, _)| authority_path(t.as_bytes(), at, host, *port, path).map(|key| (at, key)))
                .collect()
        }
    };
    runs(t, &starts, change, &mut out);
    out
}

/// The keys that start at `starts` (`(match, key start)`), read as the extractor reads them.
fn runs(t: &str, starts: &[(usize, usize)], change: KeyChange<'_>, out: &mut Vec<Found>) {
    let mut ends = NextEnd::default();
    let mut work = 0;
    for (n, &(_, key)) in starts.iter().enumerate() {
        let next_match = starts.get(n + 1).map_or(t.len(), |&(at, _)| at);
        let bound = next_match.min(key + MAX_KEY_SPAN + 1).min(t.len());
        if key >= bound {
            continue;
        }
        let end = ends.find(t, key, bound, &mut work);
        if end > key + MAX_KEY_SPAN {
            continue;
        }
        let Some(run) = t.get(key..end) else { continue };
        let trimmed = run.trim_end_matches(TRAILING);
        // The readings in the extractor's order; the first that names the item decides.
        'run: for written in [run, trimmed] {
            for (reading, encoded) in [(Some(written.to_owned()), false), (percent_decode(written), true)] {
                let Some(reading) = reading.filter(|r| !r.is_empty() && r.len() <= MAX_KEY_BYTES) else { continue };
                if reading == change.current {
                    break 'run;
                }
                if change.earlier.contains(&reading) {
                    out.push(Found { start: key, end: key + written.len(), encoded });
                    break 'run;
                }
            }
        }
    }
}

/// The percent-encoded `href`, `src` and `url` query values of image endpoints in `t`, decoded
/// (as the extractor reads them); a value that is not UTF-8 once decoded is left out.
fn query_values(t: &str) -> Vec<View> {
    let b = t.as_bytes();
    let mut out = Vec::new();
    let mut from = 0;
    while let Some(i) = b.get(from..).and_then(|rest| memchr::memchr(b'=', rest)) {
        let eq = from + i;
        from = eq + 1;
        let name_start = ["href", "src", "url"]
            .iter()
            .find(|n| eq >= n.len() && b[eq - n.len()..eq].eq_ignore_ascii_case(n.as_bytes()))
            .map(|n| eq - n.len());
        let Some(name_start) = name_start else { continue };
        if name_start == 0 || !matches!(b[name_start - 1], b'?' | b'&') {
            continue;
        }
        let start = eq + 1;
        let limit = (start + MAX_QUERY_VALUE).min(t.len());
        let end = b[start..limit].iter().position(|&c| ends_query_value(c)).map_or(limit, |n| start + n);
        from = end;
        let Some(value) = t.get(start..end).filter(|v| memchr::memchr(b'%', v.as_bytes()).is_some()) else {
            continue;
        };
        out.extend(percent_view(value, start));
    }
    out
}

/// `value` (at `offset` in its parent) percent-decoded, with where each byte came from.
fn percent_view(value: &str, offset: usize) -> Option<View> {
    let b = value.as_bytes();
    let hex = |k: usize| b.get(k).and_then(|&x| (x as char).to_digit(16));
    let (mut bytes, mut from) = (Vec::with_capacity(b.len()), Vec::with_capacity(b.len() + 1));
    let mut i = 0;
    while i < b.len() {
        from.push(offset + i);
        match (b[i], hex(i + 1), hex(i + 2)) {
            (b'%', Some(h), Some(l)) => {
                bytes.push((h * 16 + l) as u8);
                i += 3;
            }
            (c, _, _) => {
                bytes.push(c);
                i += 1;
            }
        }
    }
    from.push(offset + b.len());
    debug_assert_eq!(bytes, percent_decode_bytes(value));
    let text = String::from_utf8(bytes).ok()?;
    Some(View { text, from, level: Level::Percent })
}

/// `s` with its HTML character references and JSON string escapes decoded, as the extractor
/// decodes a string; `None` when that changes nothing, or when the decoding cannot be traced
/// back to `s` byte by byte.
fn decode_escapes(s: &str) -> Option<View> {
    let (html, html_from) = decode_html(s);
    let (text, json_from) = decode_json(&html);
    let from: Vec<usize> = json_from.iter().map(|&i| html_from[i]).collect();
    let expected = Scanner::new(&Public::None).decode(s);
    (text != s && text == expected).then_some(View { text, from, level: Level::Escapes })
}

/// The most bytes an HTML character reference is read over (`&` to `;`).
const MAX_REFERENCE: usize = 40;

fn decode_html(s: &str) -> (String, Vec<usize>) {
    let b = s.as_bytes();
    let (mut out, mut from) = (String::with_capacity(s.len()), Vec::with_capacity(s.len() + 1));
    let mut i = 0;
    while i < s.len() {
        if b[i] == b'&' {
            let limit = (i + MAX_REFERENCE).min(s.len());
            if let Some(j) = b[i + 1..limit].iter().position(|&c| c == b';') {
                let reference = &s[i..i + 2 + j];
                let decoded = html_escape::decode_html_entities(reference);
                if decoded != reference {
                    from.extend(std::iter::repeat_n(i, decoded.len()));
                    out.push_str(&decoded);
                    i += 2 + j;
                    continue;
                }
            }
        }
        let c = s[i..].chars().next().unwrap_or('\u{FFFD}');
        from.extend(i..i + c.len_utf8());
        out.push(c);
        i += c.len_utf8();
    }
    from.push(s.len());
    (out, from)
}

fn decode_json(s: &str) -> (String, Vec<usize>) {
    let (mut out, mut from) = (String::with_capacity(s.len()), Vec::with_capacity(s.len() + 1));
    let b = s.as_bytes();
    let unit = |at: usize| -> Option<u32> {
        let h = s.get(at..at + 4)?;
        h.bytes().all(|b| b.is_ascii_hexdigit()).then(|| u32::from_str_radix(h, 16).ok()).flatten()
    };
    let push = |out: &mut String, from: &mut Vec<usize>, c: char, at: usize| {
        from.extend(std::iter::repeat_n(at, c.len_utf8()));
        out.push(c);
    };
    let mut i = 0;
    while i < s.len() {
        let c = s[i..].chars().next().unwrap_or('\u{FFFD}');
        if c != '\\' {
            from.extend(i..i + c.len_utf8());
            out.push(c);
            i += c.len_utf8();
            continue;
        }
        let simple = match b.get(i + 1) {
            Some(b'/') => Some('/'),
            Some(b'\\') => Some('\\'),
            Some(b'"') => Some('"'),
            Some(b'\'') => Some('\''),
            Some(b'n') => Some('\n'),
            Some(b't') => Some('\t'),
            Some(b'r') => Some('\r'),
            Some(b'b') => Some('\u{8}'),
            Some(b'f') => Some('\u{c}'),
            _ => None,
        };
        if let Some(d) = simple {
            push(&mut out, &mut from, d, i);
            i += 2;
            continue;
        }
        match (b.get(i + 1), unit(i + 2)) {
            (Some(b'u'), Some(high @ 0xD800..=0xDBFF)) => {
                let low = (s.get(i + 6..i + 8) == Some("\\u")).then(|| unit(i + 8)).flatten();
                match low {
                    Some(low @ 0xDC00..=0xDFFF) => {
                        let cp = 0x10000 + ((high - 0xD800) << 10) + (low - 0xDC00);
                        push(&mut out, &mut from, char::from_u32(cp).unwrap_or('\u{FFFD}'), i);
                        i += 12;
                    }
                    _ => {
                        push(&mut out, &mut from, '\u{FFFD}', i);
                        i += 6;
                    }
                }
            }
            (Some(b'u'), Some(cp)) => {
                push(&mut out, &mut from, char::from_u32(cp).unwrap_or('\u{FFFD}'), i);
                i += 6;
            }
            _ => {
                push(&mut out, &mut from, '\\', i);
                i += 1;
            }
        }
    }
    from.push(s.len());
    (out, from)
}

/// `s` with the replacements made (in order; one overlapping an earlier one is left out).
fn apply(s: &str, mut replacements: Vec<(usize, usize, String)>) -> String {
    if replacements.is_empty() {
        return s.to_owned();
    }
    replacements.sort_by_key(|r| (r.0, r.1));
    let mut out = String::with_capacity(s.len());
    let mut at = 0;
    for (a, b, text) in replacements {
        if a < at || !s.is_char_boundary(a) || !s.is_char_boundary(b) {
            continue;
        }
        out.push_str(&s[at..a]);
        out.push_str(&text);
        at = b;
    }
    out.push_str(&s[at..]);
    out
}

/// Whether `new` names what `old` names, the item's URLs all naming its current key: the same
/// ids, and the same file URLs once each URL of the item is taken for the item itself.
fn same_names(old: &str, new: &str, public: &Public, change: KeyChange<'_>) -> bool {
    #[derive(Debug, PartialEq, Eq, PartialOrd, Ord)]
    enum Read {
        Id(String),
        Item,
        Other(Vec<String>),
    }
    let read = |s: &str| -> BTreeSet<Read> {
        let mut names = Vec::new();
        Scanner::new(public).string(s, &mut names);
        let mut out = BTreeSet::new();
        for n in names {
            out.insert(match n {
                Names::Id(id) => Read::Id(id),
                Names::Key(readings) => {
                    match readings.iter().find(|r| change.earlier.contains(*r) || r.as_str() == change.current) {
                        Some(_) => Read::Item,
                        None => Read::Other(readings),
                    }
                }
            });
        }
        out
    };
    read(old) == read(new)
}

#[cfg(test)]
mod tests;
