//! Unit tests of the reference rules: every rule at every position, spellings and look-alikes,
//! the first rules, and linear cost on adversarial data.

use super::*;
use crate::model::field::{Field, FieldMeta, FieldType, SubField};
use crate::model::ident::Ident;
use serde_json::json;

fn field(slug: &str, t: FieldType) -> Field {
    Field {
        id: slug.into(),
        slug: Ident::parse(slug).unwrap(),
        label: slug.into(),
        field_type: t,
        required: false,
        sub_fields: vec![],
        sort_order: 0,
        meta: FieldMeta::default(),
    }
}

fn schema() -> Vec<ExtractionField> {
    let mut sections = field("sections", FieldType::Repeater);
    sections.sub_fields = vec![
        SubField { slug: Ident::parse("image").unwrap(), field_type: FieldType::Image },
        SubField { slug: Ident::parse("file").unwrap(), field_type: FieldType::File },
    ];
    extraction_fields(&[
        field("title", FieldType::String),
        field("hero", FieldType::Image),
        field("attachment", FieldType::File),
        field("body", FieldType::PortableText),
        sections,
    ])
}

/// The occurrences under the current rules, with a library that holds nothing.
fn run(data: Json) -> Vec<Occurrence> {
    extract(&schema(), data.as_object().unwrap(), &Rules::default()).resolve(&Library::default())
}

#[test]
fn discovery_keeps_only_extraction_fields_sorted() {
    let s = schema();
    let slugs: Vec<&str> = s.iter().map(|f| f.slug.as_str()).collect();
    assert_eq!(slugs, ["attachment", "body", "hero", "sections"]);
    let sections = &s[3];
    let subs: Vec<(&str, FieldType)> =
        sections.media_sub_fields.iter().map(|s| (s.slug.as_str(), s.field_type)).collect();
    assert_eq!(subs, [("file", FieldType::File), ("image", FieldType::Image)]);
    let mut files_only = field("r", FieldType::Repeater);
    files_only.sub_fields = vec![SubField { slug: Ident::parse("f").unwrap(), field_type: FieldType::File }];
    assert!(is_extraction_field(&files_only), "a repeater of files holds references");
    let mut texts_only = field("r", FieldType::Repeater);
    texts_only.sub_fields = vec![SubField { slug: Ident::parse("t").unwrap(), field_type: FieldType::String }];
    assert!(!is_extraction_field(&texts_only));
    assert!(is_extraction_field(&field("h", FieldType::Image)));
    assert!(!is_extraction_field(&field("j", FieldType::Json)));
}

#[test]
fn scenario_1_image_and_file_objects() {
    let occ = run(json!({
        "hero": {"id": "m1", "provider": "local", "mimeType": "Image/JPEG; charset=utf-8"},
        "attachment": {"id": "f1", "mimeType": "application/pdf"}
    }));
    assert_eq!(occ.len(), 2);
    let hero = occ.iter().find(|o| o.field_slug == "hero").unwrap();
    assert_eq!(
        (hero.reference_type, hero.media_id.as_deref(), hero.media_kind, hero.mime_type.as_deref()),
        (ReferenceType::ImageField, Some("m1"), Some("image"), Some("image/jpeg"))
    );
    let att = occ.iter().find(|o| o.field_slug == "attachment").unwrap();
    assert_eq!((att.reference_type, att.media_kind), (ReferenceType::FileField, Some("document")));
}

#[test]
fn scenario_2_bare_strings_are_local_ids() {
    let occ = run(json!({"hero": "m1", "attachment": "f1"}));
    let hero = occ.iter().find(|o| o.field_slug == "hero").unwrap();
    assert_eq!(
        (hero.media_id.as_deref(), hero.mime_type.as_deref(), hero.media_kind),
        (Some("m1"), None, Some("image"))
    );
    let att = occ.iter().find(|o| o.field_slug == "attachment").unwrap();
    assert_eq!((att.provider.as_str(), att.media_kind), ("local", None));
}

