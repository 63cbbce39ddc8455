"""The platforms Murmur speaks to, one spec each: names, text and media rules, capabilities.

Every list of platforms in Murmur (the API's, the connectors', the pipeline's assets, the
test workspace's accounts) comes from :data:`SPECS`. The simulator keeps its own list on
purpose: it stands for the platforms themselves, outside Murmur.
"""

from __future__ import annotations

from dataclasses import dataclass
from urllib.parse import quote


@dataclass(frozen=True)
class PlatformSpec:
    """What Murmur knows of one platform."""

    name: str  # as stored and as the API names it
    display_name: str
    text_limit: int  # characters (Unicode code points) a post's text may have
    # Media a post may carry: at least/at most this many items (None: no maximum) ...
    media_range: tuple[int, int | None] = (0, None)
    # ... of which at most this many images (None: no maximum of its own).
    max_images: int | None = None
    images_only: bool = False
    exactly_one_video: bool = False
    video_alone: bool = False  # a video cannot share a post with other media
    one_document_alone: bool = False  # a document (PDF) may be a post's only media
    creator_search: bool = True  # its reader can discover other accounts (creators)
    # An account's public page, ``{handle}`` its handle without a leading @ (None: no stable
    # pattern): what the connectors store as an account's URL (docs/connectors.md).
    profile_url: str | None = None

    def profile_link(self, handle: str | None) -> str | None:
        """The public page of the account with this handle (as the platform spells it), or None."""
        name = (handle or "").strip().lstrip("@")
        if self.profile_url is None or not name:
            return None
        return self.profile_url.format(handle=quote(name, safe=""))

    def media_problem(self, kinds: list[str]) -> tuple[str, str] | None:
        """The (issue, message) this platform has with media of these kinds, or None."""
        name = self.display_name
        images, videos = kinds.count("image"), kinds.count("video")
        if "document" in kinds and (not self.one_document_alone or len(kinds) > 1):
            alone = " except one on its own" if self.one_document_alone else ""
            return "media_kind", f"{name} takes no documents{alone}."
        if self.exactly_one_video and (videos != 1 or len(kinds) != 1):
            return "media_count", f"{name} needs exactly 1 video."
        if self.images_only and videos:
            return "media_kind", f"{name} takes images only."
        if self.video_alone and videos and len(kinds) > 1:
            return (
                "media_count",
                f"{name} takes up to {self.max_images} images or exactly 1 video, not both.",
            )
        if self.max_images is not None and images > self.max_images:
            return "media_count", f"{name} takes at most {self.max_images} images."
        low, high = self.media_range
        if len(kinds) < low or (high is not None and len(kinds) > high):
            what = "images" if self.images_only else "images or videos"
            if low == 0:
                return "media_count", f"{name} takes at most {high} {what}."
            return "media_count", f"{name} needs {low} to {high} {what}."
        return None


SPECS: dict[str, PlatformSpec] = {
    spec.name: spec
    for spec in (
        PlatformSpec(
            "x", "X", 280, max_images=4, video_alone=True, profile_url="https://x.com/{handle}"
        ),
        PlatformSpec(
            "instagram",
            "Instagram",
            2200,
            media_range=(1, 10),
            profile_url="https://www.instagram.com/{handle}/",
        ),
        PlatformSpec(
            "facebook", "Facebook", 63206, profile_url="https://www.facebook.com/{handle}"
        ),
        PlatformSpec(
            "linkedin",
            "LinkedIn",
            3000,
            one_document_alone=True,
            # Murmur reads LinkedIn organizations (Pages): their vanity name is the handle.
            profile_url="https://www.linkedin.com/company/{handle}/",
        ),
        PlatformSpec(
            "tiktok",
            "TikTok",
            2200,
            exactly_one_video=True,
            profile_url="https://www.tiktok.com/@{handle}",
        ),
        PlatformSpec(
            "youtube",
            "YouTube",
            5000,
            exactly_one_video=True,
            profile_url="https://www.youtube.com/@{handle}",
        ),
        PlatformSpec(
            "threads",
            "Threads",
            500,
            media_range=(0, 10),
            profile_url="https://www.threads.com/@{handle}",
        ),
        PlatformSpec(
            "bluesky",
            "Bluesky",
            300,
            max_images=4,
            video_alone=True,
            profile_url="https://bsky.app/profile/{handle}",
        ),
        PlatformSpec(
            "pinterest",
            "Pinterest",
            500,
            media_range=(1, 5),
            images_only=True,
            creator_search=False,  # its API reads only the connected account's own pins
            profile_url="https://www.pinterest.com/{handle}/",
        ),
    )
}
PLATFORMS: tuple[str, ...] = tuple(SPECS)


def profile_url(platform: str, handle: str | None) -> str | None:
    """The public page of ``platform``'s account with this handle; None where there is none."""
    spec = SPECS.get(platform)
    return None if spec is None else spec.profile_link(handle)
