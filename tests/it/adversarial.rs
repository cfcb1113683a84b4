//! A seeded property test of the promise against anything an author writes: random adversarial
//! entries (floods of file URLs with long keys and escapes, ids as object keys and as tokens,
//! image transformation URLs, look-alikes, data URIs, near-limit sizes, drafts, the trash)
//! written through the API. Every write is either refused with 400 or indexed; afterwards
//! coverage is complete, "Used in" of every media item equals a brute-force scan of the stored
//! data (each stored string split into the pieces it was built from, each piece compared with
//! every spelling of every item), the safe delete refuses exactly the items the scan finds in use,
//! and an unrelated item is deleted.
//!
//! The seed is printed; `MEDIA_USAGE_SEED=<n> cargo test --test it adversarial` replays a run.

use std::collections::{BTreeMap, BTreeSet};

use serde_json::{json, Map, Value as Json};

use crate::support::{code, data, db, settings_with, Api, ADMIN};

const PUBLIC: &str = "https://cdn.example.com/media";
/// Pieces of a stored string are joined by this (a newline ends any URL or token).
const SEP: &str = "\n";

/// splitmix64: a small seeded generator, so a run replays from its seed.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }

    fn chance(&mut self, percent: u64) -> bool {
        self.next() % 100 < percent
    }

    fn pick<'a, T>(&mut self, items: &'a [T]) -> &'a T {
        &items[self.below(items.len())]
    }
}

/// A media item of the library: its id and storage key.
#[derive(Debug, Clone)]
struct Item {
    id: String,
    key: String,
}

/// `key` percent-encoded as a URL's path (each byte but unreserved ones and `/`).
fn encode_path(key: &str) -> String {
    key.bytes()
        .map(|b| match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'.' | b'_' | b'~' | b'/' => (b as char).to_string(),
            _ => format!("%{b:02X}"),
        })
        .collect()
}

/// `s` percent-encoded as a query value (every byte but unreserved ones).
fn encode_query(s: &str) -> String {
    s.bytes()
        .map(|b| match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'.' | b'_' | b'~' => (b as char).to_string(),
            _ => format!("%{b:02X}"),
        })
        .collect()
}

/// Every spelling of a use of `m` the generator writes as one piece, with how it is found.
fn spellings(m: &Item) -> Vec<(String, &'static str)> {
    let (id, key) = (&m.id, &encode_path(&m.key));
    vec![
        (format!("/_emdash/api/media/file/{key}"), "embedded_url"),
        (format!("see https://site.example/_emdash/api/media/file/{key}."), "embedded_url"),
        (format!("https://cdn.example.com/media/{key}?w=1#top"), "embedded_url"),
        (format!("<img src=\"https://CDN.Example.COM:443/media/{key}\">"), "embedded_url"),
        (format!("//cdn.example.com/cdn-cgi/image/width=800,format=auto/media/{key}"), "embedded_url"),
        (format!("https://img.example/cdn-cgi/image/w=1/https://cdn.example.com/media/{key}"), "embedded_url"),
        (format!("/_image?href={}&w=800", encode_query(&format!("/_emdash/api/media/file/{key}"))), "embedded_url"),
        (format!("<a href=\"/_image?w=1&amp;url={}\">x</a>", encode_query(&format!("{PUBLIC}/{key}"))), "embedded_url"),
        (format!("/_emdash/api/media/file/{key}").replace('/', "\\/"), "embedded_url"),
        (format!("<img src=\"/_emdash/api/media/file/{key}\">").replace('/', "&#47;"), "embedded_url"),
        (id.clone(), "embedded_id"),
        (format!("[gallery ids=\"{id}\"]"), "embedded_id"),
        (format!("<figure data-media-id=\"{id}\"></figure>"), "embedded_id"),
        (format!("({id})."), "embedded_id"),
    ]
}