#[test]
fn scenario_3_urls_paths_blanks_and_externals_are_not_references() {
    for v in [
        json!("https://x/y.jpg"),
        json!("//cdn/y.jpg"),
        json!("/images/y.jpg"),
        json!("images/y.jpg"),
        json!("/_emdash/api/media/file/uploads/y.jpg"),
        json!("   "),
        json!({"id": 123}),
        json!({"src": "https://x/y.jpg"}),
        json!({"url": "https://x/y.jpg"}),
        json!({"provider": "external", "id": "x"}),
        json!({"id": "data:image/png;base64,AAA"}),
        json!(42),
    ] {
        assert!(run(json!({ "hero": v })).is_empty(), "{v}");
    }
}

#[test]
fn scenario_4_other_providers_keep_slashes_and_have_no_media_id() {
    let occ = run(json!({"hero": {"id": "folder/cf-1", "provider": "cloudflare-images"}}));
    assert_eq!(occ.len(), 1);
    assert_eq!((occ[0].media_id.as_deref(), occ[0].provider_asset_id.as_str()), (None, "folder/cf-1"));
    assert_eq!(occ[0].provider, "cloudflare-images");
}

#[test]
fn scenario_5_repeaters_index_image_and_file_sub_fields() {
    let occ = run(json!({"sections": [
        {"image": {"id": "a"}, "file": {"id": "zz", "mimeType": "application/pdf"}},
        {"image": "b"}, "junk", {"other": "c"}, {"file": "https://x/y.pdf"}
    ]}));
    let found: Vec<(&str, ReferenceType, Option<&str>)> =
        occ.iter().map(|o| (o.field_path.as_str(), o.reference_type, o.media_kind)).collect();
    assert_eq!(
        found,
        [
            ("sections[0].file", ReferenceType::FileField, Some("document")),
            ("sections[0].image", ReferenceType::ImageField, Some("image")),
            ("sections[1].image", ReferenceType::ImageField, Some("image")),
        ]
    );
    assert!(occ.iter().all(|o| o.field_slug == "sections"));
    // A bare file id has no kind until its MIME type is known, as for a top-level file field.
    let bare = run(json!({"sections": [{"file": "f1"}]}));
    assert_eq!((bare[0].reference_type, bare[0].media_kind), (ReferenceType::FileField, None));
}

#[test]
fn scenario_6_portable_text_image_blocks() {
    let occ = run(json!({"body": [
        {"_type": "block", "children": []},
        {"_type": "image", "asset": {"_ref": "m1", "mimeType": "image/png"}},
        {"_type": "image", "asset": {"id": "cf", "provider": "cloudflare-images"}},
        {"_type": "image", "asset": {"url": "https://x/y.png"}},
        {"_type": "image"},
        {"_type": "image", "asset": {"_ref": "https://bad", "id": "m2"}}
    ]}));
    let got: Vec<(&str, Option<&str>, &str)> =
        occ.iter().map(|o| (o.field_path.as_str(), o.media_id.as_deref(), o.provider.as_str())).collect();
    assert_eq!(
        got,
        [
            ("body[1].asset._ref", Some("m1"), "local"),
            ("body[2].asset.id", None, "cloudflare-images"),
            ("body[5].asset.id", Some("m2"), "local"),
        ]
    );
    assert!(occ.iter().all(|o| o.reference_type == ReferenceType::PortableTextImage));
    assert_eq!(occ[0].media_kind, Some("image"));
}

#[test]
fn scenario_7_same_media_in_three_places_and_dedup() {
    let occ = run(json!({
        "hero": "m1",
        "sections": [{"image": "m1"}],
        "body": [{"_type": "image", "asset": {"_ref": "m1"}}]
    }));
    assert_eq!(occ.len(), 3);
    // Duplicate field definitions produce identical tuples, which are removed.
    let mut doubled = schema();
    doubled.extend(schema());
    let once = extract(&doubled, json!({"hero": "m1"}).as_object().unwrap(), &Rules::default());
    assert_eq!(once.resolve(&Library::default()).len(), 1);
}

