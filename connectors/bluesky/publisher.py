"""Bluesky: createSession, uploadBlob, createRecord; notifications."""

from __future__ import annotations

import re
from collections.abc import Iterator
from datetime import UTC, datetime
from typing import Any

from connectors.base import (
    AccountRef,
    AuthExpiredError,
    Conversation,
    Published,
    PublishRequest,
)
from connectors.bluesky.reader import BlueskyConnector, next_cursor
from connectors.http import pages, parse_time
from connectors.publishing import (
    MARKER_PREFIX,
    SKEW,
    Publishing,
    first_match,
    marker,
    media_bytes,
)

# ---- Bluesky --------------------------------------------------------------------------------

LINK = re.compile(rb"https?://[^\s]+")
TAG = re.compile(rb"(?<![\w&])#(\w{1,64})")
MARKER_FIELD = "murmurRef"  # an extra record field: AT Protocol keeps unknown fields


def facets(text: str) -> list[dict[str, Any]]:
    """Rich-text facets for links and hashtags, indexed in UTF-8 bytes as the lexicon says."""
    raw = text.encode()
    out: list[dict[str, Any]] = []
    for match in LINK.finditer(raw):
        uri = match.group(0).rstrip(b".,;:!?)").decode()
        end = match.start() + len(uri.encode())
        out.append(
            {
                "index": {"byteStart": match.start(), "byteEnd": end},
                "features": [{"$type": "app.bsky.richtext.facet#link", "uri": uri}],
            }
        )
    for match in TAG.finditer(raw):
        out.append(
            {
                "index": {"byteStart": match.start(), "byteEnd": match.end()},
                "features": [
                    {"$type": "app.bsky.richtext.facet#tag", "tag": match.group(1).decode()}
                ],
            }
        )
    return out


