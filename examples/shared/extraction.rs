//! The extraction bench shared by `core_cpu` (native) and `extraction_wasm` (the wasm build):
//! the same 1 MiB bodies read by the same code, timed by the caller's CPU clock, so the two
//! builds' figures compare body for body.

use media_usage_worker::model::source::{SourceMeta, Variant};
use media_usage_worker::usage::extract::{extract, Library, Rules};
use media_usage_worker::usage::fingerprint::fingerprint;
use serde_json::{json, Map, Value as Json};

/// Runs of each body; its best is kept (a run the machine interrupted is not the code's).
pub const RUNS: usize = 7;

/// The bodies: plain text, and bodies built to make a naive reader slow.
pub fn bodies() -> Vec<(&'static str, Json)> {
    const MIB: usize = 1 << 20;
    let rep = |unit: &str| unit.repeat(MIB / unit.len());
    let long_key = "k".repeat(MIB / 2);
    vec![
        ("plain text", json!({"title": rep("lorem ipsum dolor sit amet ")})),
        ("public URL prefixes", json!({"title": rep("//cdn.example.com/media/")})),
        ("file routes", json!({"title": rep("/_emdash/api/media/file/")})),
        ("one endless key", json!({"title": format!("/_emdash/api/media/file/{}", rep("a"))})),
        ("transformation URLs", json!({"title": rep("https://cdn.example.com/cdn-cgi/image/w=1/")})),
        ("encoded query values", json!({"title": rep("/_image?url=%2F")})),
        ("entities and escapes", json!({"title": rep("&#47;&amp;\\/\\u00")})),
        ("id tokens", json!({"title": rep("0123456789abcdef01234,")})),
        ("a data: URI", json!({"title": format!("data:image/png;base64,{}", rep("0123456789abcdef0123+/"))})),
        ("a long key over numbers", json!({"extra": {long_key.clone(): vec![1; MIB / 4]}})),
        ("a long key over assets", json!({"extra": {long_key: vec![json!({"asset": {"_ref": "x"}}); MIB / 40]}})),
    ]
}

/// What a tick does for each small entry besides extraction, on [`RICH_ENTRIES`] rich entries
/// (20 Portable Text blocks, a gallery, a JSON id and text URLs, as `core_cpu`'s): their stored
/// JSON parsed, extracted, resolved against a library of their three items, and fingerprinted.
fn rich_entries(rules: &Rules) -> (usize, impl Fn() -> usize + '_) {
    let media: Vec<(String, String)> = (0..3).map(|k| (format!("{k:0>32}"), format!("rich-{k}.png"))).collect();
    let stored: Vec<String> = (0..RICH_ENTRIES)
        .map(|i| {
            let blocks: Vec<Json> = (0..20)
                .map(|p| {
                    let mut children = vec![json!({"_type": "span", "text": format!("paragraph {p} of entry {i}")})];
                    if p % 10 == 5 {
                        children.push(json!({"_type": "image", "asset": {"_ref": media[0].0}}));
                    }
                    json!({"_type": "block", "_key": format!("b{p}"), "markDefs": [], "children": children})
                })
                .chain([json!({"_type": "gallery", "images": media.iter().map(|m| json!({"asset": {"_ref": m.0}})).collect::<Vec<_>>()})])
                .collect();
            json!({
                "body": blocks,
                "extra": {"ogImage": media[1].0, "unknown": "0123456789abcdef0123456789abcdef"},
                "notes": format!("<p><img src=\"/_emdash/api/media/file/{}\"> and /_emdash/api/media/file/missing-{i}.png</p>", media[2].1),
            })
            .to_string()
        })
        .collect();
    let bytes = stored.iter().map(String::len).sum();
    let library = Library::from_rows(media.iter().map(|(id, key)| (id.clone(), key.clone(), Some("image/png".into()))));
    let meta = SourceMeta {
        source_key: "content:c:e:columns".into(),
        collection_id: "c".into(),
        collection_slug: "posts".into(),
        content_id: "e".into(),
        variant: Variant::Columns,
        locale: None,
        translation_group: None,
        content_slug: None,
        content_title: String::new(),
        content_status: None,
        content_scheduled_at: None,
        content_deleted_at: None,
        revision_id: None,
        schema_version: 1,
        source_updated_at: None,
        source_version: None,
    };
    let run = move || {
        let mut occurrences = 0;
        for text in &stored {
            let data: Map<String, Json> = serde_json::from_str(text).expect("an object");
            let found = extract(&[], &data, rules).resolve(&library);
            occurrences += found.len();
            let _ = fingerprint(&[], rules, 0, &meta, &found);
        }
        occurrences
    };
    (bytes, run)
}

/// Rich entries in [`measure`]'s row "rich entries".
pub const RICH_ENTRIES: usize = 500;

/// Extraction (and resolution against an empty library) of each body, and the rich entries'
/// row: its best of [`RUNS`] by `now` (milliseconds of CPU), as `[{body, bytes, ms, mbPerS}]`.
pub fn measure(now: impl Fn() -> f64) -> Json {
    let rules = Rules::current(Some("https://cdn.example.com/media"));
    let mut out = Vec::new();
    for (name, body) in bodies() {
        let data = body.as_object().expect("an object");
        let bytes = body.to_string().len();
        let ms = (0..RUNS)
            .map(|_| {
                let started = now();
                let extracted = extract(&[], data, &rules);
                let _ = extracted.resolve(&Library::default());
                now() - started
            })
            .fold(f64::INFINITY, f64::min);
        out.push(json!({"body": name, "bytes": bytes, "ms": ms, "mbPerS": bytes as f64 / 1e6 / (ms / 1e3)}));
    }
    let (bytes, run) = rich_entries(&rules);
    let ms = (0..RUNS)
        .map(|_| {
            let started = now();
            assert_eq!(run(), 7 * RICH_ENTRIES, "each rich entry names its items 7 times");
            now() - started
        })
        .fold(f64::INFINITY, f64::min);
    out.push(json!({"body": "rich entries", "bytes": bytes, "ms": ms, "mbPerS": bytes as f64 / 1e6 / (ms / 1e3)}));
    Json::Array(out)
}
