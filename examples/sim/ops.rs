//! The operations: what clients and the platform do to the worker, named by the simulator's own
//! handles (the n-th entry, media item, collection or token it has learnt of), so that a trace
//! stays meaningful when the shrinker removes some of it.

use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use base64::Engine;
use serde::{Deserialize, Serialize};
use serde_json::{json, Value as Json};

use crate::rng::Rng;

/// The collections' slugs: few, so that deleted slugs are created again.
pub const SLUGS: [&str; 3] = ["posts", "pages", "notes"];

/// Who sends a request.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum Who {
    Admin,
    Editor,
    /// One of two authors.
    Author(u8),
}

/// How an entry names a media item.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum Spelling {
    /// `hero: {"id": …}`.
    ImageField,
    /// The item's public URL (`MEDIA_PUBLIC_URL/<key>`) in the body text.
    PublicUrl,
    /// The item's file-route URL (`/_emdash/api/media/file/<key>`) in the body text.
    FileRoute,
}

/// One operation. Handles (`entry`, `media`, …) pick, modulo, among what the simulator knows.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub enum Op {
    CreateEntry {
        who: Who,
        collection: u32,
        refs: Vec<(u32, Spelling)>,
        publish: bool,
    },
    /// `rev`: the `_rev` of that version of the entry sent along (stale unless it is current).
    UpdateEntry {
        who: Who,
        entry: u32,
        refs: Vec<(u32, Spelling)>,
        draft: bool,
        rev: Option<u8>,
    },
    Publish {
        who: Who,
        entry: u32,
    },
    Unpublish {
        who: Who,
        entry: u32,
    },
    TrashEntry {
        who: Who,
        entry: u32,
    },
    RestoreEntry {
        entry: u32,
    },
    DeleteEntry {
        entry: u32,
    },
    DiscardDraft {
        who: Who,
        entry: u32,
    },
    Upload {
        who: Who,
        salt: u32,
    },
    Register {
        n: u32,
    },
    TrashMedia {
        who: Who,
        media: u32,
        force: bool,
    },
    RestoreMedia {
        media: u32,
    },
    DeleteMedia {
        media: u32,
        force: bool,
    },
    BulkTrash {
        media: Vec<u32>,
    },
    UsedIn {
        media: u32,
    },
    /// A new file for the item (`POST /media/{id}/replace`): its key changes, the old one is a
    /// version that entries may still link.
    ReplaceMedia {
        who: Who,
        media: u32,
        salt: u32,
    },
    /// An earlier version of the item made current again (`POST /media/{id}/revert`).
    RevertMedia {
        who: Who,
        version: u32,
    },
    /// The item's links to earlier keys rewritten by the ticks (`POST /media/{id}/relink`).
    Relink {
        media: u32,
    },
    CreateCollection {
        slug: u32,
    },
    AddField {
        collection: u32,
        n: u32,
    },
    DeleteCollection {
        collection: u32,
        force: bool,
    },
    Repair,
    MintToken {
        editor: bool,
    },
    RevokeToken {
        token: u32,
    },
    /// A cron tick.
    Tick,
    /// Delivers a continuation message the simulator holds (`keep`: delivered again later too).
    Continue {
        which: u32,
        keep: bool,
    },
}

impl Op {
    /// A random operation.
    pub fn random(rng: &mut Rng) -> Op {
        let who = |rng: &mut Rng| match rng.below(10) {
            0..=2 => Who::Admin,
            3..=5 => Who::Editor,
            n => Who::Author((n % 2) as u8),
        };
        let refs = |rng: &mut Rng| {
            (0..rng.below(4))
                .map(|_| {
                    let spelling = match rng.below(3) {
                        0 => Spelling::ImageField,
                        1 => Spelling::PublicUrl,
                        _ => Spelling::FileRoute,
                    };
                    (rng.next_u32(), spelling)
                })
                .collect()
        };
        let h = |rng: &mut Rng| rng.next_u32();
        match rng.below(1000) {
            0..=179 => Op::CreateEntry { who: who(rng), collection: h(rng), refs: refs(rng), publish: rng.chance(0.5) },
            180..=339 => Op::UpdateEntry {
                who: who(rng),
                entry: h(rng),
                refs: refs(rng),
                draft: rng.chance(0.4),
                rev: rng.chance(0.3).then(|| 1 + rng.below(6) as u8),
            },
            340..=389 => Op::Publish { who: who(rng), entry: h(rng) },
            390..=414 => Op::Unpublish { who: who(rng), entry: h(rng) },
            415..=454 => Op::TrashEntry { who: who(rng), entry: h(rng) },
            455..=479 => Op::RestoreEntry { entry: h(rng) },
            480..=499 => Op::DeleteEntry { entry: h(rng) },
            500..=514 => Op::DiscardDraft { who: who(rng), entry: h(rng) },
            515..=584 => Op::Upload { who: who(rng), salt: h(rng) % 200 },
            585..=619 => Op::Register { n: h(rng) % 400 },
            620..=679 => Op::TrashMedia { who: who(rng), media: h(rng), force: rng.chance(0.2) },
            680..=699 => Op::RestoreMedia { media: h(rng) },
            700..=734 => Op::DeleteMedia { media: h(rng), force: rng.chance(0.3) },
            735..=754 => Op::BulkTrash { media: (0..1 + rng.below(3)).map(|_| rng.next_u32()).collect() },
            755..=784 => Op::UsedIn { media: h(rng) },
            785..=794 => Op::CreateCollection { slug: h(rng) },
            795..=804 => Op::AddField { collection: h(rng), n: h(rng) % 6 },
            805..=814 => Op::DeleteCollection { collection: h(rng), force: rng.chance(0.6) },
            815..=824 => Op::Repair,
            825..=829 => Op::MintToken { editor: rng.chance(0.5) },
            830..=834 => Op::RevokeToken { token: h(rng) },
            835..=944 => Op::Tick,
            945..=952 => Op::ReplaceMedia { who: who(rng), media: h(rng), salt: h(rng) % 200 },
            953..=956 => Op::RevertMedia { who: who(rng), version: h(rng) },
            957..=964 => Op::Relink { media: h(rng) },
            _ => Op::Continue { which: h(rng), keep: rng.chance(0.3) },
        }
    }
}

