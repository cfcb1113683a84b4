#!/usr/bin/env bash
# `npm start`: setup, build, local D1 migrations, then `wrangler dev` on port 8787 with
# `--test-scheduled` (GET /__scheduled?cron=*/2+*+*+*+* runs a tick).
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
. "$ROOT/scripts/setup.sh"
cd "$ROOT"

if [ ! -f .dev.vars ]; then
  printf 'EMDASH_ADMIN_TOKEN="%s"\n' "$(node -e 'console.log(require("crypto").randomBytes(32).toString("hex"))')" > .dev.vars
  echo "[start] created .dev.vars with a new admin token" >&2
fi
# `wrangler dev` builds the worker itself (the [build] command of wrangler.toml).
wrangler d1 migrations apply DB --local
TOKEN="$(sed -n 's/^EMDASH_ADMIN_TOKEN="\{0,1\}\([^"]*\)"\{0,1\}$/\1/p' .dev.vars)"
# The worker ignores a bootstrap secret shorter than 32 characters (after trimming).
if [ "$(printf '%s' "$TOKEN" | awk '{$1=$1; print}' | tr -d '\n' | wc -m)" -lt 32 ]; then
  echo "[start] EMDASH_ADMIN_TOKEN in .dev.vars is shorter than 32 characters: the worker ignores it" >&2
  echo "[start] (requests bearing it answer 401); put a longer one there, or delete .dev.vars for a new one" >&2
fi
cat <<MSG

  media-usage-worker on http://localhost:8787/_emdash/api
  admin token (from .dev.vars): $TOKEN
  try: curl -H "Authorization: Bearer $TOKEN" http://localhost:8787/_emdash/api/schema/collections

MSG
exec wrangler dev --local --test-scheduled --port 8787
