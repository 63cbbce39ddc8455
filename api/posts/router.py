"""Posts & media: create, list, edit, schedule and cancel posts; upload and read media."""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from typing import Annotated

from fastapi import APIRouter, Depends, Query, Request, Response
from fastapi.concurrency import run_in_threadpool

from api import idempotency
from api.caching import JSON, cached_json
from api.context import request_id_var
from api.deps import IdPath, MediaWrite, PostsRead, PostsWrite, SettingsDep, StoreDep
from api.pagination import PageParams
from api.posts.media import OPENAPI_BODY, StreamedUpload, boundary_of
from api.request_state import IdempotencyMode, RequestState, claims_key
from api.routing import MurmurRoute
from api.schemas import Envelope, ok
from domain.errors import ValidationFailed
from domain.posts import reads, service
from domain.posts.schemas import Media, MediaKind, Post, PostCheck, PostCreate, PostUpdate
from domain.schemas import Page, UtcDatetime
from domain.workspaces.schemas import Platform
from warehouse import idempotency as idem_repo
from warehouse import posts as repo
from warehouse.errors import DuplicateKeyError
from warehouse.group_commit import GroupCommit
from warehouse.ids import new_id, to_db
from warehouse.posts import PostStatus
from warehouse.rows import Cursor

router = APIRouter(tags=["Posts & media"], route_class=MurmurRoute)

Since = Annotated[UtcDatetime | None, Query(description="Inclusive lower bound, with offset.")]
Until = Annotated[UtcDatetime | None, Query(description="Exclusive upper bound, with offset.")]


async def get_post_writes(request: Request) -> PostWrites:
    writes: PostWrites = request.app.state.post_writes
    return writes


PostWrites = GroupCommit[service.PostRequest, bytes]


def record_posts(cur: Cursor, requests: Sequence[service.PostRequest]) -> list[bytes | Exception]:
    """Create a batch's posts; answer each in its envelope, recorded under its key (201).

    The responses commit with the posts (the group commit's one transaction), so that a
    retry with the same key replays what the first attempt answered.
    """
    outcomes = service.create_posts(cur, requests)
    answers: list[bytes | Exception] = []
    completed: list[tuple[idem_repo.RecordKey, str, int, str]] = []
    for request, outcome in zip(requests, outcomes, strict=True):
        if isinstance(outcome, Exception):
            answers.append(outcome)
            continue
        body = Envelope(data=outcome, request_id=request.request_id).model_dump_json().encode()
        answers.append(body)
        completed.append((request.record, request.fingerprint, 201, body.decode()))
    if completed:
        idem_repo.insert_completed(cur, completed, ttl_seconds=requests[0].ttl_seconds)
    return answers


PostWritesDep = Annotated[PostWrites, Depends(get_post_writes)]


@router.post(
    "/posts",
    status_code=201,
    response_model=Envelope[Post],
    dependencies=[claims_key(IdempotencyMode.BATCH)],
)
async def create_post(
    request: Request,
    ctx: PostsWrite,
    body: PostCreate,
    store: StoreDep,
    settings: SettingsDep,
    writes: PostWritesDep,
) -> Response:
    """Create a post for one or more destinations: a draft, for approval, scheduled or now."""
    record = idem_repo.RecordKey(
        ctx.actor,
        ctx.workspace_id,
        request.method,
        request.url.path,
        idempotency.validate_key(request.headers.get(idempotency.HEADER)),
    )
    digest = idempotency.fingerprint(await request.body())
    state = RequestState.of(request.scope)
    if state.idempotency is None:
        # A fresh key: the post, its key and its response commit with concurrent ones.
        pending = writes.submit(
            service.PostRequest(
                workspace_id=ctx.workspace_id,
                actor=ctx.actor,
                body=body,
                record=record,
                fingerprint=digest,
                ttl_seconds=settings.idempotency_ttl_seconds,
                request_id=request_id_var.get(),
            )
        )
        try:
            created = await asyncio.wrap_future(pending)
        except (service.KeySeen, DuplicateKeyError):
            pass  # the key has a record (or got one meanwhile): the careful way below
        else:
            return Response(created, status_code=201, media_type=JSON)
        state.idempotency = await run_in_threadpool(
            idempotency.take,
            store,
            record,
            digest,
            lease_seconds=settings.idempotency_lease_seconds,
            ttl_seconds=settings.idempotency_ttl_seconds,
        )
    # Holding the key (an expired or abandoned record taken over): the request's own
    # transaction, which the route class commits with the key's response.
    post = await run_in_threadpool(service.create_post, ctx.tx, ctx.workspace_id, ctx.actor, body)
    return Response(ok(post).model_dump_json().encode(), status_code=201, media_type=JSON)


# The body as sent, unparsed: its shape's failures are part of the answer, not a 400.
_CHECKED_BODY = {
    "requestBody": {
        "required": True,
        "content": {"application/json": {"schema": {"$ref": "#/components/schemas/PostCreate"}}},
    }
}


@router.post(
    "/posts/validate",
    response_model=Envelope[PostCheck],
    operation_id="validate_post",
    openapi_extra=_CHECKED_BODY,
)
async def validate_post(request: Request, ctx: PostsWrite) -> Envelope[PostCheck]:
    """Check a `POST /posts` body without creating anything: every failure at once."""
    try:
        raw = await request.json()
    except (ValueError, RecursionError) as exc:
        raise ValidationFailed.on("body", "invalid_json", "The body is not valid JSON.") from exc
    check = await run_in_threadpool(service.check_post, ctx.tx, ctx.workspace_id, ctx.actor, raw)
    return ok(check)