/// What the simulator has learnt, in the order it learnt it.
#[derive(Debug, Default)]
pub struct Known {
    /// Entries: collection slug, id.
    pub entries: Vec<(String, String)>,
    /// Media items: id, storage key (the first it had: entries written later link it by URL
    /// as an earlier key once the item is replaced).
    pub media: Vec<(String, String)>,
    /// Earlier keys answers named: item id, key.
    pub versions: Vec<(String, String)>,
    /// Minted tokens: id, secret, whether it was revoked.
    pub tokens: Vec<(String, String)>,
    /// The editor's and the two authors' secrets.
    pub editor: String,
    pub authors: [String; 2],
    /// Continuation messages sent and not yet delivered for good.
    pub continuations: Vec<String>,
}

fn pick<T>(items: &[T], handle: u32) -> Option<&T> {
    (!items.is_empty()).then(|| &items[handle as usize % items.len()])
}

/// The request an operation sends (method, path under the API, body), or `None` when it names
/// something the simulator does not know yet (then it is skipped).
pub fn request(op: &Op, known: &Known, media_origin: &str) -> Option<(Who, String, String, Option<Json>)> {
    let entry = |h: u32| pick(&known.entries, h).map(|(slug, id)| format!("/content/{slug}/{id}"));
    let media = |h: u32| pick(&known.media, h).map(|(id, _)| id.clone());
    let text = |refs: &[(u32, Spelling)]| {
        let mut hero = Json::Null;
        let mut body = String::from("Body");
        for (h, spelling) in refs {
            let Some((id, key)) = pick(&known.media, *h) else { continue };
            match spelling {
                Spelling::ImageField => hero = json!({"id": id}),
                Spelling::PublicUrl => body.push_str(&format!(" see {media_origin}{key} here")),
                Spelling::FileRoute => body.push_str(&format!(" <img src=\"/_emdash/api/media/file/{key}\">")),
            }
        }
        let mut data = json!({"title": "A title", "body": body});
        if !hero.is_null() {
            data["hero"] = hero;
        }
        data
    };
    let post = |who, path: String, body: Json| Some((who, "POST".to_owned(), path, Some(body)));
    match op {
        Op::CreateEntry { who, collection, refs, publish } => {
            let slug = SLUGS[*collection as usize % SLUGS.len()];
            let status = if *publish { "published" } else { "draft" };
            post(*who, format!("/content/{slug}"), json!({"data": text(refs), "status": status}))
        }
        Op::UpdateEntry { who, entry: e, refs, draft, rev } => {
            let mut body =
                if *draft { json!({"data": text(refs), "draft": true}) } else { json!({"data": text(refs)}) };
            if let Some(version) = rev {
                body["_rev"] = json!(URL_SAFE_NO_PAD.encode(format!("rev:{version}")));
            }
            Some((*who, "PUT".into(), entry(*e)?, Some(body)))
        }
        Op::Publish { who, entry: e } => post(*who, format!("{}/publish", entry(*e)?), json!({})),
        Op::Unpublish { who, entry: e } => post(*who, format!("{}/unpublish", entry(*e)?), json!({})),
        Op::TrashEntry { who, entry: e } => Some((*who, "DELETE".into(), entry(*e)?, None)),
        Op::RestoreEntry { entry: e } => post(Who::Editor, format!("{}/restore", entry(*e)?), json!({})),
        Op::DeleteEntry { entry: e } => {
            Some((Who::Admin, "DELETE".into(), format!("{}?permanent=true", entry(*e)?), None))
        }
        Op::DiscardDraft { who, entry: e } => post(*who, format!("{}/discard-draft", entry(*e)?), json!({})),
        Op::Upload { who, .. } => Some((*who, "POST".into(), "/media".into(), None)),
        Op::ReplaceMedia { who, media: m, .. } => {
            Some((*who, "POST".into(), format!("/media/{}/replace", media(*m)?), None))
        }
        Op::RevertMedia { who, version } => {
            let (id, key) = pick(&known.versions, *version)?;
            post(*who, format!("/media/{id}/revert"), json!({"version": key}))
        }
        Op::Relink { media: m } => post(Who::Editor, format!("/media/{}/relink", media(*m)?), json!({})),
        Op::Register { n } => {
            let key = format!("reg-{n:06}.png");
            post(Who::Editor, "/media".into(), json!({"filename": key, "mimeType": "image/png", "storageKey": key}))
        }
        Op::TrashMedia { who, media: m, force } => {
            let q = if *force { "?force=true" } else { "" };
            let who = if *force { Who::Admin } else { *who };
            Some((who, "DELETE".into(), format!("/media/{}{q}", media(*m)?), None))
        }
        Op::RestoreMedia { media: m } => post(Who::Editor, format!("/media/{}/restore", media(*m)?), json!({})),
        Op::DeleteMedia { media: m, force } => {
            let q = if *force { "&force=true" } else { "" };
            Some((Who::Admin, "DELETE".into(), format!("/media/{}?permanent=true{q}", media(*m)?), None))
        }
        Op::BulkTrash { media: ms } => {
            let ids: Vec<String> = ms.iter().filter_map(|m| media(*m)).collect();
            if ids.is_empty() {
                return None;
            }
            post(Who::Editor, "/media/bulk-delete".into(), json!({"ids": ids}))
        }
        Op::UsedIn { media: m } => {
            Some((Who::Editor, "GET".into(), format!("/media/{}/usage?limit=100", media(*m)?), None))
        }
        Op::CreateCollection { slug } => {
            let slug = SLUGS[*slug as usize % SLUGS.len()];
            post(Who::Admin, "/schema/collections".into(), collection_body(slug))
        }
        Op::AddField { collection, n } => {
            let slug = SLUGS[*collection as usize % SLUGS.len()];
            post(
                Who::Admin,
                format!("/schema/collections/{slug}/fields"),
                json!({"slug": format!("extra{n}"), "label": "Extra", "type": "image"}),
            )
        }
        Op::DeleteCollection { collection, force } => {
            let slug = SLUGS[*collection as usize % SLUGS.len()];
            let q = if *force { "?force=true" } else { "" };
            Some((Who::Admin, "DELETE".into(), format!("/schema/collections/{slug}{q}"), None))
        }
        Op::Repair => post(Who::Admin, "/admin/media-usage/repair".into(), json!({"scope": "all"})),
        Op::MintToken { editor } => {
            let role = if *editor { "editor" } else { "author" };
            post(
                Who::Admin,
                "/admin/tokens".into(),
                json!({"name": format!("sim-{role}"), "role": role, "scopes": ["content:read", "content:write", "media:read", "media:write"]}),
            )
        }
        Op::RevokeToken { token } => {
            Some((Who::Admin, "DELETE".into(), format!("/admin/tokens/{}", pick(&known.tokens, *token)?.0), None))
        }
        Op::Tick | Op::Continue { .. } => None,
    }
}

