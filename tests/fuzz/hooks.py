"""Generators for the formats openapi.json declares beyond JSON Schema's own, so that the
fuzzer's schema-valid values are the values the API accepts (a cursor it issued, a `_rev` it
issued, a future expiry)."""

import base64
import json
from datetime import datetime, timedelta, timezone

import schemathesis
from hypothesis import strategies as st

MAX_SAFE_INTEGER = 2**53 - 1


def _b64(text: str) -> str:
    return base64.urlsafe_b64encode(text.encode()).decode().rstrip("=")


# A page cursor: `{"v": <order value>, "id": <id>}` as unpadded base64url. The id is decimal so
# that the same cursor is valid for the tick log (integer ids) and for every other list.
schemathesis.openapi.format(
    "emdash-cursor",
    st.builds(
        lambda v, i: _b64(json.dumps({"v": v, "id": str(i)})),
        st.text(max_size=30),
        st.integers(min_value=0, max_value=MAX_SAFE_INTEGER),
    ),
)

# An entry's `_rev`: `rev:<version>` as unpadded base64url.
schemathesis.openapi.format(
    "emdash-rev",
    st.integers(min_value=0, max_value=MAX_SAFE_INTEGER).map(lambda n: _b64(f"rev:{n}")),
)

# A token expiry: an ISO-8601 date-time with a zone, at least a day ahead.
_NOW = datetime.now(timezone.utc)
schemathesis.openapi.format(
    "emdash-future-date-time",
    st.integers(min_value=1, max_value=3_000_000)
    .map(lambda minutes: (_NOW + timedelta(days=1, minutes=minutes)).strftime("%Y-%m-%dT%H:%M:%SZ")),
)