@router.get("/posts", response_model=Envelope[Page[Post]])
async def list_posts(
    request: Request,
    ctx: PostsRead,
    page: PageParams,
    status: Annotated[PostStatus | None, Query(description="Only posts in this state.")] = None,
    platform: Annotated[Platform | None, Query(description="Only posts to this platform.")] = None,
    account_id: Annotated[
        str | None, Query(max_length=64, description="Only posts to this account.")
    ] = None,
    tag: Annotated[
        str | None, Query(max_length=64, description="Only posts with this tag.")
    ] = None,
    created_from: Since = None,
    created_to: Until = None,
    scheduled_from: Since = None,
    scheduled_to: Until = None,
) -> Response:
    """List the workspace's posts, newest first."""
    where = repo.PostFilter(
        status=status,
        platform=platform,
        account_id=account_id,
        tag=tag,
        created_from=to_db(created_from),
        created_to=to_db(created_to),
        scheduled_from=to_db(scheduled_from),
        scheduled_to=to_db(scheduled_to),
    )
    return await cached_json(
        request,
        ctx,
        ("posts", where, page.limit, page.key()),
        lambda: reads.list_posts(ctx.tx, ctx.workspace_id, where, page),
    )


def _versioned(post: Post, response: Response) -> Envelope[Post]:
    """The post's envelope, its `version` as the ETag a reviewer's `If-Match` names."""
    response.headers["ETag"] = f'"{post.version}"'
    return ok(post)


@router.get("/posts/{post_id}", response_model=Envelope[Post])
def get_post(ctx: PostsRead, post_id: IdPath, response: Response) -> Envelope[Post]:
    """Get one post with its destinations' statuses."""
    return _versioned(reads.get_post(ctx.tx, ctx.workspace_id, post_id), response)


@router.patch("/posts/{post_id}", response_model=Envelope[Post])
def update_post(
    ctx: PostsWrite, post_id: IdPath, body: PostUpdate, response: Response
) -> Envelope[Post]:
    """Edit a draft, pending or scheduled post; an approved post edited goes back for review."""
    post = service.update_post(ctx.tx, ctx.workspace_id, ctx.actor, post_id, body)
    return _versioned(post, response)


@router.post("/posts/{post_id}/cancel", response_model=Envelope[Post])
def cancel_post(ctx: PostsWrite, post_id: IdPath) -> Envelope[Post]:
    """Cancel a draft, pending or scheduled post; anything later is refused."""
    return ok(service.cancel_post(ctx.tx, ctx.workspace_id, ctx.actor, post_id))


# -- media -------------------------------------------------------------------------------------


@router.post(
    "/media/upload",
    status_code=201,
    response_model=Envelope[Media],
    dependencies=[claims_key(IdempotencyMode.MANUAL)],
    openapi_extra=OPENAPI_BODY,
)
async def upload_media(
    request: Request, ctx: MediaWrite, store: StoreDep, settings: SettingsDep
) -> Envelope[Media]:
    """Upload an image, video or PDF as multipart/form-data (`file`, optional `alt_text`)."""
    raw_key = idempotency.validate_key(request.headers.get(idempotency.HEADER))
    upload = StreamedUpload(settings.media_dir, boundary_of(request))
    await run_in_threadpool(settings.media_dir.mkdir, parents=True, exist_ok=True)
    try:
        async for chunk in request.stream():
            if chunk:
                await run_in_threadpool(upload.feed, chunk)
        kind, alt_text = upload.finish()
        record = idem_repo.RecordKey(ctx.actor, ctx.workspace_id, "POST", request.url.path, raw_key)
        # ctx.tx has run no statement yet, so its snapshot (taken lazily) will see this claim.
        RequestState.of(request.scope).idempotency = await run_in_threadpool(
            idempotency.take,
            store,
            record,
            upload.fingerprint(),
            lease_seconds=settings.idempotency_lease_seconds,
            ttl_seconds=settings.idempotency_ttl_seconds,
        )
        media_id = new_id("med")
        storage_key = await run_in_threadpool(upload.keep, media_id)
    except BaseException:
        await run_in_threadpool(upload.discard)
        raise
    new = repo.NewMedia(
        id=media_id,
        workspace_id=ctx.workspace_id,
        kind=kind.kind,
        content_type=kind.content_type,
        size_bytes=upload.size,
        sha256=upload.sha256.hexdigest(),
        filename=upload.filename,
        storage_key=storage_key,
        alt_text=alt_text,
    )
    try:
        # After the idempotency claim: a replay of a stored upload adds no bytes.
        await run_in_threadpool(
            service.add_media, ctx.tx, new, settings.media_quota_bytes_per_workspace
        )
    except BaseException:
        (settings.media_dir / storage_key).unlink(missing_ok=True)
        raise
    return ok(await run_in_threadpool(reads.get_media, ctx.tx, ctx.workspace_id, media_id))


@router.get("/media", response_model=Envelope[Page[Media]])
def list_media(
    ctx: PostsRead,
    page: PageParams,
    kind: Annotated[MediaKind | None, Query(description="Only this kind.")] = None,
) -> Envelope[Page[Media]]:
    """List the workspace's uploaded media, newest first."""
    return ok(reads.list_media(ctx.tx, ctx.workspace_id, kind, page))


@router.get("/media/{media_id}", response_model=Envelope[Media])
def get_media(ctx: PostsRead, media_id: IdPath) -> Envelope[Media]:
    """Get one uploaded media item."""
    return ok(reads.get_media(ctx.tx, ctx.workspace_id, media_id))
