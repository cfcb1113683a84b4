//! Field paths, built lazily: the walk keeps the path it is at as a stack of borrowed segments and
//! records a node (a parent and one segment) only when a reference is found there, so a long key
//! above many values costs nothing until one of them is a reference; a path is written out only
//! for the occurrences an entry resolves to, shortened so that it stays small whatever the data.

use serde_json::Value as Json;

/// Keys longer than this many characters are shortened in paths (`…` ends them).
pub const MAX_KEY_CHARS: usize = 64;
/// Paths longer than this many bytes are cut (`…` ends them).
pub const MAX_PATH_BYTES: usize = 1024;

/// One step of a path.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Seg {
    /// A key, shortened to [`MAX_KEY_CHARS`] characters (and whether it was).
    Key(Box<str>, bool),
    Index(u32),
}

#[derive(Debug, Clone, PartialEq, Eq)]
struct Node {
    parent: Option<u32>,
    seg: Seg,
}

/// The recorded nodes of one entry's paths.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Paths {
    nodes: Vec<Node>,
}

/// A recorded path.
pub type PathId = u32;

impl Paths {
    fn push(&mut self, parent: Option<PathId>, seg: Seg) -> PathId {
        self.nodes.push(Node { parent, seg });
        u32::try_from(self.nodes.len() - 1).unwrap_or(u32::MAX)
    }

    /// How many nodes are recorded (ids are below it).
    pub fn count(&self) -> usize {
        self.nodes.len()
    }

    /// Records a key under `parent` (the top level when `None`).
    pub fn key(&mut self, parent: Option<PathId>, key: &str) -> PathId {
        let shortened = key.char_indices().nth(MAX_KEY_CHARS).map(|(i, _)| &key[..i]);
        let seg = match shortened {
            Some(s) => Seg::Key(s.into(), true),
            None => Seg::Key(key.into(), false),
        };
        self.push(parent, seg)
    }

    /// Records an array index under `parent`.
    pub fn index(&mut self, parent: Option<PathId>, i: usize) -> PathId {
        self.push(parent, Seg::Index(u32::try_from(i).unwrap_or(u32::MAX)))
    }

    /// The field a path starts with: its first key as written (shortened like any key).
    pub fn field(&self, id: PathId) -> String {
        let mut at = id;
        while let Some(parent) = self.nodes[at as usize].parent {
            at = parent;
        }
        match &self.nodes[at as usize].seg {
            Seg::Key(k, false) => k.to_string(),
            Seg::Key(k, true) => format!("{k}…"),
            Seg::Index(i) => i.to_string(),
        }
    }

    /// The path written out: the field, then `.key` for identifier-like keys, `["key"]`
    /// (JSON-quoted) for any other, `[i]` for indexes; cut after [`MAX_PATH_BYTES`].
    /// Also returns the bytes it read (for the extraction's work count).
    pub fn render(&self, id: PathId) -> (String, u64) {
        let mut chain = Vec::new();
        let mut at = Some(id);
        while let Some(n) = at {
            chain.push(n);
            at = self.nodes[n as usize].parent;
        }
        let mut out = String::new();
        let mut work = chain.len() as u64;
        for (depth, n) in chain.iter().rev().enumerate() {
            if out.len() > MAX_PATH_BYTES {
                break;
            }
            match &self.nodes[*n as usize].seg {
                Seg::Key(k, shortened) if depth == 0 => {
                    out.push_str(k);
                    if *shortened {
                        out.push('…');
                    }
                }
                Seg::Key(k, false) if is_plain(k) => {
                    out.push('.');
                    out.push_str(k);
                }
                Seg::Key(k, shortened) => {
                    let shown = if *shortened { format!("{k}…") } else { k.to_string() };
                    out.push('[');
                    out.push_str(&Json::String(shown).to_string());
                    out.push(']');
                }
                Seg::Index(i) => {
                    out.push('[');
                    out.push_str(&i.to_string());
                    out.push(']');
                }
            }
        }
        work += out.len() as u64;
        if out.len() > MAX_PATH_BYTES {
            let mut cut = MAX_PATH_BYTES;
            while !out.is_char_boundary(cut) {
                cut -= 1;
            }
            out.truncate(cut);
            out.push('…');
        }
        (out, work)
    }
}

