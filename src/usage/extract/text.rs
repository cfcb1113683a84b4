//! What one string names, read as a browser reads it: the media ids it holds as whole tokens and
//! the storage keys of the file URLs it holds, in every spelling a page can show them in (HTML
//! character references, JSON string escapes, percent-encoding, `MEDIA_PUBLIC_URL` on any
//! scheme, host case and default port, image transformation URLs). Pure and linear: every pass
//! over a string is bounded by its length (or by the longest key), and what it does is counted
//! in [`Scanner::work`].

use std::borrow::Cow;
use std::collections::HashSet;

use memchr::memmem::Finder;

use super::Names;

/// The path of the file route, after which a URL names a storage key (slashes included: the
/// route is `media/file/[...key]`).
pub const FILE_ROUTE: &str = "/_emdash/api/media/file/";
/// The longest storage key the API accepts, in bytes.
pub const MAX_KEY_BYTES: usize = 1024;
/// The longest written form of a key that is read: each of its bytes percent-encoded, and a
/// little trailing punctuation.
pub(super) const MAX_KEY_SPAN: usize = 3 * MAX_KEY_BYTES + 8;
/// The longest image-endpoint query value that is read (a percent-encoded URL of the longest
/// key on a long origin).
pub(super) const MAX_QUERY_VALUE: usize = MAX_KEY_SPAN + 1024;
/// The longest options segment of an image transformation URL.
const MAX_TRANSFORM_OPTIONS: usize = 512;
/// Cloudflare's image transformation path: `/cdn-cgi/image/<options>/<source>`.
const TRANSFORM: &str = "/cdn-cgi/image/";
/// Shortest and longest media id looked up.
const ID_LEN: std::ops::RangeInclusive<usize> = 20..=64;

/// Where `MEDIA_PUBLIC_URL` serves files, as matched in text.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Public {
    /// No public URL.
    None,
    /// An absolute URL: matched on `http:`, `https:` or scheme-relative URLs, its host in any
    /// case, with or without a default port; its path, then the key.
    Url {
        /// Lower-cased.
        host: String,
        /// An explicit port other than 80 and 443.
        port: Option<u16>,
        /// The path, ending with `/` (`/` alone for the root).
        path: String,
    },
    /// Not an absolute URL: its text, ending with `/`, matched as written.
    Prefix(String),
}

impl Public {
    /// Reads `MEDIA_PUBLIC_URL` (blank: none).
    pub fn parse(raw: Option<&str>) -> Public {
        let Some(raw) = raw.map(str::trim).filter(|u| !u.is_empty()) else { return Public::None };
        let absolute = if raw.starts_with("//") { Cow::Owned(format!("https:{raw}")) } else { Cow::Borrowed(raw) };
        match url::Url::parse(&absolute) {
            Ok(u) if matches!(u.scheme(), "http" | "https") && u.host_str().is_some_and(|h| !h.is_empty()) => {
                Public::Url {
                    host: u.host_str().unwrap_or_default().to_ascii_lowercase(),
                    port: u.port().filter(|p| !matches!(p, 80 | 443)),
                    path: format!("{}/", u.path().trim_end_matches('/')),
                }
            }
            _ => Public::Prefix(format!("{}/", raw.trim_end_matches('/'))),
        }
    }

    /// The form that identifies these rules: what is matched, independent of the scheme, a
    /// trailing slash and a default port.
    pub fn canonical(&self) -> Option<String> {
        match self {
            Public::None => None,
            Public::Url { host, port: None, path } => Some(format!("//{host}{path}")),
            Public::Url { host, port: Some(p), path } => Some(format!("//{host}:{p}{path}")),
            Public::Prefix(p) => Some(p.clone()),
        }
    }
}

/// Reads strings under one set of rules, counting its work: per view of a string (as written,
/// and decoded when decoding changes it) each pass counts the bytes it scans — the file route,
/// the public URL, the query values, the tokens —, the decoding counts three bytes per byte
/// (the check, the HTML and the JSON pass), a key four per byte of its run (its readings), a
/// token its bytes, and a query value decoded two per byte and the passes over it.
#[derive(Debug)]
pub struct Scanner<'r> {
    public: &'r Public,
    /// The searches of every view, built once per scanner: the file route, `//`, and the
    /// public URL when it is matched as written.
    file_route: Finder<'static>,
    slashes: Finder<'static>,
    prefix: Option<Finder<'r>>,
    /// Bytes examined, decoded and copied so far: the extraction's cost, in units that grow
    /// with its CPU time.
    pub work: u64,
    /// Where the keys of the view being read start and end (token positions inside them are
    /// parts of keys, not ids).
    key_spans: Vec<(usize, usize)>,
}

