"""Media uploads over real HTTP: typed by bytes, streamed, hashed, idempotent."""

from __future__ import annotations

import hashlib
import uuid
from collections.abc import Iterator

from tests.posts.helpers import JPEG, MP4, PDF, PNG, upload
from tests.support import Api, LiveServer, Tenant, assert_error

MiB = 1024 * 1024


def test_png_is_judged_by_its_bytes_not_the_header(server: LiveServer, tenant: Tenant) -> None:
    response = upload(
        tenant.api, PNG, name="../../etc/evil.txt", content_type="text/plain", alt_text="A logo"
    )
    media = tenant.api.ok(response, 201)
    assert media["id"].startswith("med_")
    assert (media["kind"], media["content_type"]) == ("image", "image/png")
    assert media["sha256"] == hashlib.sha256(PNG).hexdigest()
    assert media["size_bytes"] == len(PNG)
    assert media["filename"] == "evil.txt"
    assert media["alt_text"] == "A logo"
    stored = server.settings.media_dir / f"{media['id']}.png"
    assert stored.read_bytes() == PNG
    assert not list(server.settings.media_dir.glob("evil*"))
    assert tenant.api.ok(tenant.api.get(f"/media/{media['id']}")) == media
    assert [m["id"] for m in tenant.api.list_all("/media")] == [media["id"]]


def test_other_kinds(tenant: Tenant) -> None:
    kinds = {}
    for content, name in ((JPEG, "a.jpg"), (MP4, "a.mp4"), (PDF, "a.pdf")):
        media = tenant.api.ok(upload(tenant.api, content, name=name), 201)
        kinds[name] = (media["kind"], media["content_type"])
    assert kinds == {
        "a.jpg": ("image", "image/jpeg"),
        "a.mp4": ("video", "video/mp4"),
        "a.pdf": ("document", "application/pdf"),
    }
    videos = tenant.api.list_all("/media", kind="video")
    assert [m["kind"] for m in videos] == ["video"]


def test_text_named_png_is_unsupported(server: LiveServer, tenant: Tenant) -> None:
    before = set(server.settings.media_dir.iterdir())
    response = upload(tenant.api, b"hello, I am plain text pretending", name="x.png")
    assert_error(response, 415, "UNSUPPORTED_MEDIA_TYPE")
    assert set(server.settings.media_dir.iterdir()) == before


def test_not_multipart_and_missing_file(tenant: Tenant) -> None:
    assert_error(tenant.api.post("/media/upload", json={"a": 1}), 415, "UNSUPPORTED_MEDIA_TYPE")
    error = assert_error(
        tenant.api.post("/media/upload", data={"alt_text": "x"}, files={"other": ("a", b"b")}),
        400,
        "VALIDATION_ERROR",
    )
    assert error["details"][0]["issue"] == "unknown_field"
    error = assert_error(
        tenant.api.post("/media/upload", files={"alt_text": (None, b"only alt")}),
        400,
        "VALIDATION_ERROR",
    )
    assert error["details"][0]["field"] == "file"


def test_image_over_20_mib_is_too_large(server: LiveServer, tenant: Tenant) -> None:
    before = set(server.settings.media_dir.iterdir())

    def body() -> Iterator[bytes]:
        yield PNG
        chunk = bytes(MiB)
        for _ in range(21):
            yield chunk

    # Build the multipart body by hand so that it streams.
    boundary = uuid.uuid4().hex
    head = (
        f'--{boundary}\r\nContent-Disposition: form-data; name="file"; filename="big.png"\r\n'
        "Content-Type: image/png\r\n\r\n"
    ).encode()
    tail = f"\r\n--{boundary}--\r\n".encode()

    def stream() -> Iterator[bytes]:
        yield head
        yield from body()
        yield tail

    response = tenant.api.post(
        "/media/upload",
        content=stream(),
        headers={"Content-Type": f"multipart/form-data; boundary={boundary}"},
    )
    assert_error(response, 413, "PAYLOAD_TOO_LARGE")
    assert set(server.settings.media_dir.iterdir()) == before


def test_upload_auth_scope_and_workspace(
    server: LiveServer, tenant: Tenant, other_tenant: Tenant
) -> None:
    anonymous = Api(server.base_url, None)
    assert_error(upload(anonymous, PNG), 401, "AUTH_REQUIRED")
    assert_error(anonymous.get("/media"), 401, "AUTH_REQUIRED")
    reader = tenant.key_with(server, scopes=["posts:read"])
    assert_error(upload(reader, PNG), 403, "SCOPE_FORBIDDEN")
    writer = tenant.key_with(server, scopes=["media:write"])
    assert_error(writer.get("/media"), 403, "SCOPE_FORBIDDEN")
    media = tenant.api.ok(upload(tenant.api, PNG), 201)
    assert_error(other_tenant.api.get(f"/media/{media['id']}"), 404, "NOT_FOUND")
    assert other_tenant.api.list_all("/media") == []


def test_upload_idempotency(tenant: Tenant) -> None:
    api = tenant.api
    key = str(uuid.uuid4())
    first = upload(api, PNG, alt_text="one", idempotency_key=key)
    again = upload(api, PNG, alt_text="one", idempotency_key=key)
    assert first.status_code == again.status_code == 201
    assert again.headers["Idempotent-Replayed"] == "true"
    assert again.json() == first.json()
    assert len(api.list_all("/media")) == 1
    assert_error(
        upload(api, JPEG, alt_text="one", idempotency_key=key), 409, "IDEMPOTENCY_CONFLICT"
    )
    assert_error(upload(api, PNG, alt_text="two", idempotency_key=key), 409, "IDEMPOTENCY_CONFLICT")
    missing = api.http.post("/media/upload", files={"file": ("a.png", PNG, "image/png")})
    assert_error(missing, 400, "IDEMPOTENCY_KEY_REQUIRED")
    assert len(api.list_all("/media")) == 1


def test_empty_file(server: LiveServer, tenant: Tenant) -> None:
    before = set(server.settings.media_dir.iterdir())
    error = assert_error(upload(tenant.api, b""), 400, "VALIDATION_ERROR")
    assert [(d["field"], d["issue"]) for d in error["details"]] == [("file", "empty")]
    assert set(server.settings.media_dir.iterdir()) == before
