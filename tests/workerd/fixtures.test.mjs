// The shared test data of tests/fixtures/ on real (local) D1: the large-collection fixture seeds
// the same rows whether it is seeded at once or in chunks of entries (as the bench seeds it), and
// the same rows as the native tests pin (tests/it/fixtures.rs).
import { test, after } from "node:test";
import assert from "node:assert/strict";
import { startWorker } from "./harness.mjs";
import { largeCollection, rows } from "./helpers.mjs";

const w = await startWorker();
after(() => w.dispose());

/** What a seeded collection holds: entries, queued work, sources, occurrences, revisions. */
async function seeded(c) {
  const one = async (sql, ...p) => (await rows(w, sql, ...p))[0].n;
  return {
    entries: await one(`SELECT count(*) AS n FROM "ec_${c.slug}"`),
    work: await one("SELECT count(*) AS n FROM _emdash_media_usage_work WHERE collection_id = ?1 AND state = 'pending'", c.id),
    sources: await one("SELECT count(*) AS n FROM _emdash_media_usage_sources WHERE collection_id = ?1 AND source_completeness = 'complete'", c.id),
    occurrences: await one("SELECT count(*) AS n FROM _emdash_media_usage WHERE source_key >= ?1 AND source_key < ?2", `content:${c.id}:`, `content:${c.id};`),
    revisions: await one("SELECT count(*) AS n FROM revisions WHERE collection = ?1", c.slug),
    revisionBody: await one("SELECT min(length(json_extract(data, '$.body'))) AS n FROM revisions WHERE collection = ?1", c.slug),
    lastRevised: (await rows(w, "SELECT max(entry_id) AS id FROM revisions WHERE collection = ?1", c.slug))[0].id,
  };
}

test("the large collection seeds the same rows at once and in chunks of entries", async () => {
  const shape = { entries: 12, occurrences: 3, revisions: 5, revisionBytes: 7 };
  const once = await seeded(await largeCollection(w, shape));
  assert.deepEqual(once, { entries: 12, work: 12, sources: 12, occurrences: 36, revisions: 5, revisionBody: 7, lastRevised: "e0000005" });
  for (const chunk of [1, 4, 5, 11]) {
    assert.deepEqual(await seeded(await largeCollection(w, { ...shape, chunk })), once, `chunks of ${chunk}`);
  }
});
