import { test, after } from "node:test";
import assert from "node:assert/strict";
import { startWorker } from "./harness.mjs";

const w = await startWorker();
after(() => w.dispose());

test("health answers through the real wasm worker and D1", async () => {
  const res = await w.get("/health", { token: null });
  assert.equal(res.status, 200);
  assert.deepEqual(res.json, { success: true, data: { status: "ok", database: "ok" } });
  assert.equal(res.headers.get("cache-control"), "private, no-store");
});
