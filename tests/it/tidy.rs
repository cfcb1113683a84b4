//! Layering and hygiene rules that the compiler cannot check.

use std::fs;
use std::path::{Path, PathBuf};

use crate::support::files_with_extension;

fn all_rust_files() -> Vec<PathBuf> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut files = files_with_extension(&root.join("src"), "rs");
    files.extend(files_with_extension(&root.join("tests"), "rs"));
    files
}

#[test]
fn worker_is_named_only_under_src_edge() {
    for file in all_rust_files() {
        let text = fs::read_to_string(&file).unwrap().replace("media_usage_worker::", "");
        let in_edge = file.components().any(|c| c.as_os_str() == "edge");
        for needle in ["worker::", "wasm_bindgen", "js_sys", "Date::now", "SystemTime::now"] {
            if !in_edge && text.contains(needle) && !file.ends_with("tidy.rs") {
                panic!("{} names {needle} outside src/edge/", file.display());
            }
        }
    }
}

#[test]
fn every_rust_file_starts_with_a_module_doc() {
    for file in all_rust_files() {
        let text = fs::read_to_string(&file).unwrap();
        assert!(text.starts_with("//!"), "{} lacks a leading //! doc", file.display());
    }
}

#[test]
fn no_sql_keywords_in_rust_string_literals_outside_the_repository_and_tests() {
    // SQL lives in src/sql/**.sql; Rust code outside exec/ only includes it.
    for file in all_rust_files() {
        let path = file.to_string_lossy();
        if path.contains("/tests/") || path.contains("/src/exec/") || path.contains("/src/sql.rs") {
            continue;
        }
        let text = fs::read_to_string(&file).unwrap();
        for needle in ["\"SELECT ", "\"INSERT ", "\"UPDATE ", "\"DELETE FROM", "\"CREATE ", "\"DROP "] {
            assert!(!text.contains(needle), "{} embeds SQL ({needle})", file.display());
        }
    }
}

#[test]
fn the_source_signature_is_written_once_in_its_fragment() {
    // The load and the guarded publish compare it: a second copy could drift from the first.
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let needle = "json_group_array(json_array(s.source_key";
    let holders: Vec<String> = files_with_extension(&root.join("src/sql"), "sql")
        .into_iter()
        .filter(|f| fs::read_to_string(f).unwrap().contains(needle))
        .map(|f| f.strip_prefix(root).unwrap().to_string_lossy().replace('\\', "/"))
        .collect();
    assert_eq!(holders, ["src/sql/usage/source_signature.sql"], "the source signature is written out in {holders:?}");
    let fragment = fs::read_to_string(root.join("src/sql/usage/source_signature.sql")).unwrap();
    assert_eq!(fragment.matches(needle).count(), 1, "the fragment writes the signature more than once");
}
