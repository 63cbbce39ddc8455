"""The OpenAI-compatible drafter against a local server speaking the chat-completions shape."""

from __future__ import annotations

import json
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest

from domain.inbox.drafts import (
    DraftRequest,
    OfflineDrafter,
    OpenAICompatibleDrafter,
    PastExchange,
    drafter_for,
)
from tests.support import serving


class FakeChat:
    """Records chat-completions requests; answers with ``reply`` (or a 503 when None)."""

    def __init__(self) -> None:
        self.requests: list[tuple[dict[str, str], dict[str, Any]]] = []
        self.reply: str | None = "Thanks @ann! Two-day shipping to Canada."


@pytest.fixture
def chat() -> Iterator[tuple[FakeChat, str]]:
    fake = FakeChat()

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
            fake.requests.append(({"path": self.path, **dict(self.headers.items())}, body))
            if fake.reply is None or self.path != "/v1/chat/completions":
                self.send_response(503)
                self.end_headers()
                return
            answer = {
                "id": "chatcmpl-1",
                "object": "chat.completion",
                "model": body["model"],
                "choices": [
                    {
                        "index": 0,
                        "message": {"role": "assistant", "content": f"  {fake.reply}\n"},
                        "finish_reason": "stop",
                    }
                ],
            }
            data = json.dumps(answer).encode()
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def log_message(self, format: str, *args: Any) -> None:
            pass

    with serving(ThreadingHTTPServer(("127.0.0.1", 0), Handler)) as server:
        yield fake, f"http://127.0.0.1:{server.server_address[1]}"


REQUEST = DraftRequest(
    text="Do you ship to Canada?",
    author_handle="ann",
    author_name="Ann",
    platform="instagram",
    kind="comment",
    history=(PastExchange("Do you ship to France?", "Yes, in 3 days!"),),
)


def test_drafts_come_from_the_chat_completions_api(chat: tuple[FakeChat, str]) -> None:
    fake, base = chat
    drafter = OpenAICompatibleDrafter(base, api_key="sk-local", model="tiny-1")
    draft = drafter.draft(REQUEST)
    assert draft.text == "Thanks @ann! Two-day shipping to Canada."
    assert draft.source == "llm"
    headers, body = fake.requests[0]
    assert headers["path"] == "/v1/chat/completions"
    assert headers["Authorization"] == "Bearer sk-local"
    assert body["model"] == "tiny-1"
    roles = [m["role"] for m in body["messages"]]
    assert roles == ["system", "user", "assistant", "user"]  # the past reply is an example
    assert "Do you ship to Canada?" in body["messages"][-1]["content"]


def test_a_failing_service_falls_back_to_the_offline_drafter(chat: tuple[FakeChat, str]) -> None:
    fake, base = chat
    fake.reply = None
    draft = OpenAICompatibleDrafter(base).draft(REQUEST)
    assert draft.source in {"template", "past_reply"}
    assert draft == OfflineDrafter().draft(REQUEST)


def test_the_offline_drafter_is_the_default() -> None:
    assert isinstance(drafter_for(None), OfflineDrafter)
    assert isinstance(drafter_for("http://127.0.0.1:1"), OpenAICompatibleDrafter)
