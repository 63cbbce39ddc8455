"""TikTok: the Content Posting API (direct post, pulled from a URL)."""

from __future__ import annotations

from typing import Any

from connectors.base import (
    PermanentError,
    Published,
    PublishRequest,
    TransientError,
)
from connectors.publishing import (
    POLL_SECONDS,
    POLLS,
    Publishing,
    media_bytes,
    media_url,
)
from connectors.tiktok.reader import TikTokConnector

# ---- TikTok ---------------------------------------------------------------------------------


class TikTokPublisher(Publishing[TikTokConnector]):
    """Content Posting API: POST /v2/post/publish/video/init/ then status/fetch until done."""

    def publish(self, request: PublishRequest) -> Published:
        """Direct post of a video (or photos); FILE_UPLOAD for local files, PULL_FROM_URL for
        URLs; the init call is the commit, so it is not retried after it may have landed."""
        account = request.account
        videos = [m for m in request.media if m.kind == "video"]
        images = [m for m in request.media if m.kind == "image"]
        if not videos and not images:
            raise PermanentError("TikTok posts need a video or photos", code="media_required")
        info: dict[str, Any] = {
            "title": request.text,
            "privacy_level": str(request.options.get("privacy_level") or "PUBLIC_TO_EVERYONE"),
            "disable_comment": False,
        }
        headers = {
            **self.reader.headers_for(account),
            "Content-Type": "application/json; charset=UTF-8",
        }
        upload: bytes | None = None
        if videos:
            video = videos[0]
            if video.path.startswith(("http://", "https://")):
                source: dict[str, Any] = {"source": "PULL_FROM_URL", "video_url": video.path}
            else:
                upload = media_bytes(video)
                source = {
                    "source": "FILE_UPLOAD",
                    "video_size": len(upload),
                    "chunk_size": len(upload),
                    "total_chunk_count": 1,
                }
            path = "/v2/post/publish/video/init/"
            payload: dict[str, Any] = {"post_info": info, "source_info": source}
        else:
            path = "/v2/post/publish/content/init/"
            payload = {
                "post_info": {**info, "description": request.text},
                "source_info": {
                    "source": "PULL_FROM_URL",
                    "photo_images": [media_url(m) for m in images],
                    "photo_cover_index": 0,
                },
                "post_mode": "DIRECT_POST",
                "media_type": "PHOTO",
            }
        data = (
            self.send_json(
                "POST", path, self.reader.classify, idempotent=False, json=payload, headers=headers
            )
        ).get("data") or {}
        publish_id = str(data["publish_id"])
        if upload is not None and data.get("upload_url"):
            self.send(
                "PUT",
                str(data["upload_url"]),
                self.reader.classify,
                idempotent=True,
                content=upload,
                headers={
                    "Content-Type": videos[0].content_type,
                    "Content-Range": f"bytes 0-{len(upload) - 1}/{len(upload)}",
                },
            )
        for _ in range(POLLS):
            status = (
                self.send_json(
                    "POST",
                    "/v2/post/publish/status/fetch/",
                    self.reader.classify,
                    idempotent=True,
                    json={"publish_id": publish_id},
                    headers=headers,
                ).get("data")
                or {}
            )
            state = status.get("status")
            if state == "PUBLISH_COMPLETE":
                ids = status.get("publicaly_available_post_id") or []  # sic: TikTok's spelling
                video_id = str(ids[0]) if ids else publish_id
                return self.published(
                    video_id, f"https://www.tiktok.com/@{account.handle}/video/{video_id}"
                )
            if state == "FAILED":
                raise PermanentError(
                    str(status.get("fail_reason") or "publish failed"), code="FAILED"
                )
            self.http.sleep(POLL_SECONDS)
        raise TransientError(f"TikTok is still processing {publish_id}", code="processing")
