"""The Graph API's write side, shared by Instagram, Facebook and Threads."""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from datetime import datetime
from typing import Any, TypeVar

from connectors.base import (
    AccountRef,
    Conversation,
    PermanentError,
    Published,
    TransientError,
)
from connectors.graph.reader import GraphConnector
from connectors.http import parse_time
from connectors.publishing import (
    POLL_SECONDS,
    POLLS,
    Publishing,
)

G = TypeVar("G", bound=GraphConnector)


class GraphPublishing(Publishing[G]):
    """Containers, status polling and comment/DM reads shared by the Graph-shaped platforms."""

    def _call(
        self,
        method: str,
        path: str,
        account: AccountRef,
        params: dict[str, Any],
        *,
        idempotent: bool,
        json: Any = None,
    ) -> Any:
        token = self.reader.token_for(account)
        query = {**params, "access_token": token} if token else params
        return self.send_json(
            method, path, self.reader.classify, idempotent=idempotent, params=query, json=json
        )

    def _wait_ready(self, account: AccountRef, container: str, field: str = "status_code") -> None:
        """Poll a container until the platform has processed its media."""
        for _ in range(POLLS):
            body = self._call("GET", f"/{container}", account, {"fields": field}, idempotent=True)
            status = str(body.get(field) or body.get("status") or "")
            if status in ("FINISHED", "PUBLISHED"):
                return
            if status in ("ERROR", "EXPIRED"):
                raise PermanentError(f"media processing failed: {status}", code=status)
            self.http.sleep(POLL_SECONDS)
        raise TransientError("media still processing", code="processing")

    def _publish_container(self, account: AccountRef, edge: str, container: str) -> Published:
        """POST /{user-id}/{edge} with the container: the one call that commits a post."""
        body = self._call(
            "POST",
            f"/{account.external_id}/{edge}",
            account,
            {"creation_id": container},
            idempotent=False,
        )
        return self.published(str(body["id"]), None)

    def _comments(
        self, account: AccountRef, post_ids: Iterable[str], edge: str, since: datetime | None
    ) -> Iterator[Conversation]:
        """Comments (``edge`` ``comments``, or ``replies``) on these posts after ``since``."""
        for post_id in post_ids:
            body = self._call(
                "GET",
                f"/{post_id}/{edge}",
                account,
                {"fields": "id,text,message,timestamp,created_time,username,from"},
                idempotent=True,
            )
            for item in body.get("data") or []:
                found = self._comment_conversation(item, post_id)
                if since is None or found.received_at > since:
                    yield found

    def _comment_conversation(self, item: dict[str, Any], post_id: str) -> Conversation:
        sender = item.get("from") or {}
        return Conversation(
            platform=self.platform,
            external_id=str(item["id"]),
            kind="comment",
            author_handle=str(
                item.get("username") or sender.get("username") or sender.get("id") or ""
            ),
            author_name=sender.get("name"),
            text=str(item.get("text") or item.get("message") or ""),
            message_external_id=str(item["id"]),
            received_at=parse_time(item.get("timestamp") or item["created_time"]),
            post_external_id=post_id,
        )

    def _dms(
        self, account: AccountRef, since: datetime | None, platform: str | None
    ) -> Iterator[Conversation]:
        params = {"fields": "participants,updated_time,messages{id,message,from,created_time}"}
        if platform:
            params["platform"] = platform
        body = self._call(
            "GET", f"/{account.external_id}/conversations", account, params, idempotent=True
        )
        for conversation in body.get("data") or []:
            for message in (conversation.get("messages") or {}).get("data") or []:
                sender = message.get("from") or {}
                if str(sender.get("id")) == account.external_id:
                    continue
                at = parse_time(message["created_time"])
                if since is not None and at <= since:
                    continue
                yield Conversation(
                    platform=self.platform,
                    external_id=str(conversation["id"]),
                    kind="dm",
                    author_handle=str(
                        sender.get("username") or sender.get("name") or sender.get("id")
                    ),
                    author_name=sender.get("name"),
                    text=str(message.get("message") or ""),
                    message_external_id=str(message["id"]),
                    received_at=at,
                )

    def _dm_reply(
        self, account: AccountRef, conversation: str, text: str, extra: dict[str, Any]
    ) -> Published:
        """GET the conversation's participants, then POST /{id}/messages to the other one."""
        body = self._call(
            "GET", f"/{conversation}", account, {"fields": "participants"}, idempotent=True
        )
        others = [
            p
            for p in (body.get("participants") or {}).get("data") or []
            if str(p.get("id")) != account.external_id
        ]
        if not others:
            raise PermanentError(f"conversation {conversation} has no other participant")
        sent = self._call(
            "POST",
            f"/{account.external_id}/messages",
            account,
            {},
            idempotent=False,
            json={"recipient": {"id": others[0]["id"]}, "message": {"text": text}, **extra},
        )
        return self.published(str(sent.get("message_id")), None)