#[test]
fn mime_normalisation_and_kinds() {
    let cases: &[(&str, Option<&str>, &str)] = &[
        ("Image/PNG", Some("image/png"), "image"),
        ("video/mp4; codecs=x", Some("video/mp4"), "video"),
        ("audio/ogg", Some("audio/ogg"), "audio"),
        ("font/woff2", Some("font/woff2"), "font"),
        ("application/font-woff", Some("application/font-woff"), "font"),
        ("text/plain", Some("text/plain"), "text"),
        ("application/msword", Some("application/msword"), "document"),
        (
            "application/vnd.openxmlformats-officedocument.wordprocessingml.document",
            Some("application/vnd.openxmlformats-officedocument.wordprocessingml.document"),
            "document",
        ),
        ("application/x-7z-compressed", Some("application/x-7z-compressed"), "archive"),
        ("application/octet-stream", Some("application/octet-stream"), "other"),
    ];
    for (raw, norm, kind) in cases {
        let n = normalize_mime(Some(raw));
        assert_eq!(n.as_deref(), *norm, "{raw}");
        assert_eq!(media_kind(n.as_deref().unwrap()), *kind, "{raw}");
    }
    assert_eq!(normalize_mime(Some("jpeg")), None);
    assert_eq!(normalize_mime(None), None);
}

const A: &str = "0123456789abcdef0123456789abcdef";
const B: &str = "fedcba9876543210fedcba9876543210";
const C: &str = "01HZX3K8Q4V6W9YB2C5D7E8F9G";

/// A library holding A (`a.png`), B (`dir/b 1.pdf`) and C (`c.jpg`).
fn library() -> Library {
    Library::from_rows([
        (A.to_owned(), "a.png".to_owned(), Some("image/png".to_owned())),
        (B.to_owned(), "dir/b 1.pdf".to_owned(), Some("application/pdf".to_owned())),
        (C.to_owned(), "c.jpg".to_owned(), Some("image/jpeg".to_owned())),
    ])
}

fn full_schema() -> Vec<ExtractionField> {
    let mut downloads = field("downloads", FieldType::Repeater);
    downloads.sub_fields = vec![SubField { slug: Ident::parse("doc").unwrap(), field_type: FieldType::File }];
    extraction_fields(&[
        field("hero", FieldType::Image),
        field("body", FieldType::PortableText),
        field("extra", FieldType::Json),
        field("title", FieldType::String),
        downloads,
    ])
}

fn found(data: Json, rules: &Rules) -> Vec<(String, ReferenceType, Option<String>, i64)> {
    extract(&full_schema(), data.as_object().unwrap(), rules)
        .resolve(&library())
        .into_iter()
        .map(|o| (o.field_path, o.reference_type, o.media_id, o.occurrence_index))
        .collect()
}

fn one(data: Json) -> (String, ReferenceType, Option<String>) {
    let all = found(data.clone(), &Rules::current(Some("https://cdn.example.com/media/")));
    assert_eq!(all.len(), 1, "{data}: {all:?}");
    let (p, t, m, _) = all.into_iter().next().unwrap();
    (p, t, m)
}