/// Pieces that look like a use of `m` and are not.
fn look_alikes(m: &Item) -> Vec<String> {
    let (id, key) = (&m.id, &encode_path(&m.key));
    vec![
        format!("https://other.example/media/{key}"),
        format!("https://cdn.example.com/cdn-cgi/image/w=1/https://other.example/media/{key}"),
        format!("https://other.example/cdn-cgi/image/w=1/media/{key}"),
        format!("/_emdash/api/media/file/{key}x"),
        format!("https://cdn.example.com/media/{key}.bak"),
        format!("{id}0"),
        format!("x{id}"),
        format!("{id}-copy"),
        format!("data:image/png;base64,{id}+{id}"),
    ]
}

/// Noise: text that names nothing, some of it long and built to be slow to read.
fn noise(rng: &mut Rng, budget: usize) -> String {
    let n = if budget > 1_000 { budget } else { 1 + rng.below(budget) };
    match rng.below(7) {
        // Unknown file URLs with long keys (letters no library key uses), some trailing a dot.
        0 => (0..n / 600 + 1).map(|i| format!("/_emdash/api/media/file/qz{i}{}. ", "q".repeat(550))).collect(),
        1 => "\\u00&#x2F;&amp\\/".repeat(n / 16 + 1),
        2 => (0..n / 30 + 1).map(|i| format!("zz{i:020}yy ")).collect(),
        3 => format!("data:image/png;base64,{}", "QUJDRA+/0123456789abcdef".repeat(n / 24 + 1)),
        4 => "//cdn.example.com/media/".repeat(n / 24 + 1).replace("media/", "other/"),
        5 => "é lorem ipsum ".repeat(n / 14 + 1),
        _ => "/_image?url=%2F".repeat(n / 15 + 1),
    }
}

/// A string of pieces: uses and look-alikes of random items, and noise; records the uses.
fn text(rng: &mut Rng, items: &[Item], big: bool) -> String {
    let mut pieces = Vec::new();
    for _ in 0..1 + rng.below(4) {
        let m = rng.pick(items);
        match rng.below(3) {
            0 => pieces.push(rng.pick(&spellings(m)).0.clone()),
            1 => pieces.push(rng.pick(&look_alikes(m)).clone()),
            _ => {
                let budget = if big { 300_000 + rng.below(400_000) } else { 300 };
                pieces.push(noise(rng, budget));
            }
        }
    }
    pieces.join(SEP)
}

/// Random entry data over the collection's fields.
fn entry_data(rng: &mut Rng, items: &[Item]) -> Json {
    let mut d = Map::new();
    let big = rng.chance(15);
    d.insert("title".into(), json!(text(rng, items, false)));
    if rng.chance(50) {
        let m = rng.pick(items);
        let hero = match rng.below(3) {
            0 => json!(m.id),
            1 => json!({"id": m.id, "alt": text(rng, items, false)}),
            _ => json!({"provider": "external", "id": m.id}),
        };
        d.insert("hero".into(), hero);
    }
    if rng.chance(60) {
        d.insert("notes".into(), json!(text(rng, items, big)));
    }
    if rng.chance(50) {
        let mut body = Vec::new();
        for _ in 0..rng.below(4) {
            let block = match rng.below(3) {
                0 => json!({"_type": "image", "asset": {"_ref": rng.pick(items).id}}),
                1 => json!({"_type": "block", "children": [{"_type": "span", "text": text(rng, items, false)}]}),
                _ => json!({"_type": "gallery", "images": [{"asset": {"id": rng.pick(items).id}}]}),
            };
            body.push(block);
        }
        d.insert("body".into(), json!(body));
    }
    if rng.chance(50) {
        let m = rng.pick(items);
        let mut extra = Map::new();
        if rng.chance(50) {
            extra.insert("captions".into(), json!({ m.id.clone(): text(rng, items, false) }));
        }
        if rng.chance(50) {
            extra.insert("list".into(), json!([text(rng, items, false), 7, null]));
        }
        d.insert("extra".into(), Json::Object(extra));
    }
    if rng.chance(30) {
        d.insert("downloads".into(), json!([{"doc": rng.pick(items).id, "caption": text(rng, items, false)}]));
    }
    Json::Object(d)
}

