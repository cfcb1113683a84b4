// D1 semantics the crate relies on, observed through the API: the self-check, guarded batches
// that really roll back (DDL included), and the guard assertion surfacing as a clean 409.
import { test, after } from "node:test";
import assert from "node:assert/strict";
import { startWorker } from "./harness.mjs";
import { ok, err, rows, schemaObjectExists } from "./helpers.mjs";

const w = await startWorker();
after(() => w.dispose());

const LEAKY = /sql|index|sqlite|d1_|table|constraint|ec_|syntax|already exists|column/i;

async function guardRows() {
  return (await rows(w, "SELECT count(*) AS n FROM _emdash_batch_guard"))[0].n;
}

function assertOpaque500(res) {
  const e = err(res, 500, "INTERNAL_ERROR");
  assert.doesNotMatch(e.message, LEAKY, `500 message leaks the cause: ${e.message}`);
  assert.equal(e.details, undefined);
  assert.doesNotMatch(res.text, LEAKY, `500 body leaks the cause: ${res.text}`);
}

test("POST /admin/self-check passes every check and leaves the guard table empty", async () => {
  for (let run = 0; run < 2; run++) {
    const data = ok(await w.post("/admin/self-check"));
    assert.deepEqual(data, {
      passed: true,
      checks: {
        guardedBatchRollsBack: true,
        guardFailureIsStale: true,
        guardedBatchCommits: true,
        integersRoundTrip: true,
        returningWorks: true,
        bindLimitEnforced: true,
      },
    });
    assert.equal(await guardRows(), 0);
  }
});

test("a batch failing after the registry insert and CREATE TABLE rolls back: 500, no row, no table", async () => {
  // The collection's list index name is taken by an index on another table, so the batch's last
  // DDL statement fails after INSERT INTO _emdash_collections, the field rows and CREATE TABLE ran.
  await w.db.prepare("CREATE INDEX idx_ec_clash_list ON media (filename)").run();
  const res = await w.post("/schema/collections", {
    slug: "clash",
    label: "Clash",
    fields: [{ slug: "title", type: "string" }, { slug: "hero", type: "image" }],
  });
  assertOpaque500(res);

  assert.deepEqual(await rows(w, "SELECT id FROM _emdash_collections WHERE slug = 'clash'"), []);
  assert.equal(await schemaObjectExists(w, "ec_clash"), false);
  assert.deepEqual(
    await rows(w, "SELECT id FROM _emdash_fields WHERE collection_id NOT IN (SELECT id FROM _emdash_collections)"),
    [],
  );
  // The clashing index is the pre-existing one, untouched.
  assert.deepEqual(await rows(w, "SELECT tbl_name FROM sqlite_master WHERE name = 'idx_ec_clash_list'"), [{ tbl_name: "media" }]);
  assert.deepEqual(await rows(w, "SELECT scope_key FROM _emdash_media_usage_index_status WHERE scope_key = 'clash'"), []);
  assert.deepEqual(await rows(w, "SELECT name FROM sqlite_master WHERE type = 'trigger' AND tbl_name = 'ec_clash'"), []);
  assert.equal(await guardRows(), 0);
  err(await w.get("/schema/collections/clash"), 404, "COLLECTION_NOT_FOUND");
  assert.ok(!ok(await w.get("/schema/collections")).items.some((c) => c.slug === "clash"));

  // Nothing half-made blocks a retry once the clash is gone.
  await w.db.prepare("DROP INDEX idx_ec_clash_list").run();
  const item = ok(await w.post("/schema/collections", { slug: "clash", label: "Clash", fields: [{ slug: "title", type: "string" }] }), 201).item;
  assert.deepEqual(item.fields.map((f) => f.slug), ["title"]);
  assert.ok(await schemaObjectExists(w, "ec_clash"));
  assert.deepEqual(await rows(w, "SELECT tbl_name FROM sqlite_master WHERE name = 'idx_ec_clash_list'"), [{ tbl_name: "ec_clash" }]);
  // Born activated (DESIGN §3): coverage row and three capture triggers came with it.
  assert.deepEqual(
    await rows(w, "SELECT status, capture_state, collection_id FROM _emdash_media_usage_index_status WHERE scope_key = 'clash'"),
    [{ status: "complete", capture_state: "active", collection_id: item.id }],
  );
  assert.equal((await rows(w, "SELECT name FROM sqlite_master WHERE type = 'trigger' AND tbl_name = 'ec_clash'")).length, 3);
});

