"""YouTube: videos.insert as a resumable upload; comment threads."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import datetime

from connectors.base import (
    AccountRef,
    Conversation,
    PermanentError,
    Published,
    PublishRequest,
    TransientError,
)
from connectors.http import chunks, json_body, parse_time
from connectors.publishing import (
    MARKER_PREFIX,
    SKEW,
    Publishing,
    first_match,
    marker,
    media_bytes,
)
from connectors.youtube.reader import YouTubeConnector, next_page_token

# ---- YouTube --------------------------------------------------------------------------------


class YouTubePublisher(Publishing[YouTubeConnector]):
    """videos.insert as a resumable upload: POST the metadata, then PUT the bytes."""

    def _headers_for(self, account: AccountRef) -> dict[str, str]:
        return self.reader.credentials(account)[1]

    def publish(self, request: PublishRequest) -> Published:
        """The session POST is harmless to repeat; the PUT that completes it is the commit.
        The client_ref rides in the video's tags (visible to the owner only)."""
        videos = [m for m in request.media if m.kind == "video"]
        if not videos:
            raise PermanentError("YouTube needs a video", code="media_required")
        data = media_bytes(videos[0])
        title = str(
            request.options.get("title") or request.text.splitlines()[0]
            if request.text
            else "Video"
        )
        title = title.replace("<", "").replace(">", "")[:100] or "Video"
        extra = request.options.get("tags")
        tags = [marker(request), *([str(t) for t in extra] if isinstance(extra, list) else [])]
        headers = self._headers_for(request.account)
        session = self.send(
            "POST",
            "/upload/youtube/v3/videos",
            self.reader.classify,
            idempotent=True,
            params={"uploadType": "resumable", "part": "snippet,status"},
            json={
                "snippet": {
                    "title": title,
                    "description": request.text,
                    "tags": tags,
                    "categoryId": str(request.options.get("category_id") or "22"),
                },
                "status": {
                    "privacyStatus": str(request.options.get("privacy") or "public"),
                    "selfDeclaredMadeForKids": False,
                },
            },
            headers={
                **headers,
                "X-Upload-Content-Type": videos[0].content_type,
                "X-Upload-Content-Length": str(len(data)),
            },
        )
        location = session.headers.get("location")
        if not location:
            raise TransientError("YouTube opened no upload session", code="no_location")
        body = (
            json_body(
                self.send(
                    "PUT",
                    location,
                    self.reader.classify,
                    idempotent=False,
                    content=data,
                    headers={**headers, "Content-Type": videos[0].content_type},
                )
            )
            or {}
        )
        video_id = str(body["id"])
        return self.published(video_id, f"https://www.youtube.com/watch?v={video_id}")

    def find_published(self, request: PublishRequest, since: datetime) -> Published | None:
        """Uploads since then; videos.list(part=snippet) for their tags: our marker decides
        where a video has one, else the normalised description."""
        posts = list(self.reader.list_posts(request.account, since - SKEW))
        candidates = []
        for batch in chunks([p.external_id for p in posts], 50):
            body = self.reader.read(
                "/youtube/v3/videos", request.account, {"part": "snippet", "id": ",".join(batch)}
            )
            for item in body.get("items") or []:
                snippet = item.get("snippet") or {}
                marks = [t for t in snippet.get("tags") or [] if str(t).startswith(MARKER_PREFIX)]
                at = parse_time(snippet["publishedAt"])
                candidates.append(
                    (
                        self.published(
                            item["id"], f"https://www.youtube.com/watch?v={item['id']}", at
                        ),
                        snippet.get("description"),
                        marks[0] if marks else None,
                    )
                )
        return first_match(request, since, candidates)

    def list_conversations(
        self, account: AccountRef, since: datetime | None
    ) -> Iterator[Conversation]:
        """commentThreads.list(allThreadsRelatedToChannelId), newest first."""
        params = {
            "part": "snippet",
            "allThreadsRelatedToChannelId": account.external_id,
            "maxResults": 100,
            "order": "time",
        }
        threads = self.reader.read_pages(
            "/youtube/v3/commentThreads", account, params, "pageToken", next_page_token
        )
        for body in threads:
            for item in body.get("items") or []:
                top = (item.get("snippet") or {}).get("topLevelComment") or {}
                snippet = top.get("snippet") or {}
                at = parse_time(snippet["publishedAt"])
                if since is not None and at <= since:
                    return
                yield Conversation(
                    platform=self.platform,
                    external_id=str(item["id"]),
                    kind="comment",
                    author_handle=str((snippet.get("authorChannelId") or {}).get("value") or ""),
                    author_name=snippet.get("authorDisplayName"),
                    text=str(snippet.get("textOriginal") or snippet.get("textDisplay") or ""),
                    message_external_id=str(top.get("id") or item["id"]),
                    received_at=at,
                    post_external_id=(item.get("snippet") or {}).get("videoId"),
                )

    def reply(
        self, account: AccountRef, conversation: str, text: str, client_ref: str
    ) -> Published:
        """comments.insert(part=snippet) with parentId: the thread's top-level comment."""
        query, headers = self.reader.credentials(account)
        body = self.send_json(
            "POST",
            "/youtube/v3/comments",
            self.reader.classify,
            idempotent=False,
            params={"part": "snippet", **query},
            headers=headers,
            json={"snippet": {"parentId": conversation, "textOriginal": text}},
        )
        return self.published(str(body["id"]), None)