impl<'r> Scanner<'r> {
    pub fn new(public: &'r Public) -> Scanner<'r> {
        let prefix = match public {
            Public::Prefix(p) => Some(Finder::new(p.as_bytes())),
            Public::None | Public::Url { .. } => None,
        };
        Scanner {
            public,
            file_route: Finder::new(FILE_ROUTE.as_bytes()),
            slashes: Finder::new(b"//"),
            prefix,
            work: 0,
            key_spans: Vec::new(),
        }
    }

    /// Everything `s` names, each once: ids as whole tokens, and the readings of its file URLs'
    /// keys, in the string as written and as decoded.
    pub fn string(&mut self, s: &str, out: &mut Vec<Names>) {
        let start = out.len();
        self.view(s, out, true);
        let decoded = self.decode(s);
        if decoded != s {
            self.view(&decoded, out, true);
        }
        let mut found = out.split_off(start);
        found.sort();
        found.dedup();
        out.extend(found);
    }

    /// The ids an object key names as whole tokens.
    pub fn key(&mut self, k: &str, out: &mut Vec<Names>) {
        self.key_spans.clear();
        self.tokens(k, out, false);
    }

    /// HTML character references and JSON string escapes decoded (borrowed when `s` has none).
    pub(super) fn decode<'s>(&mut self, s: &'s str) -> Cow<'s, str> {
        if memchr::memchr2(b'&', b'\\', s.as_bytes()).is_none() {
            self.work += s.len() as u64;
            return Cow::Borrowed(s);
        }
        self.work += 3 * s.len() as u64;
        let html = html_escape::decode_html_entities(s);
        match json_unescape(&html) {
            Some(unescaped) => Cow::Owned(unescaped),
            None => html,
        }
    }

    /// One view of a string: its file URLs (and those of its image endpoints' query values)
    /// and, with `tokens`, its id tokens.
    fn view(&mut self, t: &str, out: &mut Vec<Names>, tokens: bool) {
        self.key_spans.clear();
        self.file_route(t, out);
        self.public_url(t, out);
        if tokens {
            self.query_values(t, out);
            self.key_spans.sort_unstable();
            self.tokens(t, out, true);
        }
    }

    /// Where `pattern` stands in `t`, each match searched for from `advance` bytes after the last
    /// one's start (so that overlapping matches are found); `(match, end of the match)`.
    pub(super) fn find_all(work: &mut u64, t: &str, pattern: &Finder<'_>, advance: usize) -> Vec<(usize, usize)> {
        let (b, len) = (t.as_bytes(), pattern.needle().len());
        let mut found = Vec::new();
        let mut from = 0;
        while let Some(i) = b.get(from..).and_then(|rest| pattern.find(rest)) {
            let at = from + i;
            *work += (i + len) as u64;
            found.push((at, at + len));
            from = at + advance;
        }
        *work += (t.len() - from.min(t.len())) as u64;
        found
    }

    /// Keys after the file route, on any origin or none.
    fn file_route(&mut self, t: &str, out: &mut Vec<Names>) {
        // The route ends with the `/` it may start again with.
        let starts = Self::find_all(&mut self.work, t, &self.file_route, FILE_ROUTE.len() - 1);
        self.keys(t, &starts, out);
    }

    /// Keys under `MEDIA_PUBLIC_URL`.
    fn public_url(&mut self, t: &str, out: &mut Vec<Names>) {
        let starts = match self.public {
            Public::None => return,
            Public::Prefix(_) => match &self.prefix {
                Some(prefix) => Self::find_all(&mut self.work, t, prefix, 1),
                None => return,
            },
            Public::Url { host, port, path } => {
                let mut starts = Vec::new();
                for (at, _) in Self::find_all(&mut self.work, t, &self.slashes, 1) {
                    if let Some(key) = authority_path(t.as_bytes(), at, host, *port, path) {
                        self.work += (key - at) as u64;
                        starts.push((at, key));
                    }
                }
                starts
            }
        };
        self.keys(t, &starts, out);
    }

    /// Image endpoints' `href`, `src` and `url` query values that are percent-encoded: their
    /// file URLs, read from the decoded value (plain values are read where they stand).
    fn query_values(&mut self, t: &str, out: &mut Vec<Names>) {
        let b = t.as_bytes();
        let mut from = 0;
        while let Some(i) = b.get(from..).and_then(|rest| memchr::memchr(b'=', rest)) {
            let eq = from + i;
            self.work += (i + 1) as u64;
            from = eq + 1;
            let name_start = ["href", "src", "url"]
                .iter()
                .find(|n| eq >= n.len() && b[eq - n.len()..eq].eq_ignore_ascii_case(n.as_bytes()))
                .map(|n| eq - n.len());
            let Some(name_start) = name_start else { continue };
            if name_start == 0 || !matches!(b[name_start - 1], b'?' | b'&') {
                continue;
            }
            let value_start = eq + 1;
            let limit = (value_start + MAX_QUERY_VALUE).min(t.len());
            let end =
                b[value_start..limit].iter().position(|&c| ends_query_value(c)).map_or(limit, |n| value_start + n);
            self.work += (end - value_start) as u64;
            from = end;
            let Some(value) = t.get(value_start..end).filter(|v| memchr::memchr(b'%', v.as_bytes()).is_some()) else {
                continue;
            };
            let decoded = percent_decode_lossy(value);
            self.work += 2 * value.len() as u64;
            // The decoded value's keys are not positions of `t`: its token spans stay as they are.
            let spans = std::mem::take(&mut self.key_spans);
            self.view(&decoded, out, false);
            self.key_spans = spans;
        }
        self.work += (t.len() - from.min(t.len())) as u64;
    }

    /// The readings of the keys that start at `starts` (`(match, key start)`, in order): each
    /// ends at a character that ends a URL, at the next match, or is too long to be a key.
    fn keys(&mut self, t: &str, starts: &[(usize, usize)], out: &mut Vec<Names>) {
        let mut ends = NextEnd::default();
        for (n, &(_, key)) in starts.iter().enumerate() {
            let next_match = starts.get(n + 1).map_or(t.len(), |&(at, _)| at);
            let bound = next_match.min(key + MAX_KEY_SPAN + 1).min(t.len());
            if key >= bound {
                continue;
            }
            let end = ends.find(t, key, bound, &mut self.work);
            if end > key + MAX_KEY_SPAN {
                continue;
            }
            let Some(run) = t.get(key..end) else { continue };
            self.key_spans.push((key, end));
            let readings = readings(run);
            self.work += 4 * run.len() as u64;
            if !readings.is_empty() {
                out.push(Names::Key(readings));
            }
        }
    }

    /// Media ids as whole tokens: maximal runs of id characters (letters, digits, `-`, `_`) of
    /// 20 to 64 characters with a digit, outside `data:` URIs and outside file URLs' keys.
    /// With `once`, an id already found in `t` is not added again (a string's names are
    /// deduplicated anyway: [`Scanner::string`]).
    fn tokens(&mut self, t: &str, out: &mut Vec<Names>, once: bool) {
        let mut seen: HashSet<&str> = HashSet::new();
        let mut previous: Option<&str> = None;
        let b = t.as_bytes();
        self.work += b.len() as u64;
        let mut spans = self.key_spans.iter().peekable();
        // The first `:` at or after `i` (a `data:` URI starts with a token before one).
        let mut colon = 0;
        let mut i = 0;
        while i < b.len() {
            // `i` starts a token or is not an id byte. A token long enough to be an id that
            // starts in `[i, last]` covers `last`: reading back from `last`, a byte that is no
            // id byte at `k` means none starts in `[i, k]`, and, with no `:` in `[i, last]`, no
            // `data:` URI either, so reading resumes at `k + 1` (a few bytes read per 20
            // skipped in prose).
            let last = i + ID_LEN.start() - 1;
            if colon < i {
                colon = memchr::memchr(b':', &b[i..]).map_or(b.len(), |c| i + c);
            }
            if last < b.len() && colon > last {
                if let Some(k) = b[i..=last].iter().rposition(|&c| !is_id_byte(c)) {
                    i += k + 1;
                    continue;
                }
            }
            if !is_id_byte(b[i]) {
                i += 1;
                continue;
            }
            let start = i;
            while i < b.len() && is_id_byte(b[i]) {
                i += 1;
            }
            let token = &t[start..i];
            if token.eq_ignore_ascii_case("data") && b.get(i) == Some(&b':') {
                // A `data:` URI holds its payload, never a reference: skip it.
                while i < b.len() && !ends_data_uri(b[i]) {
                    i += 1;
                }
                continue;
            }
            while spans.peek().is_some_and(|&&(_, end)| end <= start) {
                spans.next();
            }
            if spans.peek().is_some_and(|&&(s, _)| s <= start) {
                continue;
            }
            if ID_LEN.contains(&token.len()) && token.bytes().any(|c| c.is_ascii_digit()) {
                self.work += token.len() as u64;
                // (The last one found is compared first: a repeated id is not hashed again.)
                if !once || (previous != Some(token) && seen.insert(token)) {
                    out.push(Names::Id(token.to_owned()));
                }
                previous = Some(token);
            }
        }
    }
}

