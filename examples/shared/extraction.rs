//! The extraction bench shared by `core_cpu` (native) and `extraction_wasm` (the wasm build):
//! the same 1 MiB bodies read by the same code, timed by the caller's CPU clock, so the two
//! builds' figures compare body for body.

use media_usage_worker::usage::extract::{extract, Library, Rules};
use serde_json::{json, Value as Json};

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

/// Extraction (and resolution against an empty library) of each body: its best of [`RUNS`]
/// by `now` (milliseconds of CPU), as `[{body, bytes, ms, mbPerS}]`.
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
    Json::Array(out)
}