/// `parent.key` for identifier-like keys, else `parent["key"]`.
fn child(parent: &str, key: &str) -> String {
    let plain = key.starts_with(|c: char| c.is_ascii_alphabetic() || c == '_')
        && key.chars().all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-');
    if plain {
        format!("{parent}.{key}")
    } else {
        format!("{parent}[{}]", Json::String(key.to_owned()))
    }
}

/// Uses: `(media id, path, reference type)`.
type Uses = BTreeSet<(String, String, String)>;
/// What reads one string at a path (inside the item `within`, if any) into the uses.
type ReadString<'a> = dyn FnMut(&str, &str, Option<&str>, &mut Uses) + 'a;

/// Uses found by brute force in one variant's data.
fn scan(data: &Map<String, Json>, items: &[Item]) -> Uses {
    let mut out = BTreeSet::new();
    let spelled: Vec<(String, &str, &str)> =
        items.iter().flat_map(|m| spellings(m).into_iter().map(move |(s, kind)| (s, kind, m.id.as_str()))).collect();
    let mut strings = |path: &str, s: &str, within: Option<&str>, out: &mut Uses| {
        for piece in s.split(SEP) {
            for (spelling, kind, id) in &spelled {
                if piece == spelling && within != Some(*id) {
                    out.insert(((*id).to_owned(), path.to_owned(), (*kind).to_owned()));
                }
            }
        }
    };
    fn walk(
        path: &str,
        v: &Json,
        in_text: bool,
        within: Option<&str>,
        items: &[Item],
        out: &mut Uses,
        strings: &mut ReadString<'_>,
    ) {
        match v {
            Json::String(s) => strings(path, s, within, out),
            Json::Array(a) => {
                for (i, x) in a.iter().enumerate() {
                    walk(&format!("{path}[{i}]"), x, in_text, within, items, out, strings);
                }
            }
            Json::Object(o) => {
                if let Some(Json::Object(asset)) = o.get("asset") {
                    let (key, id) = match (asset.get("_ref"), asset.get("id")) {
                        (Some(Json::String(r)), _) => ("_ref", r.as_str()),
                        (_, Some(Json::String(i))) => ("id", i.as_str()),
                        _ => ("", ""),
                    };
                    if !key.is_empty() {
                        let image = in_text && o.get("_type") == Some(&json!("image"));
                        let kind = if image { "portable_text_image" } else { "embedded_asset" };
                        out.insert((id.to_owned(), format!("{path}.asset.{key}"), kind.to_owned()));
                    }
                }
                for (k, x) in o {
                    let p = child(path, k);
                    if items.iter().any(|m| &m.id == k) {
                        out.insert((k.clone(), p.clone(), "embedded_id".to_owned()));
                    }
                    if k == "asset" {
                        continue;
                    }
                    walk(&p, x, in_text, within, items, out, strings);
                }
            }
            _ => {}
        }
    }
    for (field, v) in data {
        match (field.as_str(), v) {
            ("hero", Json::String(id)) => {
                out.insert((id.clone(), "hero".into(), "image_field".into()));
            }
            ("hero", Json::Object(o)) if o.get("provider") == Some(&json!("external")) => {}
            ("hero", Json::Object(o)) => {
                let id = o["id"].as_str().unwrap_or_default();
                out.insert((id.to_owned(), "hero".into(), "image_field".into()));
                walk("hero.alt", &o["alt"], false, Some(id), items, &mut out, &mut strings);
            }
            ("downloads", Json::Array(rows)) => {
                for (i, row) in rows.iter().enumerate() {
                    let id = row["doc"].as_str().unwrap_or_default();
                    out.insert((id.to_owned(), format!("downloads[{i}].doc"), "file_field".into()));
                    walk(
                        &format!("downloads[{i}].caption"),
                        &row["caption"],
                        false,
                        None,
                        items,
                        &mut out,
                        &mut strings,
                    );
                }
            }
            ("body", v) => walk("body", v, true, None, items, &mut out, &mut strings),
            (f, v) => walk(f, v, false, None, items, &mut out, &mut strings),
        }
    }
    // One occurrence per item and path: a file URL's rather than an id's when both name it.
    let urls: BTreeSet<(String, String)> =
        out.iter().filter(|(_, _, k)| k == "embedded_url").map(|(m, p, _)| (m.clone(), p.clone())).collect();
    out.retain(|(m, p, k)| k != "embedded_id" || !urls.contains(&(m.clone(), p.clone())));
    out
}