#[test]
fn every_rule_at_every_position() {
    use ReferenceType::*;
    let s = |x: &str| Some(x.to_owned());
    let url_a = format!("/_emdash/api/media/file/{}", "a.png");
    let rows: Vec<(Json, &str, ReferenceType, Option<String>)> = vec![
        (json!({"hero": A}), "hero", ImageField, s(A)),
        (json!({"downloads": [{}, {}, {"doc": {"id": B}}]}), "downloads[2].doc", FileField, s(B)),
        (json!({"body": [{"_type": "image", "asset": {"_ref": A}}]}), "body[0].asset._ref", PortableTextImage, s(A)),
        (
            json!({"body": [{"_type": "block", "children": [{"_type": "span"}, {"_type": "image", "asset": {"_ref": C}}]}]}),
            "body[0].children[1].asset._ref",
            PortableTextImage,
            s(C),
        ),
        (
            json!({"body": [{"_type": "gallery", "images": [{"asset": {"id": C}}]}]}),
            "body[0].images[0].asset.id",
            EmbeddedAsset,
            s(C),
        ),
        (json!({"extra": {"cover": {"asset": {"_ref": B}}}}), "extra.cover.asset._ref", EmbeddedAsset, s(B)),
        (json!({"extra": {"ogImage": A}}), "extra.ogImage", EmbeddedId, s(A)),
        (json!({"title": format!("  {C} ")}), "title", EmbeddedId, s(C)),
        (json!({"extra": {"og:image": [C]}}), "extra[\"og:image\"][0]", EmbeddedId, s(C)),
        (json!({"extra": {"ogImage": format!("https://site.example{url_a}")}}), "extra.ogImage", EmbeddedUrl, s(A)),
        (json!({"title": format!("<p><img src=\"{url_a}\"></p>")}), "title", EmbeddedUrl, s(A)),
        (json!({"title": format!("![x]({url_a}?w=200) and more")}), "title", EmbeddedUrl, s(A)),
        (json!({"title": format!("see {url_a}.")}), "title", EmbeddedUrl, s(A)),
        (json!({"title": "/_emdash/api/media/file/dir%2Fb%201.pdf"}), "title", EmbeddedUrl, s(B)),
        (json!({"title": "https://cdn.example.com/media/dir/b%201.pdf"}), "title", EmbeddedUrl, s(B)),
        (json!({"title": "//cdn.example.com/media/c.jpg#top"}), "title", EmbeddedUrl, s(C)),
        (
            json!({"body": [{"_type": "block", "markDefs": [{"_type": "link", "href": url_a}]}]}),
            "body[0].markDefs[0].href",
            EmbeddedUrl,
            s(A),
        ),
        (json!({"downloads": [{"caption": A}]}), "downloads[0].caption", EmbeddedId, s(A)),
        // A value an image field cannot hold as a reference is still read as text.
        (json!({"hero": url_a}), "hero", EmbeddedUrl, s(A)),
        (json!({"hero": {"provider": "external", "url": url_a}}), "hero.url", EmbeddedUrl, s(A)),
        // Keys that are not fields (a draft's extra data) are read too.
        (json!({"legacy": {"x": [A]}}), "legacy.x[0]", EmbeddedId, s(A)),
    ];
    for (data, path, kind, media) in rows {
        assert_eq!(one(data.clone()), (path.to_owned(), kind, media), "{data}");
    }
}

#[test]
fn strings_that_name_nothing_are_not_references() {
    for data in [
        json!({"extra": {"x": "0123456789abcdef0123456789abcdee"}}),
        json!({"title": "https://elsewhere.example/media/a.png"}),
        json!({"title": "/media/file/a.png"}),
        json!({"title": "/_emdash/api/media/file/a.png2"}),
        json!({"title": "/_emdash/api/media/file/a"}),
        json!({"title": "/_emdash/api/media/file/x/a.png"}),
        json!({"title": "https://cdn.example.com/other/a.png"}),
        json!({"title": "https://cdn.example.com/media/a.png.bak"}),
        json!({"title": format!("{A}x")}),
        json!({"body": [{"_type": "image", "asset": {"_ref": "   "}}]}),
        json!({"body": [{"_type": "image", "asset": {"_ref": "photo-1", "provider": "external"}}]}),
        json!({"extra": {"asset": {"url": "https://x.example/a.png"}}}),
        json!({"extra": [1, true, null, 2.5]}),
    ] {
        assert_eq!(found(data.clone(), &Rules::current(Some("https://cdn.example.com/media"))), [], "{data}");
    }
}

#[test]
fn the_same_item_in_its_own_object_is_one_reference() {
    let url = "/_emdash/api/media/file/a.png";
    // An image field object that also carries its URL, an asset with its URL: one each.
    assert_eq!(one(json!({"hero": {"id": A, "url": url, "alt": A}})).0, "hero");
    assert_eq!(one(json!({"extra": {"asset": {"_ref": A, "url": url}}})).0, "extra.asset._ref");
    // Another item inside the object is another reference.
    let both = found(json!({"hero": {"id": A, "caption": C}}), &Rules::default());
    assert_eq!(both.len(), 2);
    // One string naming two items: one occurrence index each; naming one twice: once.
    let text = format!("{url} /_emdash/api/media/file/c.jpg {url}");
    let got = found(json!({"title": text}), &Rules::default());
    let idx: Vec<(Option<String>, i64)> = got.into_iter().map(|(_, _, m, i)| (m, i)).collect();
    assert_eq!(idx, [(Some(A.to_owned()), 0), (Some(C.to_owned()), 1)]);
}