/// Keys written `.key` in a path: a letter, `_` or `$`, then letters, digits, `_`, `$` or `-`.
fn is_plain(key: &str) -> bool {
    key.chars().next().is_some_and(|c| c.is_ascii_alphabetic() || c == '_' || c == '$')
        && key.chars().all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '$' | '-'))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn path(segs: &[Result<&str, usize>]) -> String {
        let mut p = Paths::default();
        let mut at = None;
        for s in segs {
            at = Some(match s {
                Ok(k) => p.key(at, k),
                Err(i) => p.index(at, *i),
            });
        }
        p.render(at.unwrap()).0
    }

    #[test]
    fn paths_quote_keys_that_are_not_identifiers() {
        assert_eq!(path(&[Ok("x"), Ok("_key")]), "x._key");
        assert_eq!(path(&[Ok("x"), Ok("$ref")]), "x.$ref");
        assert_eq!(path(&[Ok("x"), Ok("og-image2")]), "x.og-image2");
        assert_eq!(path(&[Ok("x"), Ok("9lives")]), "x[\"9lives\"]");
        assert_eq!(path(&[Ok("x"), Ok("-a")]), "x[\"-a\"]");
        assert_eq!(path(&[Ok("x"), Ok("og:image")]), "x[\"og:image\"]");
        assert_eq!(path(&[Ok("x"), Ok("")]), "x[\"\"]");
        assert_eq!(path(&[Ok("body"), Err(0), Ok("children"), Err(12), Ok("asset")]), "body[0].children[12].asset");
    }

    /// A path of `field` then one key per segment of `keys`, written out, and its work.
    fn rendered(field: &str, keys: &[String]) -> (String, u64) {
        let mut p = Paths::default();
        let mut at = p.key(None, field);
        for k in keys {
            at = p.key(Some(at), k);
        }
        p.render(at)
    }

    #[test]
    fn a_path_is_cut_after_its_limit_and_only_then() {
        // "x" and 31 segments of ".k…k" (32 bytes each, 31 k's): 1 + 31 × 32 = 993 bytes; a
        // 32nd segment of 31 bytes (".k" × 30) makes exactly 1,024.
        let mut keys: Vec<String> = (0..31).map(|i| format!("{}{i:02}", "k".repeat(29))).collect();
        keys.push("k".repeat(30));
        let (exact, _) = rendered("x", &keys);
        assert_eq!(exact.len(), MAX_PATH_BYTES, "exactly the limit: kept whole");
        assert!(!exact.ends_with('…'));
        // One more segment after exactly the limit: cut, and marked.
        keys.push("more".into());
        let (cut, _) = rendered("x", &keys);
        assert_eq!(cut, format!("{exact}…"));
        // A cut inside a character backs off to the character's start.
        let mut wide: Vec<String> = (0..31).map(|i| format!("{}{i:02}", "k".repeat(29))).collect();
        wide.push(format!("kk{}", "é".repeat(20)));
        let (p, _) = rendered("x", &wide);
        assert!(p.len() <= MAX_PATH_BYTES + '…'.len_utf8() && p.ends_with('…'), "{}", p.len());
        assert_eq!(p.len(), MAX_PATH_BYTES - 1 + '…'.len_utf8(), "1,023 bytes and the mark");
    }

    #[test]
    fn writing_a_path_out_costs_what_it_writes_and_its_depth_however_deep_and_long() {
        let (short, work) = rendered("x", &["a".into(), "b".into()]);
        assert_eq!(short, "x.a.b");
        assert_eq!(work, 3 + 5, "three nodes, five bytes");
        let keys: Vec<String> = (0..120).map(|i| format!("{}{i:03}", "k".repeat(200))).collect();
        let (long, work) = rendered("x", &keys);
        assert!(long.ends_with('…'));
        assert!(work <= 121 + (MAX_PATH_BYTES + 100) as u64, "the rest of the path is not written: {work}");
    }

    #[test]
    fn long_keys_and_paths_are_shortened() {
        let long = "k".repeat(200);
        assert_eq!(path(&[Ok("x"), Ok(&long)]), format!("x[\"{}…\"]", "k".repeat(MAX_KEY_CHARS)));
        assert_eq!(path(&[Ok(&long)]), format!("{}…", "k".repeat(MAX_KEY_CHARS)));
        let exact = "é".repeat(MAX_KEY_CHARS);
        assert_eq!(path(&[Ok("x"), Ok(&exact)]), format!("x[\"{exact}\"]"), "64 characters are kept");
        let deep: Vec<Result<&str, usize>> =
            std::iter::once(Ok("x")).chain((0..100).map(|_| Ok(long.as_str()))).collect();
        let p = path(&deep);
        assert!(p.len() <= MAX_PATH_BYTES + '…'.len_utf8() && p.ends_with('…'), "{}", p.len());
    }
}
