"""How the API is served: the uvicorn settings of ``murmur serve``, ``murmur up`` and the bench."""

from __future__ import annotations

import json
from typing import Any

from api.schemas import ErrorBody, ErrorEnvelope
from warehouse.ids import new_id

try:  # uvicorn's own choice: httptools when installed, else h11
    from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol as _Protocol
except ImportError:  # pragma: no cover - the [standard] extra installs httptools
    from uvicorn.protocols.http.h11_impl import H11Protocol as _Protocol  # type: ignore[assignment]


def unparsable_request_body() -> bytes:
    """The envelope answered to a request the HTTP parser refuses (it never reaches the app)."""
    body = ErrorEnvelope(
        error=ErrorBody(
            code="VALIDATION_ERROR",
            message="The request is not valid HTTP (a header name or value the server cannot"
            " read); nothing was done.",
            details=[],
        ),
        request_id=new_id("req"),
    )
    return json.dumps(body.model_dump(mode="json"), separators=(",", ":")).encode()


class EnvelopeProtocol(_Protocol):
    """uvicorn's HTTP protocol, answering unparsable requests in the contract's envelope."""

    def send_400_response(self, msg: str) -> None:
        body = unparsable_request_body()
        head = [b"HTTP/1.1 400 Bad Request\r\n"]
        for name, value in self.server_state.default_headers:
            head.append(name + b": " + value + b"\r\n")
        head += [
            b"content-type: application/json; charset=utf-8\r\n",
            b"x-content-type-options: nosniff\r\n",
            b"cache-control: no-store\r\n",
            b"content-length: " + str(len(body)).encode("ascii") + b"\r\n",
            b"connection: close\r\n\r\n",
        ]
        self.transport.write(b"".join(head) + body)
        self.transport.close()


def server_options() -> dict[str, Any]:
    """uvicorn.Config keywords besides the app, host and port.

    ``proxy_headers=False``: uvicorn would otherwise rewrite the client address from
    ``X-Forwarded-For`` on loopback before the app sees it; the app decides whom to trust
    (``MURMUR_TRUSTED_PROXIES``, docs/security.md).
    """
    return {
        "log_config": None,
        "access_log": False,
        "proxy_headers": False,
        "http": EnvelopeProtocol,
    }