#[test]
fn an_asset_id_of_another_provider_is_that_provider_s_reference_only() {
    // Its id is the provider's asset id, even when it equals a local media id: one
    // occurrence, of that provider, and never two on one path and index.
    let data = json!({"body": [{"_type": "image", "asset": {"provider": "cloudinary", "_ref": A, "url": C}}]});
    let occ = extract(&full_schema(), data.as_object().unwrap(), &Rules::default()).resolve(&library());
    let got: Vec<(&str, &str, Option<&str>, i64)> = occ
        .iter()
        .map(|o| (o.field_path.as_str(), o.provider.as_str(), o.media_id.as_deref(), o.occurrence_index))
        .collect();
    assert_eq!(got, [("body[0].asset._ref", "cloudinary", None, 0), ("body[0].asset.url", "local", Some(C), 0)]);
    // An asset's other id naming another item is another reference.
    let data = json!({"extra": {"asset": {"_ref": "99999999999999999999999999999999", "id": A}}});
    let got = found(data, &Rules::default());
    assert_eq!(got.len(), 2, "{got:?}");
    assert_eq!(got[1], ("extra.asset.id".to_owned(), ReferenceType::EmbeddedId, Some(A.to_owned()), 0));
}

#[test]
fn occurrences_sharing_a_written_path_are_numbered_on_it() {
    // Two keys that differ only past the 64 characters a path shows: one written path, two
    // occurrences on it (structural first), never one path and index twice.
    let k1 = format!("{}1", "k".repeat(MAX_KEY_CHARS));
    let k2 = format!("{}2", "k".repeat(MAX_KEY_CHARS));
    let data = json!({"extra": {k1: {"asset": {"_ref": A}, "note": C}, k2: {"asset": {"_ref": B}}}});
    let occ = extract(&full_schema(), data.as_object().unwrap(), &Rules::default()).resolve(&library());
    let short = format!("extra[\"{}…\"]", "k".repeat(MAX_KEY_CHARS));
    let got: Vec<(String, i64, Option<String>)> =
        occ.iter().map(|o| (o.field_path.clone(), o.occurrence_index, o.media_id.clone())).collect();
    assert_eq!(
        got,
        [
            (format!("{short}.asset._ref"), 0, Some(A.to_owned())),
            (format!("{short}.asset._ref"), 1, Some(B.to_owned())),
            (format!("{short}.note"), 0, Some(C.to_owned())),
        ]
    );
}

#[test]
fn candidates_are_looked_up_once_and_cost_nothing_when_unknown() {
    let data = json!({"title": format!("{A} /_emdash/api/media/file/zz.png"), "extra": [A, A, "short"]});
    let e = extract(&full_schema(), data.as_object().unwrap(), &Rules::default());
    let (ids, keys) = e.lookups();
    assert_eq!(ids.into_iter().collect::<Vec<_>>(), [A]);
    assert_eq!(keys.into_iter().collect::<Vec<_>>(), ["zz.png"]);
    assert!(e.resolve(&Library::default()).is_empty());
}

#[test]
fn the_first_rules_read_fields_and_top_level_blocks_only() {
    let data = json!({
        "hero": A,
        "body": [{"_type": "image", "asset": {"_ref": B}},
                 {"_type": "block", "children": [{"_type": "image", "asset": {"_ref": C}}]}],
        "extra": {"og": C}
    });
    let v1: Vec<String> = found(data.clone(), &Rules::v1()).into_iter().map(|f| f.0).collect();
    assert_eq!(v1, ["body[0].asset._ref", "hero"]);
    assert_eq!(found(data, &Rules::default()).len(), 4);
    assert_ne!(Rules::v1().id(), Rules::default().id());
}