/// Past the `//` at `at`: whether an authority follows that is `host` (any case) on `port` (or a
/// default one), introduced by `http:`, `https:` or nothing (scheme-relative), with a path that
/// starts with `path` (after an image transformation's `/cdn-cgi/image/<options>`, if any).
/// The key's start when it does.
pub(super) fn authority_path(b: &[u8], at: usize, host: &str, port: Option<u16>, path: &str) -> Option<usize> {
    // A scheme right before `//` must be http or https.
    if at > 0 && b[at - 1] == b':' {
        // (`https` is the longest it may be: look no further back.)
        let floor = (at - 1).saturating_sub(6);
        let scheme_start =
            b[floor..at - 1].iter().rposition(|c| !c.is_ascii_alphanumeric()).map_or(floor, |p| floor + p + 1);
        let scheme = &b[scheme_start..at - 1];
        if !(scheme.eq_ignore_ascii_case(b"http") || scheme.eq_ignore_ascii_case(b"https")) {
            return None;
        }
    }
    let mut q = at + 2;
    let h = b.get(q..q + host.len())?;
    if !h.eq_ignore_ascii_case(host.as_bytes()) {
        return None;
    }
    q += host.len();
    let written_port = if b.get(q) == Some(&b':') {
        let digits = b[q + 1..].iter().take(6).take_while(|c| c.is_ascii_digit()).count();
        let n: u32 = std::str::from_utf8(&b[q + 1..q + 1 + digits]).ok()?.parse().ok()?;
        q += 1 + digits;
        Some(n)
    } else {
        None
    };
    let port_matches = match (written_port, port) {
        (None, None) => true,
        (Some(80 | 443), None) => true,
        (Some(w), Some(p)) => w == u32::from(p),
        _ => false,
    };
    if !port_matches || b.get(q) != Some(&b'/') {
        return None;
    }
    if b[q..].starts_with(TRANSFORM.as_bytes()) {
        let options = q + TRANSFORM.len();
        let slash = b[options..(options + MAX_TRANSFORM_OPTIONS).min(b.len())].iter().position(|&c| c == b'/')?;
        q = options + slash;
    }
    b[q..].starts_with(path.as_bytes()).then_some(q + path.len())
}

