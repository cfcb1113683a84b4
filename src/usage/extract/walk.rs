//! The walk over an entry's data under the current rules: each field by its type (media fields,
//! repeaters' media sub-fields, Portable Text), then every value at any depth, recording the path
//! it is at only when a reference is found there.

use std::rc::Rc;

use serde_json::{Map, Value as Json};

use super::path::{PathId, MAX_KEY_CHARS};
use super::reference::{asset_reference, is_external, parse_reference, reference_type, structural, Reference};
use super::text::{Public, Scanner};
use super::{Candidate, Extracted, ExtractionField, Names, ReferenceType};
use crate::model::field::FieldType;

/// Extracts the references of an entry's data under the current rules (files also served under
/// `public`): the structural ones as occurrences, the strings that may name media as candidates.
pub(super) fn extract(fields: &[ExtractionField], data: &Map<String, Json>, public: &Public) -> Extracted {
    let mut w = Walk {
        scanner: Scanner::new(public),
        out: Extracted::default(),
        frames: Vec::new(),
        recorded: 0,
        names: Vec::new(),
    };
    for (key, value) in data {
        w.frames.push(Frame { seg: Seg::Key(key), node: None });
        match fields.iter().find(|f| f.slug.as_str() == key) {
            Some(f) => match f.field_type {
                FieldType::Image | FieldType::File => w.media_value(f.field_type, value),
                FieldType::Repeater => match value.as_array() {
                    Some(items) => {
                        for (i, item) in items.iter().enumerate() {
                            w.enter(Seg::Index(i));
                            match item.as_object() {
                                Some(obj) => {
                                    for (k, v) in obj {
                                        w.enter(Seg::Key(k));
                                        w.object_key(k);
                                        match f.media_sub_fields.iter().find(|s| s.slug.as_str() == k) {
                                            Some(sub) => w.media_value(sub.field_type, v),
                                            None => w.value(v, false, None),
                                        }
                                        w.leave();
                                    }
                                }
                                None => w.value(item, false, None),
                            }
                            w.leave();
                        }
                    }
                    None => w.value(value, false, None),
                },
                FieldType::PortableText => w.value(value, true, None),
                _ => w.value(value, false, None),
            },
            None => w.value(value, false, None),
        }
        w.leave();
    }
    let mut out = w.out;
    out.work += w.scanner.work;
    out
}

/// One step of the path the walk is at, borrowed from the data.
#[derive(Debug, Clone, Copy)]
enum Seg<'d> {
    Key(&'d str),
    Index(usize),
}

#[derive(Debug)]
struct Frame<'d> {
    seg: Seg<'d>,
    /// Its recorded node, once a reference was found at or below it.
    node: Option<PathId>,
}

struct Walk<'d, 'r> {
    scanner: Scanner<'r>,
    out: Extracted,
    /// The path the walk is at.
    frames: Vec<Frame<'d>>,
    /// How many frames (from the top) have their node recorded.
    recorded: usize,
    /// What the string being read names (reused).
    names: Vec<Names>,
}