#[test]
fn the_public_url_is_part_of_the_rules() {
    assert_eq!(Rules::default().id(), "3");
    let a = Rules::current(Some("https://cdn.example.com/media/"));
    let b = Rules::current(Some("http://cdn.example.com/media"));
    assert_eq!(a.id(), b.id(), "the scheme and a trailing slash do not matter");
    assert!(a.id().starts_with("3+") && a.id().len() == 14, "{}", a.id());
    let c = Rules::current(Some("//CDN.Example.com:443/media"));
    assert_eq!(a.id(), c.id(), "nor the host's case, nor a default port");
    assert_ne!(a.id(), Rules::current(Some("https://cdn.example.com:8443/media")).id());
    assert_ne!(a.id(), Rules::current(Some("https://cdn2.example.com/media")).id());
    assert_eq!(Rules::current(Some("  ")).id(), "3");
    // Only a scheme's `//` starts the part that is compared; another `//` is path.
    assert_ne!(
        Rules::current(Some("cdn.example.com//media")).id(),
        Rules::current(Some("other.example.com//media")).id()
    );
}

#[test]
fn a_blank_provider_is_local() {
    let data = json!({"extra": {"asset": {"_ref": A, "provider": "  "}}, "hero": {"id": C, "provider": ""}});
    let occ = extract(&full_schema(), data.as_object().unwrap(), &Rules::default()).resolve(&library());
    let got: Vec<(&str, Option<&str>)> = occ.iter().map(|o| (o.provider.as_str(), o.media_id.as_deref())).collect();
    assert_eq!(got, [("local", Some(A)), ("local", Some(C))]);
}

#[test]
fn file_urls_that_name_nothing_are_kept_as_pending_keys() {
    let data = json!({"title": "/_emdash/api/media/file/a.png /_emdash/api/media/file/new%20one.png. /_emdash/api/media/file/x.png", "extra": [C]});
    let e = extract(&full_schema(), data.as_object().unwrap(), &Rules::default());
    assert_eq!(e.pending_keys(&library()), ["new one.png", "new one.png.", "new%20one.png", "new%20one.png.", "x.png"]);
    assert_eq!(e.pending_keys(&Library::default()).len(), 6, "a.png too when the library lacks it");
}

#[test]
fn every_spelling_a_page_shows_is_a_use() {
    use ReferenceType::*;
    let s = |x: &str| Some(x.to_owned());
    let rules = Rules::current(Some("https://cdn.example.com/media"));
    let rows: Vec<(Json, &str, ReferenceType, Option<String>)> = vec![
        (
            json!({"title": "https://cdn.example.com/cdn-cgi/image/width=800,format=auto/media/a.png"}),
            "title",
            EmbeddedUrl,
            s(A),
        ),
        (json!({"title": "https://CDN.Example.COM/media/a.png"}), "title", EmbeddedUrl, s(A)),
        (json!({"title": "https://cdn.example.com:443/media/a.png"}), "title", EmbeddedUrl, s(A)),
        (json!({"title": "/_image?href=%2F_emdash%2Fapi%2Fmedia%2Ffile%2Fa.png&w=800"}), "title", EmbeddedUrl, s(A)),
        (json!({"title": "\\/_emdash\\/api\\/media\\/file\\/a.png"}), "title", EmbeddedUrl, s(A)),
        (
            json!({"title": "<img src=\"&#47;_emdash&#x2F;api&sol;media/file/a.png?w=1&amp;h=2\">"}),
            "title",
            EmbeddedUrl,
            s(A),
        ),
        (json!({"title": "/_emdash/api/media/file/dir/b 1.pdf"}), "title", EmbeddedUrl, None),
        (json!({"title": "/_emdash/api/media/file/dir/b%201.pdf"}), "title", EmbeddedUrl, s(B)),
        (
            json!({"extra": {"captions": {A: "A cat"}}}),
            "extra.captions[\"0123456789abcdef0123456789abcdef\"]",
            EmbeddedId,
            s(A),
        ),
        (
            json!({"extra": {"captions": {C: {"alt": "x"}}}}),
            "extra.captions[\"01HZX3K8Q4V6W9YB2C5D7E8F9G\"]",
            EmbeddedId,
            s(C),
        ),
        (json!({"title": format!("[gallery ids=\"{A},{B}x\"]")}), "title", EmbeddedId, s(A)),
        (json!({"title": format!("<figure data-media-id=\"{C}\">")}), "title", EmbeddedId, s(C)),
        (json!({"title": format!("id {A}")}), "title", EmbeddedId, s(A)),
    ];
    for (data, path, kind, media) in rows {
        let all = found(data.clone(), &rules);
        match media {
            Some(m) => assert_eq!(
                all.into_iter().map(|(p, t, m, _)| (p, t, m)).collect::<Vec<_>>(),
                [(path.to_owned(), kind, Some(m))],
                "{data}"
            ),
            // "dir/b 1.pdf" written with a space ends at the space: not the key.
            None => assert_eq!(all, [], "{data}"),
        }
    }
}