/// The first position in `[from, bound)` of a character that ends a URL, else `bound`; searches
/// resume where the last one stopped, so a sequence of increasing `from`s reads each byte once.
#[derive(Debug, Default)]
pub(super) struct NextEnd {
    /// No character that ends a URL lies in `[clear_from, clear_to)`.
    clear_from: usize,
    clear_to: usize,
}

impl NextEnd {
    pub(super) fn find(&mut self, t: &str, from: usize, bound: usize, work: &mut u64) -> usize {
        let b = t.as_bytes();
        let mut i = if self.clear_from <= from && from <= self.clear_to { self.clear_to } else { from };
        self.clear_from = from;
        while i < bound {
            let c = b[i];
            if c < 0x80 {
                if ends_url_ascii(c) {
                    break;
                }
                i += 1;
            } else {
                let ch = t[i..].chars().next().unwrap_or(' ');
                if ch.is_whitespace() {
                    break;
                }
                i += ch.len_utf8();
            }
        }
        *work += i.saturating_sub(self.clear_to.max(from)) as u64;
        // `i` is on a character boundary (it may pass `bound` by part of a character).
        self.clear_to = i;
        i.min(bound)
    }
}

/// ASCII characters that end a URL in text, HTML attributes, Markdown and JSON: whitespace,
/// quotes, brackets, and what starts a query string or a fragment (`?`, `#`, `&`).
pub(super) fn ends_url_ascii(c: u8) -> bool {
    c.is_ascii_whitespace()
        || matches!(c, b'"' | b'\'' | b'<' | b'>' | b'(' | b')' | b'[' | b']' | b'{' | b'}')
        || matches!(c, b'?' | b'#' | b'&' | b'\\' | b'|' | b'^' | b'`')
}

/// What ends a query value: the next parameter, a fragment, or the end of the URL.
pub(super) fn ends_query_value(c: u8) -> bool {
    c.is_ascii_whitespace() || matches!(c, b'&' | b'#' | b'"' | b'\'' | b'<' | b'>' | b'(' | b')' | b'`' | b'\\')
}

/// What ends a `data:` URI in text: whitespace, quotes and brackets.
fn ends_data_uri(c: u8) -> bool {
    c.is_ascii_whitespace() || matches!(c, b'"' | b'\'' | b'<' | b'>' | b'(' | b')' | b'`' | b'\\')
}

/// Which bytes are id characters (letters, digits, `-`, `_`): one load a byte in the token scan.
const ID_BYTES: [bool; 256] = {
    let mut table = [false; 256];
    let mut c = 0;
    while c < 256 {
        let b = c as u8;
        table[c] = b.is_ascii_alphanumeric() || b == b'-' || b == b'_';
        c += 1;
    }
    table
};

fn is_id_byte(c: u8) -> bool {
    ID_BYTES[c as usize]
}

/// The punctuation a key's shorter reading leaves off its end (a URL at the end of a sentence).
pub(super) const TRAILING: [char; 6] = ['.', ',', ';', ':', '!', '/'];