impl<'d> Walk<'d, '_> {
    fn enter(&mut self, seg: Seg<'d>) {
        self.frames.push(Frame { seg, node: None });
    }

    fn leave(&mut self) {
        self.frames.pop();
        self.recorded = self.recorded.min(self.frames.len());
    }

    /// The node of the path the walk is at, recording the frames not recorded yet.
    fn here(&mut self) -> PathId {
        for n in self.recorded..self.frames.len() {
            let parent = n.checked_sub(1).and_then(|p| self.frames[p].node);
            let node = match self.frames[n].seg {
                Seg::Key(k) => {
                    self.out.work += k.len().min(4 * MAX_KEY_CHARS) as u64;
                    self.out.paths.key(parent, k)
                }
                Seg::Index(i) => self.out.paths.index(parent, i),
            };
            self.frames[n].node = Some(node);
        }
        self.recorded = self.frames.len();
        self.frames.last().and_then(|f| f.node).unwrap_or_default()
    }

    /// Candidates for what the scanner found, at the path the walk is at.
    fn push_names(&mut self, within: Option<&Rc<str>>) {
        if self.names.is_empty() {
            return;
        }
        let path = self.here();
        for names in self.names.drain(..) {
            self.out.candidates.push(Candidate { path, names, within: within.cloned() });
        }
    }

    /// An object key (below the top level): a media id when it is one.
    fn object_key(&mut self, k: &str) {
        self.scanner.key(k, &mut self.names);
        self.push_names(None);
    }

    fn push_structural(&mut self, kind: ReferenceType, r: Reference, fallback: Option<&'static str>) {
        let path = self.here();
        self.out.structural.push(structural(path, kind, r, fallback));
    }

    /// An `image`/`file` field or sub-field value: a reference by its type when it is one;
    /// the rest of it (other keys of the object, or a value that is no reference) is walked.
    fn media_value(&mut self, field_type: FieldType, value: &'d Json) {
        let parsed = reference_type(field_type).zip(parse_reference(value));
        let Some(((kind, fallback), r)) = parsed else {
            return self.value(value, false, None);
        };
        let media_id: Option<Rc<str>> = (r.provider == "local").then(|| r.id.as_str().into());
        self.push_structural(kind, r, fallback);
        if let Json::Object(o) = value {
            for (k, v) in o.iter().filter(|(k, _)| k.as_str() != "id") {
                self.enter(Seg::Key(k));
                self.object_key(k);
                self.value(v, false, media_id.as_ref());
                self.leave();
            }
        }
    }

    /// Any value, at any depth: asset objects are references; strings and keys may name media.
    fn value(&mut self, value: &'d Json, in_portable_text: bool, within: Option<&Rc<str>>) {
        match value {
            Json::String(s) => {
                self.scanner.string(s, &mut self.names);
                self.push_names(within);
            }
            Json::Array(items) => {
                for (i, item) in items.iter().enumerate() {
                    self.enter(Seg::Index(i));
                    self.value(item, in_portable_text, within);
                    self.leave();
                }
            }
            Json::Object(o) => {
                // An external value's ids are another provider's: never read as local ids.
                let skipped: &[&str] = if is_external(o) { &["id", "_ref"] } else { &[] };
                let asset = o.get("asset").and_then(Json::as_object);
                let found = asset.and_then(asset_reference);
                // The key the reference was read from (the asset id of its provider, whichever
                // provider) and the local media it names.
                let consumed: Option<(&str, Option<Rc<str>>)> =
                    found.as_ref().map(|(key, r)| (*key, (r.provider == "local").then(|| r.id.as_str().into())));
                let asset_skips: &[&str] = if asset.is_some_and(is_external) { &["id", "_ref"] } else { &[] };
                if let Some((key, r)) = found {
                    let is_image = o.get("_type").and_then(Json::as_str) == Some("image");
                    let (kind, fallback) = if in_portable_text && is_image {
                        (ReferenceType::PortableTextImage, Some("image"))
                    } else {
                        (ReferenceType::EmbeddedAsset, None)
                    };
                    self.enter(Seg::Key("asset"));
                    self.enter(Seg::Key(key));
                    self.push_structural(kind, r, fallback);
                    self.leave();
                    self.leave();
                }
                for (k, v) in o.iter().filter(|(k, _)| !skipped.contains(&k.as_str())) {
                    self.enter(Seg::Key(k));
                    self.object_key(k);
                    match (k.as_str(), asset) {
                        ("asset", Some(a)) => {
                            let inner = consumed.as_ref().and_then(|(_, m)| m.as_ref()).or(within);
                            for (ak, av) in a.iter() {
                                let skip = consumed.as_ref().is_some_and(|(key, _)| ak.as_str() == *key)
                                    || asset_skips.contains(&ak.as_str());
                                if skip {
                                    continue;
                                }
                                self.enter(Seg::Key(ak));
                                self.object_key(ak);
                                self.value(av, in_portable_text, inner);
                                self.leave();
                            }
                        }
                        _ => self.value(v, in_portable_text, within),
                    }
                    self.leave();
                }
            }
            _ => {}
        }
    }
}
