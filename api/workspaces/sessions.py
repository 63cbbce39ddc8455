"""Dashboard sessions: a one-time sign-in link's token in, a read-only key out; sign-out."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Response

from api.deps import Keyless, OwnKey, StoreDep
from api.idempotency import OPENAPI_PARAMETER
from api.routing import MurmurRoute
from api.schemas import Envelope, ok
from domain.schemas import Deleted
from domain.workspaces import sign_in

router = APIRouter(tags=["Sessions"], route_class=MurmurRoute)

# Declared, so that the document does not require it: neither endpoint takes part in
# idempotency (docs/api.md, "Sessions").
_NO_IDEMPOTENCY: dict[str, Any] = {
    "parameters": [
        {
            **OPENAPI_PARAMETER,
            "required": False,
            "description": "Not used here, and ignored if sent: a sign-in link is single-use by"
            " itself, and its answer (a secret key) is never stored. See docs/api.md, Sessions.",
        }
    ]
}


@router.post(
    "/sessions",
    response_model=Envelope[sign_in.Session],
    status_code=201,
    dependencies=[Keyless],
    openapi_extra=_NO_IDEMPOTENCY,
)
def create_session(
    store: StoreDep, body: sign_in.SessionCreate, response: Response
) -> Envelope[sign_in.Session]:
    """Use a one-time sign-in link's token (no API key): a read-only key for 12 hours."""
    response.headers["Cache-Control"] = "no-store"  # the answer holds a secret key
    return ok(sign_in.redeem(store, body.token))


@router.delete(
    "/sessions/current",
    response_model=Envelope[Deleted],
    openapi_extra={
        "parameters": [
            {
                **_NO_IDEMPOTENCY["parameters"][0],
                "description": "Not used here, and ignored if sent: signing out revokes the key"
                " a stored answer would be filed under. See docs/api.md, Sessions.",
            }
        ]
    },
)
def delete_current_session(store: StoreDep, key: OwnKey) -> Envelope[Deleted]:
    """Sign out: revoke this key, if a sign-in link made it (404 for any other key)."""
    return ok(sign_in.sign_out(store, key))