/// The seed of this run: `MEDIA_USAGE_SEED`, else a random one.
fn seed() -> u64 {
    match std::env::var("MEDIA_USAGE_SEED") {
        Ok(s) => s.parse().expect("MEDIA_USAGE_SEED is a number"),
        Err(_) => u64::from_str_radix(&media_usage_worker::ids::new_id()[..16], 16).expect("hex digits"),
    }
}

#[test]
fn anything_an_author_writes_is_refused_or_indexed_and_used_in_equals_a_brute_force_scan() {
    let seed = seed();
    eprintln!("adversarial: MEDIA_USAGE_SEED={seed}");
    let mut rng = Rng(seed);
    let settings = settings_with(&[("MEDIA_PUBLIC_URL", PUBLIC)]);
    let api = Api { db: db(), config: settings.config(|| 0.0), storage: None };
    let fields = json!([
        {"slug": "title", "type": "string"},
        {"slug": "hero", "type": "image"},
        {"slug": "notes", "type": "text"},
        {"slug": "body", "type": "portableText"},
        {"slug": "extra", "type": "json"},
        {"slug": "downloads", "type": "repeater", "subFields": [{"slug": "doc", "type": "file"}, {"slug": "caption", "type": "string"}]}
    ]);
    data(&api.post("/schema/collections", &json!({"slug": "posts", "label": "Posts", "fields": fields})));
    let keys = ["a1.png", "dir/sub/b 2.pdf", "c3%20x.jpg", &format!("{}4.png", "k".repeat(900)), "é5.gif", "f6"];
    let items: Vec<Item> = keys
        .iter()
        .map(|k| {
            let d = data(&api.post("/media", &json!({"filename": "f", "mimeType": "image/png", "storageKey": k})));
            Item { id: d["item"]["id"].as_str().unwrap().to_owned(), key: (*k).to_owned() }
        })
        .collect();
    let unrelated =
        data(&api.post("/media", &json!({"filename": "u", "mimeType": "image/png", "storageKey": "unrelated.png"})));
    let unrelated = unrelated["item"]["id"].as_str().unwrap().to_owned();
    let mut entries: Vec<String> = Vec::new();
    let (mut refused, mut written) = (0, 0);
    for n in 0..60 {
        let body = if entries.is_empty() || rng.chance(35) {
            let d = entry_data(&mut rng, &items);
            let status = if rng.chance(60) { "published" } else { "draft" };
            ("POST", "/content/posts".to_owned(), json!({"slug": format!("e{n}"), "status": status, "data": d}))
        } else {
            let e = rng.pick(&entries).clone();
            match rng.below(6) {
                0 | 1 => ("PUT", format!("/content/posts/{e}"), json!({"data": entry_data(&mut rng, &items)})),
                2 | 3 => {
                    ("PUT", format!("/content/posts/{e}"), json!({"draft": true, "data": entry_data(&mut rng, &items)}))
                }
                4 => ("POST", format!("/content/posts/{e}/publish"), json!({})),
                _ => ("DELETE", format!("/content/posts/{e}"), Json::Null),
            }
        };
        let (method, path, payload) = body;
        let bytes = payload.to_string();
        // Bodies stay within the 1 MiB a request may carry (its refusal is not the subject here).
        if bytes.len() > 1_000_000 {
            continue;
        }
        let r = if payload.is_null() {
            api.call(method, &path, Some(ADMIN), None)
        } else {
            api.call(method, &path, Some(ADMIN), Some(bytes.as_bytes()))
        };
        match r.status {
            200 | 201 => {
                written += 1;
                if method == "POST" && path == "/content/posts" {
                    entries.push(r.body_json()["data"]["item"]["id"].as_str().unwrap().to_owned());
                }
            }
            400 | 409 | 413 => {
                // Refused, nothing written: admission (400), a stale draft (409), or a row past
                // what D1 holds (413).
                assert!(
                    ["VALIDATION_ERROR", "CONFLICT", "PAYLOAD_TOO_LARGE"].contains(&code(&r).as_str()),
                    "seed {seed}: {method} {path}: {}",
                    r.body
                );
                refused += 1;
            }
            other => panic!("seed {seed}: {method} {path} ({} bytes) answered {other}: {}", bytes.len(), r.body),
        }
    }
    eprintln!("adversarial: {written} writes indexed, {refused} refused");
    api.drain();
    let status = data(&api.get("/admin/media-usage/status"));
    assert_eq!(status["status"], "complete", "seed {seed}: {status}");
    let failed: i64 = api
        .db
        .connection()
        .query_row("SELECT count(*) FROM _emdash_media_usage_work WHERE state = 'failed'", [], |r| r.get(0))
        .unwrap();
    assert_eq!(failed, 0, "seed {seed}: nothing accepted fails to index");

    // The brute-force scan of what is stored: each entry's live data and its draft overlay.
    let mut expected: BTreeMap<String, BTreeMap<String, BTreeSet<(String, String)>>> = BTreeMap::new();
    let mut blocking: BTreeSet<String> = BTreeSet::new();
    for e in &entries {
        let item = data(&api.get(&format!("/content/posts/{e}")))["item"].clone();
        let live = item["data"].as_object().unwrap().clone();
        let mut variants = vec![(scan(&live, &items), item["status"] == "published")];
        if let Some(rev) = item["draftRevisionId"].as_str() {
            let raw: String =
                api.db.connection().query_row("SELECT data FROM revisions WHERE id = ?1", [rev], |r| r.get(0)).unwrap();
            let mut overlay = live.clone();
            for (k, v) in serde_json::from_str::<Map<String, Json>>(&raw).unwrap() {
                if !k.starts_with('_') {
                    overlay.insert(k, v);
                }
            }
            variants.push((scan(&overlay, &items), true));
        } else {
            variants[0].1 = true;
        }
        for (uses, listed) in variants {
            for (id, path, kind) in uses {
                blocking.insert(id.clone());
                if listed {
                    expected.entry(id).or_default().entry(e.clone()).or_default().insert((path, kind));
                }
            }
        }
    }
    for m in &items {
        let d = data(&api.get(&format!("/media/{}/usage?limit=100", m.id)));
        let mut got: BTreeMap<String, BTreeSet<(String, String)>> = BTreeMap::new();
        for i in d["items"].as_array().unwrap() {
            let occ = got.entry(i["contentId"].as_str().unwrap().to_owned()).or_default();
            for o in i["occurrences"].as_array().unwrap() {
                occ.insert((
                    o["fieldPath"].as_str().unwrap().to_owned(),
                    o["referenceType"].as_str().unwrap().to_owned(),
                ));
            }
        }
        let want = expected.remove(&m.id).unwrap_or_default();
        assert_eq!(got, want, "seed {seed}: Used in of {} ({})", m.id, m.key);
    }
    for m in &items {
        let r = api.delete(&format!("/media/{}", m.id));
        let want = if blocking.contains(&m.id) { (409, "MEDIA_IN_USE") } else { (200, "") };
        assert_eq!((r.status, code(&r).as_str()), want, "seed {seed}: the safe delete of {} ({})", m.id, m.key);
    }
    assert_eq!(api.delete(&format!("/media/{unrelated}")).status, 200, "seed {seed}");
}
