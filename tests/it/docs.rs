//! The documents stay true to each other: every relative link and anchor in README.md,
//! ARCHITECTURE.md and docs/ resolves, every document in docs/ is reachable from README, and the
//! two top-level documents stay short enough to read top-down.

use std::collections::BTreeSet;
use std::fs;
use std::path::{Path, PathBuf};

use crate::support::files_with_extension;

fn root() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

fn documents() -> Vec<PathBuf> {
    let mut docs = vec![root().join("README.md"), root().join("ARCHITECTURE.md")];
    docs.extend(files_with_extension(&root().join("docs"), "md"));
    docs
}

/// The anchors GitHub gives a document's headings: lower-cased, punctuation but `-` and `_`
/// dropped, spaces made `-` (outside code fences).
fn anchors(text: &str) -> BTreeSet<String> {
    let mut fenced = false;
    let mut out = BTreeSet::new();
    for line in text.lines() {
        if line.starts_with("```") {
            fenced = !fenced;
        }
        if fenced || !line.starts_with('#') {
            continue;
        }
        let title = line.trim_start_matches('#').trim().to_lowercase();
        let slug: String = title
            .chars()
            .filter(|c| c.is_alphanumeric() || matches!(c, '-' | '_' | ' '))
            .map(|c| if c == ' ' { '-' } else { c })
            .collect();
        out.insert(slug);
    }
    out
}

/// The targets of the document's inline links `[text](target)` outside code fences and code spans.
fn links(text: &str) -> Vec<String> {
    let mut fenced = false;
    let mut out = Vec::new();
    for line in text.lines() {
        if line.starts_with("```") {
            fenced = !fenced;
        }
        if fenced {
            continue;
        }
        // Code spans may hold `](`: drop them.
        let prose: String = line.split('`').step_by(2).collect::<Vec<_>>().join(" ");
        let mut rest = prose.as_str();
        while let Some(at) = rest.find("](") {
            let after = &rest[at + 2..];
            let end = after.find(')').unwrap_or(after.len());
            out.push(after[..end].to_owned());
            rest = &after[end..];
        }
    }
    out
}

#[test]
fn every_relative_link_and_anchor_resolves() {
    let mut checked = 0;
    for doc in documents() {
        let text = fs::read_to_string(&doc).unwrap();
        for target in links(&text) {
            if target.starts_with("http://") || target.starts_with("https://") || target.starts_with("mailto:") {
                continue;
            }
            let (path, anchor) = target.split_once('#').unwrap_or((target.as_str(), ""));
            let file = if path.is_empty() { doc.clone() } else { doc.parent().unwrap().join(path) };
            assert!(file.exists(), "{}: the link {target:?} names no file", doc.display());
            if !anchor.is_empty() {
                let headings = anchors(&fs::read_to_string(&file).unwrap());
                assert!(
                    headings.contains(anchor),
                    "{}: no heading of {} has the anchor #{anchor}",
                    doc.display(),
                    file.display()
                );
            }
            checked += 1;
        }
    }
    assert!(checked > 20, "only {checked} links were checked");
}

#[test]
fn every_document_in_docs_is_linked_from_the_readme() {
    let readme = fs::read_to_string(root().join("README.md")).unwrap();
    let linked: BTreeSet<String> =
        links(&readme).into_iter().map(|t| t.split('#').next().unwrap_or_default().to_owned()).collect();
    for doc in files_with_extension(&root().join("docs"), "md") {
        let name = format!("docs/{}", doc.file_name().unwrap().to_string_lossy());
        assert!(linked.contains(&name), "README does not link {name}");
    }
}

#[test]
fn the_readme_and_the_architecture_stay_short() {
    for (doc, most) in [("README.md", 300), ("ARCHITECTURE.md", 250)] {
        let lines = fs::read_to_string(root().join(doc)).unwrap().lines().count();
        assert!(lines <= most, "{doc} has {lines} lines: move detail to docs/ (at most {most})");
    }
}

#[test]
fn the_link_reader_finds_links_and_anchors() {
    let text = "# A `b`, c\n\n```\n[x](nowhere.md)\n```\nsee [y](docs/a.md#a-b-c) and `[z](q)`\n";
    assert_eq!(links(text), ["docs/a.md#a-b-c"]);
    assert!(anchors(text).contains("a-b-c"));
}