/// The readings of a key as written in a URL: as written and without trailing punctuation,
/// each also percent-decoded; each distinct, non-empty and no longer than a key.
fn readings(run: &str) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    let trimmed = run.trim_end_matches(TRAILING);
    for r in [run, trimmed] {
        for reading in [Some(r.to_owned()), percent_decode(r)].into_iter().flatten() {
            if !reading.is_empty() && reading.len() <= MAX_KEY_BYTES && !out.contains(&reading) {
                out.push(reading);
            }
        }
    }
    out
}

/// `%XX` sequences decoded, when there are any and the result is UTF-8.
pub fn percent_decode(s: &str) -> Option<String> {
    // (Where the first one is does not matter: whether there is one.)
    memchr::memchr(b'%', s.as_bytes())?;
    String::from_utf8(percent_decode_bytes(s)).ok()
}

/// `%XX` sequences decoded; bytes that are not UTF-8 replaced.
fn percent_decode_lossy(s: &str) -> String {
    match String::from_utf8(percent_decode_bytes(s)) {
        Ok(decoded) => decoded,
        Err(e) => String::from_utf8_lossy(e.as_bytes()).into_owned(),
    }
}

/// `%XX` sequences decoded: the text between two `%` copied at once.
pub(super) fn percent_decode_bytes(s: &str) -> Vec<u8> {
    let bytes = s.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let hex = |b: u8| (b as char).to_digit(16);
    let mut i = 0;
    while let Some(p) = memchr::memchr(b'%', &bytes[i..]) {
        let at = i + p;
        out.extend_from_slice(&bytes[i..at]);
        match (bytes.get(at + 1).copied().and_then(hex), bytes.get(at + 2).copied().and_then(hex)) {
            (Some(h), Some(l)) => {
                out.push((h * 16 + l) as u8);
                i = at + 3;
            }
            _ => {
                out.push(b'%');
                i = at + 1;
            }
        }
    }
    out.extend_from_slice(&bytes[i..]);
    out
}

/// JSON string escapes left in text decoded (`\/`, `\"`, `\\`, `\uXXXX` with surrogate pairs,
/// `\n` …), as a JSON export written into a text field holds them; `None` when there are none.
/// A backslash that starts no escape stays.
pub fn json_unescape(s: &str) -> Option<String> {
    memchr::memchr(b'\\', s.as_bytes())?;
    let mut out = String::with_capacity(s.len());
    let mut chars = s.char_indices().peekable();
    while let Some((i, c)) = chars.next() {
        if c != '\\' {
            out.push(c);
            continue;
        }
        let simple = match chars.peek().map(|&(_, n)| n) {
            Some('/') => Some('/'),
            Some('\\') => Some('\\'),
            Some('"') => Some('"'),
            Some('\'') => Some('\''),
            Some('n') => Some('\n'),
            Some('t') => Some('\t'),
            Some('r') => Some('\r'),
            Some('b') => Some('\u{8}'),
            Some('f') => Some('\u{c}'),
            _ => None,
        };
        if let Some(decoded) = simple {
            chars.next();
            out.push(decoded);
            continue;
        }
        let unit = |at: usize| -> Option<u32> {
            let h = s.get(at..at + 4)?;
            h.bytes().all(|b| b.is_ascii_hexdigit()).then(|| u32::from_str_radix(h, 16).ok()).flatten()
        };
        let after_u = i + 2;
        match (s.as_bytes().get(i + 1), unit(after_u)) {
            (Some(b'u'), Some(high @ 0xD800..=0xDBFF)) => {
                let low = (s.get(after_u + 4..after_u + 6) == Some("\\u")).then(|| unit(after_u + 6)).flatten();
                match low {
                    Some(low @ 0xDC00..=0xDFFF) => {
                        let cp = 0x10000 + ((high - 0xD800) << 10) + (low - 0xDC00);
                        out.push(char::from_u32(cp).unwrap_or('\u{FFFD}'));
                        skip(&mut chars, 11);
                    }
                    _ => {
                        out.push('\u{FFFD}');
                        skip(&mut chars, 5);
                    }
                }
            }
            (Some(b'u'), Some(cp)) => {
                out.push(char::from_u32(cp).unwrap_or('\u{FFFD}'));
                skip(&mut chars, 5);
            }
            _ => out.push('\\'),
        }
    }
    Some(out)
}

