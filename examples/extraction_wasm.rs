//! The extraction bench (`shared/extraction.rs`) in the wasm build: built for
//! `wasm32-unknown-unknown` with the worker's release profile, bound for Node.js by
//! wasm-bindgen, and run by `tests/bench/wasm_extraction.mjs`, which gives it the process's CPU
//! clock (workerd's clocks do not advance while wasm runs). Natively it builds to nothing.

#[cfg(target_arch = "wasm32")]
#[path = "shared/extraction.rs"]
mod extraction;

/// The bench's figures as JSON (`[{body, bytes, ms, mbPerS}]`), timed by `clock`, a JavaScript
/// function returning milliseconds of CPU.
#[cfg(target_arch = "wasm32")]
#[wasm_bindgen::prelude::wasm_bindgen]
pub fn extraction(clock: &js_sys::Function) -> String {
    let now = || clock.call0(&wasm_bindgen::JsValue::NULL).ok().and_then(|v| v.as_f64()).unwrap_or(f64::NAN);
    extraction::measure(now).to_string()
}