#[test]
fn look_alikes_are_not_uses() {
    let rules = Rules::current(Some("https://cdn.example.com/media"));
    for data in [
        json!({"title": "https://other.example/media/a.png"}),
        json!({"title": "https://cdn.example.com/cdn-cgi/image/w=800/https://other.example/media/a.png"}),
        json!({"title": "https://other.example/cdn-cgi/image/w=800/media/a.png"}),
        json!({"title": "https://cdn.example.com/media/a.png2"}),
        json!({"title": "/_emdash/api/media/file/a.pngx"}),
        json!({"title": format!("{A}0")}),
        json!({"title": format!("x{A}")}),
        json!({"extra": {format!("{A}-copy"): 1}}),
        json!({"title": format!("data:image/png;base64,{A}")}),
        json!({"hero": {"provider": "external", "id": A}}),
        json!({"extra": {"asset": {"provider": "external", "_ref": A, "id": C}}}),
        json!({"extra": {"provider": "external", "id": A}}),
    ] {
        assert_eq!(found(data.clone(), &rules), [], "{data}");
    }
}

/// `(work, size)` of extracting `data` and resolving it against the test library.
fn cost(data: &Json, rules: &Rules) -> (u64, usize) {
    let e = extract(&full_schema(), data.as_object().unwrap(), rules);
    let (_, resolving) = e.resolve_counted(&library());
    (e.work() + resolving, data.to_string().len())
}

/// Bodies of about `n` bytes built to make a naive extractor slow: overlapping URL prefixes,
/// endless keys, nested query values, entities and escapes without ends, dense id tokens, and
/// long keys above many values.
fn adversarial(n: usize) -> Vec<(&'static str, Json)> {
    let rep = |unit: &str| unit.repeat(n / unit.len());
    let long_key = "k".repeat(n / 2);
    vec![
        ("public prefixes", json!({"title": rep("//cdn.example.com/media/")})),
        ("public prefixes, one scheme", json!({"title": rep("https://cdn.example.com/media/a")})),
        ("file routes", json!({"title": rep("/_emdash/api/media/file/")})),
        ("file route, endless key", json!({"title": format!("/_emdash/api/media/file/{}", rep("a"))})),
        ("transformations", json!({"title": rep("https://cdn.example.com/cdn-cgi/image/w=1/")})),
        ("query values", json!({"title": rep("/_image?url=%2F")})),
        ("entities", json!({"title": rep("&#47;&amp")})),
        ("escapes", json!({"title": rep("\\/\\u00")})),
        ("percent", json!({"title": format!("/_emdash/api/media/file/{}", rep("%2F"))})),
        ("id tokens", json!({"title": rep("0123456789abcdef01234,")})),
        ("data uri", json!({"title": format!("data:image/png;base64,{}", rep("0123456789abcdef0123+/"))})),
        ("long key over numbers", json!({"extra": {long_key.clone(): vec![1; n / 4]}})),
        ("long key over ids", json!({"extra": {long_key.clone(): vec![A; n / 70]}})),
        ("long key over assets", json!({"extra": {long_key: vec![json!({"asset": {"_ref": "x"}}); n / 40]}})),
        ("many small strings", json!({"extra": vec!["/_emdash/api/media/file/a.png"; n / 32]})),
    ]
}