/// The body that creates collection `slug`: a title, an image field and a text body.
pub fn collection_body(slug: &str) -> Json {
    json!({"slug": slug, "label": slug, "fields": [
        {"slug": "title", "type": "string"},
        {"slug": "hero", "type": "image"},
        {"slug": "body", "type": "text"}
    ]})
}

/// A small PNG (its header) made distinct by `salt`: the same salt is the same bytes (an upload
/// of them again is deduplicated).
pub fn png(salt: u32) -> Vec<u8> {
    let mut b = b"\x89PNG\r\n\x1a\n\0\0\0\rIHDR".to_vec();
    b.extend_from_slice(&(1 + salt % 50).to_be_bytes());
    b.extend_from_slice(&(1 + salt / 50).to_be_bytes());
    b.extend_from_slice(&[8, 6, 0, 0, 0, 0, 0, 0]);
    b.extend_from_slice(&salt.to_be_bytes());
    b
}

/// A multipart form with one file part.
pub fn upload_form(bytes: &[u8]) -> (String, Vec<u8>) {
    let boundary = "----sim-boundary-d9a1";
    let mut body = Vec::new();
    body.extend_from_slice(
        format!("--{boundary}\r\nContent-Disposition: form-data; name=\"file\"; filename=\"p.png\"\r\nContent-Type: image/png\r\n\r\n")
            .as_bytes(),
    );
    body.extend_from_slice(bytes);
    body.extend_from_slice(format!("\r\n--{boundary}--\r\n").as_bytes());
    (format!("multipart/form-data; boundary={boundary}"), body)
}