fn skip(chars: &mut impl Iterator, n: usize) {
    for _ in 0..n {
        chars.next();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn names(s: &str, public: &Public) -> Vec<Names> {
        let mut out = Vec::new();
        Scanner::new(public).string(s, &mut out);
        out
    }

    fn keys(s: &str, public: &Public) -> Vec<Vec<String>> {
        names(s, public)
            .into_iter()
            .filter_map(|n| match n {
                Names::Key(r) => Some(r),
                Names::Id(_) => None,
            })
            .collect()
    }

    fn ids(s: &str) -> Vec<String> {
        names(s, &Public::None)
            .into_iter()
            .filter_map(|n| match n {
                Names::Id(id) => Some(id),
                Names::Key(_) => None,
            })
            .collect()
    }

    fn cdn() -> Public {
        Public::parse(Some("https://cdn.example.com/media"))
    }

    #[test]
    fn the_public_url_is_read_as_a_url() {
        assert_eq!(cdn(), Public::Url { host: "cdn.example.com".into(), port: None, path: "/media/".into() });
        assert_eq!(Public::parse(Some("//CDN.example.com:443/media/")), cdn());
        assert_eq!(Public::parse(Some("http://cdn.example.com:80/media")).canonical(), cdn().canonical());
        assert_eq!(
            Public::parse(Some("https://cdn.example.com:8443")),
            Public::Url { host: "cdn.example.com".into(), port: Some(8443), path: "/".into() }
        );
        assert_eq!(Public::parse(Some("/media")), Public::Prefix("/media/".into()));
        // Only http(s) URLs with a host are URLs here; anything else is matched as written.
        assert_eq!(
            Public::parse(Some("ftp://cdn.example.com/media")),
            Public::Prefix("ftp://cdn.example.com/media/".into())
        );
        assert_eq!(Public::parse(Some("file:///srv/media")), Public::Prefix("file:///srv/media/".into()));
        assert_eq!(Public::parse(Some("cdn.example.com/media/")), Public::Prefix("cdn.example.com/media/".into()));
        assert_eq!(Public::parse(Some("  ")), Public::None);
        assert_eq!(Public::parse(None).canonical(), None);
    }

    #[test]
    fn every_spelling_of_a_public_url_names_its_key() {
        let k = |s: &str| keys(s, &cdn());
        for s in [
            "https://cdn.example.com/media/a.png",
            "http://cdn.example.com/media/a.png",
            "//cdn.example.com/media/a.png",
            "HTTPS://CDN.Example.COM/media/a.png",
            "https://cdn.example.com:443/media/a.png",
            "http://cdn.example.com:80/media/a.png",
            "<img src=\"https://cdn.example.com/cdn-cgi/image/width=800,format=auto/media/a.png\">",
            "https://other.example/cdn-cgi/image/w=800/https://cdn.example.com/media/a.png",
            "https:\\/\\/cdn.example.com\\/media\\/a.png",
            "https&#58;&#47;&#47;cdn.example.com&#x2F;media&sol;a.png",
            "/_image?href=https%3A%2F%2Fcdn.example.com%2Fmedia%2Fa.png&w=800",
            "https://cdn.example.com/media/a.png?w=1#x",
        ] {
            assert_eq!(k(s), [["a.png"]], "{s}");
        }
        for s in [
            "https://other.example/media/a.png",
            "https://cdn.example.com.evil.example/media/a.png",
            "https://cdn.example.com/other/a.png",
            "https://cdn.example.com:8443/media/a.png",
            "ftp://cdn.example.com/media/a.png",
            "https://other.example/cdn-cgi/image/w=800/media/a.png",
            "/cdn-cgi/image/w=800/media/a.png",
            "https://cdn.example.com/cdn-cgi/image/w=800/https://other.example/media/a.png",
        ] {
            assert_eq!(k(s), Vec::<Vec<String>>::new(), "{s}");
        }
    }

    #[test]
    fn every_spelling_of_a_file_route_url_names_its_key() {
        let k = |s: &str| keys(s, &Public::None);
        for s in [
            "/_emdash/api/media/file/a.png",
            "https://site.example/_emdash/api/media/file/a.png",
            "\\/_emdash\\/api\\/media\\/file\\/a.png",
            "&#47;_emdash&#x2F;api&sol;media/file/a.png",
            "/_image?href=%2F_emdash%2Fapi%2Fmedia%2Ffile%2Fa.png&w=800",
            "/_image?w=800&amp;src=%2F_emdash%2Fapi%2Fmedia%2Ffile%2Fa.png",
            "/_emdash/api/media/file/a.png&w=1",
            "https://cdn.example.com/cdn-cgi/image/w=800/_emdash/api/media/file/a.png",
        ] {
            assert_eq!(k(s), [["a.png"]], "{s}");
        }
        // The key keeps its slashes; percent-encoded, it is read both ways.
        assert_eq!(k("/_emdash/api/media/file/dir/b.pdf"), [["dir/b.pdf"]]);
        assert_eq!(k("/_emdash/api/media/file/dir%2Fb%201.pdf"), [["dir%2Fb%201.pdf", "dir/b 1.pdf"]]);
        assert_eq!(k("see /_emdash/api/media/file/a.png."), [["a.png.", "a.png"]]);
    }

    #[test]
    fn an_explicit_port_is_matched_exactly() {
        let p = Public::parse(Some("https://cdn.example.com:8443/media"));
        let k = |s: &str| keys(s, &p);
        assert_eq!(k("https://cdn.example.com:8443/media/a.png"), [["a.png"]]);
        assert_eq!(k("https://cdn.example.com:8444/media/a.png"), Vec::<Vec<String>>::new());
        assert_eq!(k("https://cdn.example.com/media/a.png"), Vec::<Vec<String>>::new());
    }

    #[test]
    fn only_http_or_https_or_nothing_introduces_the_public_url() {
        let k = |s: &str| keys(s, &cdn());
        assert_eq!(k("see https://cdn.example.com/media/a.png"), [["a.png"]]);
        assert_eq!(k("(http://cdn.example.com/media/a.png)"), [["a.png"]]);
        assert_eq!(k("xhttps://cdn.example.com/media/a.png"), Vec::<Vec<String>>::new());
        assert_eq!(k("webcal://cdn.example.com/media/a.png"), Vec::<Vec<String>>::new());
        let long_options = format!("https://cdn.example.com/cdn-cgi/image/{}/media/a.png", "w".repeat(600));
        assert_eq!(k(&long_options), Vec::<Vec<String>>::new(), "options longer than any transformation's");
    }

    #[test]
    fn every_url_of_a_string_is_read() {
        let k = |s: &str| keys(s, &cdn());
        assert_eq!(k("/_emdash/api/media/file/a.png /_emdash/api/media/file/b.png"), [["a.png"], ["b.png"]]);
        assert_eq!(
            k("https://cdn.example.com/media/a.png, https://cdn.example.com/media/b.png."),
            [vec!["a.png,".to_owned(), "a.png".to_owned()], vec!["b.png.".to_owned(), "b.png".to_owned()]]
        );
        let two = "/_image?href=%2F_emdash%2Fapi%2Fmedia%2Ffile%2Fa.png&w=1 /_image?src=%2F_emdash%2Fapi%2Fmedia%2Ffile%2Fb.png";
        assert_eq!(k(two), [["a.png"], ["b.png"]]);
        // A long key in an encoded value is read whole.
        let key = "A".repeat(1000);
        let encoded = format!("/_image?url={}", encode(&format!("https://cdn.example.com/media/{key}")));
        assert_eq!(k(&encoded), [[key]]);
        // An `href=` that is no query parameter is not an image endpoint's.
        for s in
            ["href=%2F_emdash%2Fapi%2Fmedia%2Ffile%2Fa.png", "<a data-href=%2F_emdash%2Fapi%2Fmedia%2Ffile%2Fa.png>"]
        {
            assert_eq!(k(s), Vec::<Vec<String>>::new(), "{s}");
        }
    }

    /// Every byte of `s` percent-encoded.
    fn encode(s: &str) -> String {
        s.bytes().map(|b| format!("%{b:02X}")).collect()
    }

    #[test]
    fn a_key_is_read_up_to_its_longest_written_form() {
        let k = |s: &str| keys(s, &Public::None);
        // Every byte of a key of the longest length encoded, and eight trailing dots: read.
        let written = format!("/_emdash/api/media/file/{}{}", "%41".repeat(MAX_KEY_BYTES), ".".repeat(8));
        assert_eq!(k(&written), [["A".repeat(MAX_KEY_BYTES)]]);
        // One more character: longer than any key's written form.
        assert_eq!(k(&format!("{written}.")), Vec::<Vec<String>>::new());
    }

    /// The work of reading `s` under `public`.
    fn work(s: &str, public: &Public) -> u64 {
        let mut scanner = Scanner::new(public);
        scanner.string(s, &mut Vec::new());
        scanner.work
    }

    #[test]
    fn the_work_counted_is_what_each_pass_reads_and_copies() {
        let cdn = cdn();
        // Five passes over plain text: the decode check, the file route, the public URL, the
        // query values, the tokens.
        let passes = |s: &str| 5 * s.len() as u64;
        let plain = "x".repeat(10_000);
        assert_eq!(work(&plain, &cdn), passes(&plain));
        let within = |s: &str, lo: u64, hi: u64, what: &str| {
            let w = work(s, &cdn);
            assert!((passes(s) + lo..=passes(s) + hi).contains(&w), "{what}: {w} not in passes + {lo}..={hi}");
        };
        // Decoding: three per byte instead of the check's one, and the decoded view's own passes
        // (2,000 bytes).
        within(&"&amp;".repeat(2_000), 20_000 + 8_000, 20_000 + 10_000, "entities");
        // Keys: five per byte of their runs (10 bytes each): the search for their end, and four
        // readings; a public URL's authority and path once more.
        within(&"/_emdash/api/media/file/kkkkkkkkkk ".repeat(300), 5 * 3_000, 5 * 3_000 + 300, "file URL keys");
        within(
            &"https://cdn.example.com/media/kkkkkkkkkk ".repeat(300),
            5 * 3_000,
            5 * 3_000 + 300 * 30,
            "public URL keys",
        );
        // Tokens: each id-like one copied (20 bytes each).
        within(&"0123456789abcdef0123 ".repeat(500), 20 * 500, 20 * 500, "tokens");
        // Encoded query values (10 bytes each): decoded, two per byte, and the decoded value's
        // passes (8 bytes each, two passes).
        within(&"/_image?url=%2Fxxxxxxx ".repeat(500), 20 * 500 + 16 * 500, 20 * 500 + 16 * 500, "query values");
    }

    #[test]
    fn a_key_ends_where_the_next_url_starts() {
        let k = |s: &str| keys(s, &Public::None);
        assert_eq!(k("/_emdash/api/media/file/a.png/_emdash/api/media/file/b.png"), [["a.png"], ["b.png"]]);
        assert_eq!(k("/_emdash/api/media/file//_emdash/api/media/file/b.png"), [["b.png"]]);
        // The route's last slash may start it again: the key follows the last route.
        assert_eq!(k("/_emdash/api/media/file/_emdash/api/media/file/a.png"), [["a.png"]]);
        let long = format!("/_emdash/api/media/file/{}", "k".repeat(MAX_KEY_SPAN + 1));
        assert_eq!(k(&long), Vec::<Vec<String>>::new(), "longer than any key");
        let encoded = format!("/_emdash/api/media/file/{}", "%41".repeat(MAX_KEY_BYTES));
        assert_eq!(k(&encoded), [["A".repeat(MAX_KEY_BYTES)]], "encoded, it may be three times as long");
    }

    #[test]
    fn ids_are_whole_tokens() {
        let id = "0123456789abcdef0123456789abcdef";
        assert_eq!(ids(id), [id]);
        assert_eq!(ids(&format!("  {id} ")), [id]);
        assert_eq!(ids(&format!("[gallery ids=\"{id},{id}\"]")), [id]);
        assert_eq!(ids(&format!("<div data-media-id=\"{id}\">")), [id]);
        assert_eq!(ids(&format!("id&#58;{id}")), [id]);
        assert_eq!(ids(&format!("{id}x")), [format!("{id}x")], "a longer token is another token");
        assert_eq!(ids(&format!("a{id}{id}")), Vec::<String>::new(), "65 characters: no id");
        assert_eq!(ids("internationalization-and-localization"), Vec::<String>::new(), "no digit: words");
        assert_eq!(ids(&format!("data:image/png;base64,{id}+{id} {id}")), [id], "outside the data: URI");
        assert_eq!(ids(&format!("DATA:text/plain,{id}")), Vec::<String>::new());
        assert_eq!(ids(&format!("/_emdash/api/media/file/{id}.png")), Vec::<String>::new(), "part of a key");
        assert_eq!(ids(&format!("note:{id}")), [id], "a colon after another word starts no data: URI");
        assert_eq!(ids(&format!("data {id}")), [id], "nor the word data alone");
        // Prose is read a token at a time whatever comes before: the `data:` URI and the id
        // after words, at every offset.
        for pad in 0..24 {
            let words = "lorem ipsum dolor sit amet ".repeat(3);
            let s = format!("{}{words}data:x,{id} {words}{id} {words}", "a ".repeat(pad));
            assert_eq!(ids(&s), [id], "{pad}");
            let s = format!("{}{words}{id}:{id}", "b".repeat(pad));
            assert_eq!(ids(&s), [id], "{pad}");
        }
    }

    #[test]
    fn json_escapes_are_decoded() {
        assert_eq!(json_unescape("a"), None);
        assert_eq!(json_unescape(r"\t\r\b\f\'").unwrap(), "\t\r\u{8}\u{c}'");
        assert_eq!(json_unescape(r#"\/x\\\"\n\u002F\ud83d\ude00\q"#).unwrap(), "/x\\\"\n/\u{1F600}\\q");
        assert_eq!(json_unescape(r"\ud83d!").unwrap(), "\u{FFFD}!");
        assert_eq!(json_unescape(r"\u12").unwrap(), "\\u12");
        assert_eq!(json_unescape("é\\/").unwrap(), "é/");
    }

    #[test]
    fn readings_are_distinct_and_bounded() {
        assert_eq!(readings("a.png"), ["a.png"]);
        assert_eq!(readings("a%20b.png,"), ["a%20b.png,", "a b.png,", "a%20b.png", "a b.png"]);
        assert_eq!(readings("..."), ["..."]);
        assert_eq!(readings("%e9%ff"), ["%e9%ff"], "not UTF-8 once decoded: as written only");
    }
}
