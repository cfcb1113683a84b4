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

/// A duration written into SQL as a literal date modifier (`'+60 seconds'`, `'-5 minutes'`), if
/// the text has one. Lengths of leases, backoffs and throttles are named constants bound as
/// parameters (`'+' || ?2 || ' seconds'`), so the number lives in one place in the code.
fn literal_duration(sql: &str) -> Option<&str> {
    const UNITS: [&str; 8] = ["second", "seconds", "minute", "minutes", "hour", "hours", "day", "days"];
    sql.match_indices('\'').map(|(i, _)| &sql[i + 1..]).find_map(|rest| {
        let end = rest.find('\'')?;
        let body = &rest[..end];
        let (number, unit) = body.trim().split_once(' ')?;
        let digits = number.strip_prefix(['+', '-']).unwrap_or(number);
        let numeric = !digits.is_empty() && digits.chars().all(|c| c.is_ascii_digit() || c == '.');
        (numeric && UNITS.contains(&unit.trim())).then_some(body)
    })
}

#[test]
fn no_sql_file_writes_a_duration_as_a_literal() {
    assert_eq!(literal_duration("strftime('%Y', 'now', '+60 seconds')"), Some("+60 seconds"));
    assert_eq!(literal_duration("x < strftime('%Y', 'now', '-60 seconds')"), Some("-60 seconds"));
    assert_eq!(literal_duration("strftime('%Y', 'now', '+1.5 days')"), Some("+1.5 days"));
    assert_eq!(literal_duration("strftime('%Y', 'now', '+' || ?2 || ' seconds')"), None);
    assert_eq!(literal_duration("strftime('%Y-%m-%dT%H:%M:%fZ', 'now')"), None);
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut files = files_with_extension(&root.join("src/sql"), "sql");
    files.extend(files_with_extension(&root.join("migrations"), "sql"));
    assert!(files.len() > 100, "found only {} SQL files", files.len());
    for file in files {
        let sql = fs::read_to_string(&file).unwrap();
        if let Some(found) = literal_duration(&sql) {
            panic!("{} writes the duration '{found}' as a literal: bind a named constant instead", file.display());
        }
    }
}