test("a batch failing after all its DDL (coverage row taken) rolls back table, index and registry row", async () => {
  // A leftover coverage row for the slug makes the status insert, which runs after the registry
  // insert, CREATE TABLE and CREATE INDEX, fail on its primary key.
  await w.db
    .prepare("INSERT INTO _emdash_media_usage_index_status (scope_key, status, collection_id) VALUES ('leftover', 'never', 'old-id')")
    .run();
  const res = await w.post("/schema/collections", { slug: "leftover", label: "Leftover", fields: [{ slug: "hero", type: "image" }] });
  err(res, 409, "COLLECTION_EXISTS");
  assert.deepEqual(await rows(w, "SELECT id FROM _emdash_collections WHERE slug = 'leftover'"), []);
  assert.equal(await schemaObjectExists(w, "ec_leftover"), false);
  assert.equal(await schemaObjectExists(w, "idx_ec_leftover_list"), false);
  assert.deepEqual(
    await rows(w, "SELECT id FROM _emdash_fields WHERE collection_id NOT IN (SELECT id FROM _emdash_collections)"),
    [],
  );
  assert.deepEqual(
    await rows(w, "SELECT status, collection_id FROM _emdash_media_usage_index_status WHERE scope_key = 'leftover'"),
    [{ status: "never", collection_id: "old-id" }],
  );
  assert.equal(await guardRows(), 0);
});

test("a pre-existing ec_ table makes creation 409 COLLECTION_EXISTS through the batch guard", async () => {
  await w.db.prepare("CREATE TABLE ec_orphan (id TEXT PRIMARY KEY, note TEXT)").run();
  await w.db.prepare("INSERT INTO ec_orphan (id, note) VALUES ('o1', 'keep me')").run();
  const res = await w.post("/schema/collections", { slug: "orphan", label: "Orphan", fields: [{ slug: "title", type: "string" }] });
  err(res, 409, "COLLECTION_EXISTS");
  assert.deepEqual(await rows(w, "SELECT id FROM _emdash_collections WHERE slug = 'orphan'"), []);
  assert.deepEqual(
    await rows(w, "SELECT id FROM _emdash_fields WHERE collection_id NOT IN (SELECT id FROM _emdash_collections)"),
    [],
  );
  // The foreign table is untouched.
  assert.deepEqual(await rows(w, "SELECT id, note FROM ec_orphan"), [{ id: "o1", note: "keep me" }]);
  assert.equal(await schemaObjectExists(w, "idx_ec_orphan_list"), false);
  assert.deepEqual(await rows(w, "SELECT scope_key FROM _emdash_media_usage_index_status WHERE scope_key = 'orphan'"), []);
  assert.deepEqual(await rows(w, "SELECT name FROM sqlite_master WHERE type = 'trigger' AND tbl_name = 'ec_orphan'"), []);
  assert.equal(await guardRows(), 0);
  err(await w.get("/schema/collections/orphan"), 404, "COLLECTION_NOT_FOUND");
});

test("adding a field whose column already exists rolls back the field row", async () => {
  ok(await w.post("/schema/collections", { slug: "drift", label: "Drift", fields: [{ slug: "title", type: "string" }] }), 201);
  // The table has drifted from the registry: it already has a column `extra`.
  await w.db.prepare("ALTER TABLE ec_drift ADD COLUMN extra TEXT").run();
  const before = ok(await w.get("/schema/collections/drift")).item;
  assertOpaque500(await w.post("/schema/collections/drift/fields", { slug: "extra", type: "number" }));
  const afterwards = ok(await w.get("/schema/collections/drift")).item;
  assert.deepEqual(afterwards, before);
  assert.deepEqual(
    (await rows(w, "SELECT slug FROM _emdash_fields WHERE collection_id = ?1 ORDER BY sort_order", before.id)).map((r) => r.slug),
    ["title"],
  );
  assert.equal(await guardRows(), 0);
  // An unrelated field still goes in.
  ok(await w.post("/schema/collections/drift/fields", { slug: "other", type: "number" }), 201);
});