#[test]
fn extraction_is_linear_in_the_size_of_the_entry() {
    let rules = Rules::current(Some("https://cdn.example.com/media"));
    let plain = |n: usize| json!({"title": "lorem ipsum dolor sit amet ".repeat(n / 27)});
    let (plain_work, plain_size) = cost(&plain(1 << 20), &rules);
    let per_byte_plain = plain_work as f64 / plain_size as f64;
    for ((name, small), (_, large)) in adversarial(1 << 18).into_iter().zip(adversarial(1 << 20)) {
        let (w1, n1) = cost(&small, &rules);
        let (w4, n4) = cost(&large, &rules);
        let growth = (w4 as f64 / n4 as f64) / (w1 as f64 / n1 as f64);
        assert!(growth < 1.2, "{name}: work per byte grew {growth:.2}× for 4× the size ({w1} → {w4})");
        let per_byte = w4 as f64 / n4 as f64;
        assert!(
            per_byte < 16.0 * per_byte_plain,
            "{name}: {per_byte:.1} units per byte against {per_byte_plain:.1} for plain text"
        );
    }
}

mod properties {
    use super::*;
    use proptest::prelude::*;

    /// Strings that sometimes are ids, keys, file URLs or look-alikes.
    fn text() -> impl Strategy<Value = String> {
        prop_oneof![
            Just(A.to_owned()),
            Just(C.to_owned()),
            Just(format!(" {B} ")),
            Just("/_emdash/api/media/file/a.png".to_owned()),
            Just("https://x.example/_emdash/api/media/file/dir%2Fb%201.pdf?x#y".to_owned()),
            Just("//cdn.example.com/media/c.jpg".to_owned()),
            Just("/_emdash/api/media/file/".to_owned()),
            Just("/_emdash/api/media/file/%".to_owned()),
            Just("/_emdash/api/media/file/%e9%ff".to_owned()),
            any::<String>(),
            "[a-f0-9]{20,40}",
            "(/_emdash/api/media/file/|//cdn.example.com/media/)?[a-z%./ ()0-9é]{0,12}",
        ]
    }

    fn document() -> impl Strategy<Value = Json> {
        let leaf = prop_oneof![
            Just(Json::Null),
            any::<bool>().prop_map(Json::Bool),
            any::<i32>().prop_map(|n| json!(n)),
            text().prop_map(Json::String),
        ];
        leaf.prop_recursive(6, 64, 6, |inner| {
            prop_oneof![
                prop::collection::vec(inner.clone(), 0..6).prop_map(Json::Array),
                prop::collection::btree_map(
                    prop_oneof![
                        Just("_type".to_owned()),
                        Just("asset".to_owned()),
                        Just("_ref".to_owned()),
                        Just("id".to_owned()),
                        Just("provider".to_owned()),
                        Just("children".to_owned()),
                        "[a-z:\" ]{1,6}",
                    ],
                    inner.clone(),
                    0..6
                )
                .prop_map(|m| Json::Object(m.into_iter().collect())),
                inner.prop_map(|v| json!({"_type": "image", "asset": {"_ref": v}})),
            ]
        })
    }

    proptest! {
        #![proptest_config(ProptestConfig { cases: 512, ..ProptestConfig::default() })]

        /// Any document, in any field: extraction never panics, gives the same answer twice,
        /// and every occurrence it resolves names a path into the data.
        #[test]
        fn extraction_is_total_and_deterministic(
            hero in document(), body in document(), extra in document(), downloads in document(),
        ) {
            let data = json!({"hero": hero, "body": body, "extra": extra, "downloads": downloads});
            let data = data.as_object().unwrap();
            let rules = Rules::current(Some("https://cdn.example.com/media"));
            let first = extract(&full_schema(), data, &rules);
            prop_assert_eq!(&first, &extract(&full_schema(), data, &rules));
            let occ = first.resolve(&library());
            prop_assert_eq!(&occ, &first.resolve(&library()));
            for o in &occ {
                prop_assert!(data.contains_key(&o.field_slug));
                prop_assert!(o.field_path.starts_with(&o.field_slug));
                if matches!(o.reference_type, ReferenceType::EmbeddedId | ReferenceType::EmbeddedUrl) {
                    prop_assert!(o.media_id.is_some());
                }
            }
            let mut keys: Vec<(&str, i64)> = occ.iter().map(|o| (o.field_path.as_str(), o.occurrence_index)).collect();
            keys.dedup();
            prop_assert_eq!(keys.len(), occ.len(), "a path and index name one occurrence");
            let _ = extract(&full_schema(), data, &Rules::v1());
        }
    }
}