class BlueskyPublisher(Publishing[BlueskyConnector]):
    """createSession (the account's app password), uploadBlob, createRecord app.bsky.feed.post."""

    def __init__(self, reader: BlueskyConnector) -> None:
        super().__init__(reader)
        self.sessions: dict[str, tuple[str, str]] = {}  # account → (did, accessJwt)

    def session(self, account: AccountRef, *, fresh: bool = False) -> tuple[str, str]:
        """com.atproto.server.createSession, cached per account."""
        if not fresh and account.external_id in self.sessions:
            return self.sessions[account.external_id]
        body = self.send_json(
            "POST",
            "/xrpc/com.atproto.server.createSession",
            self.reader.classify,
            idempotent=True,
            json={
                "identifier": account.handle or account.external_id,
                "password": self.reader.token_for(account) or "",
            },
        )
        self.sessions[account.external_id] = (str(body["did"]), str(body["accessJwt"]))
        return self.sessions[account.external_id]

    def _bearer(self, account: AccountRef) -> dict[str, str]:
        return {"Authorization": f"Bearer {self.session(account)[1]}"}

    def _create(self, account: AccountRef, record: dict[str, Any]) -> dict[str, Any]:
        did, _jwt = self.session(account)
        try:
            return dict(
                self.send_json(
                    "POST",
                    "/xrpc/com.atproto.repo.createRecord",
                    self.reader.classify,
                    idempotent=False,
                    json={"repo": did, "collection": "app.bsky.feed.post", "record": record},
                    headers=self._bearer(account),
                )
            )
        except AuthExpiredError:
            self.sessions.pop(account.external_id, None)  # the next call logs in again
            raise

    def publish(self, request: PublishRequest) -> Published:
        """Blobs first (uploadBlob), then one createRecord carrying the client_ref."""
        account = request.account
        record: dict[str, Any] = {
            "$type": "app.bsky.feed.post",
            "text": request.text,
            "createdAt": datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%S.%f")[:-3] + "Z",
            "langs": [str(request.options.get("lang") or "en")],
            MARKER_FIELD: marker(request),
        }
        found = facets(request.text)
        if found:
            record["facets"] = found
        blobs = []
        for media in request.media:
            body = self.send_json(
                "POST",
                "/xrpc/com.atproto.repo.uploadBlob",
                self.reader.classify,
                idempotent=True,
                content=media_bytes(media),
                headers={**self._bearer(account), "Content-Type": media.content_type},
            )
            blobs.append((media, body["blob"]))
        videos = [b for m, b in blobs if m.kind == "video"]
        if videos:
            record["embed"] = {"$type": "app.bsky.embed.video", "video": videos[0]}
        elif blobs:
            record["embed"] = {
                "$type": "app.bsky.embed.images",
                "images": [{"alt": m.alt_text or "", "image": b} for m, b in blobs[:4]],
            }
        body = self._create(account, record)
        uri = str(body["uri"])
        return self.published(
            uri, f"https://bsky.app/profile/{account.handle}/post/{uri.rsplit('/', 1)[-1]}"
        )

    def find_published(self, request: PublishRequest, since: datetime) -> Published | None:
        """getAuthorFeed since then: the record's murmurRef decides, else the normalised text."""
        candidates = []
        for body in self.reader.author_feed(request.account):
            older = False
            for item in body.get("feed") or []:
                post = item.get("post") or {}
                record = post.get("record") or {}
                at = parse_time(record.get("createdAt") or post["indexedAt"])
                if at < since - SKEW:
                    older = True
                    break
                mark = record.get(MARKER_FIELD)
                candidates.append(
                    (
                        self.published(post["uri"], None, at),
                        record.get("text"),
                        str(mark) if mark else None,
                    )
                )
            if older:
                break
        return first_match(request, since, candidates)

    def list_conversations(
        self, account: AccountRef, since: datetime | None
    ) -> Iterator[Conversation]:
        """app.bsky.notification.listNotifications: replies (comments) and mentions."""
        notifications = pages(
            lambda query: self.reader.get(
                "/xrpc/app.bsky.notification.listNotifications",
                self.reader.classify,
                query,
                self._bearer(account),
            ),
            {"limit": 100},
            "cursor",
            next_cursor,
            items="notifications",
        )
        for body in notifications:
            for note in body.get("notifications") or []:
                reason = note.get("reason")
                record = note.get("record") or {}
                at = parse_time(record.get("createdAt") or note["indexedAt"])
                if since is not None and at <= since:
                    return
                if reason not in ("reply", "mention", "quote"):
                    continue
                author = note.get("author") or {}
                parent = ((record.get("reply") or {}).get("parent") or {}).get("uri")
                yield Conversation(
                    platform=self.platform,
                    external_id=str(note["uri"]),
                    kind="comment" if reason == "reply" else "mention",
                    author_handle=str(author.get("handle") or author.get("did")),
                    author_name=author.get("displayName"),
                    text=str(record.get("text") or ""),
                    message_external_id=str(note["uri"]),
                    received_at=at,
                    post_external_id=parent or note.get("reasonSubject"),
                )

    def reply(
        self, account: AccountRef, conversation: str, text: str, client_ref: str
    ) -> Published:
        """getRecord for the parent's cid and root, then createRecord with reply refs."""
        repo, collection, rkey = conversation.removeprefix("at://").split("/", 2)
        body = self.reader.get(
            "/xrpc/com.atproto.repo.getRecord",
            self.reader.classify,
            {"repo": repo, "collection": collection, "rkey": rkey},
        )
        parent = {"uri": body["uri"], "cid": body["cid"]}
        root = ((body.get("value") or {}).get("reply") or {}).get("root") or parent
        record: dict[str, Any] = {
            "$type": "app.bsky.feed.post",
            "text": text,
            "createdAt": datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%S.%f")[:-3] + "Z",
            "reply": {"root": root, "parent": parent},
            MARKER_FIELD: f"{MARKER_PREFIX}{client_ref}",
        }
        found = facets(text)
        if found:
            record["facets"] = found
        created = self._create(account, record)
        return self.published(str(created["uri"]), None)
