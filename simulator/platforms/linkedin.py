"""LinkedIn in the simulator: Community Management reads, posts, uploads and comments."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import BaseRoute, Route

from simulator import errors, inbox
from simulator.platforms.common import (
    Handler,
    account_by_id,
    any_token,
    clamp,
    counters_at,
    endpoint,
    feed_of,
    find_event,
    has_bearer,
    live_post,
    mount,
    reads,
    record_reply,
    request_params,
    sim_of,
    write,
)
from simulator.state import Sim
from simulator.world import Account, Post

ORG = "urn:li:organization:"


def _li_checked(handler: Handler) -> Handler:
    """LinkedIn refuses versioned REST calls that do not name a version."""

    async def run(request: Request, sim: Sim, now: datetime) -> Response:
        if not request.headers.get("linkedin-version"):
            return errors.linkedin(
                426,
                "A version must be present. Please specify a version by adding the "
                "LinkedIn-Version header.",
                code="VERSION_MISSING",
            )
        if request.headers.get("x-restli-protocol-version") != "2.0.0":
            return errors.linkedin(400, "Rest.li protocol 2.0.0 is required.")
        return await handler(request, sim, now)

    return run


def _li_org(sim: Sim, urn_or_id: str) -> Account | None:
    org_id = urn_or_id.removeprefix(ORG)
    account = sim.world.account("linkedin", org_id)
    return account if account is not None and account.external_id == org_id else None


def _li_org_body(account: Account) -> dict[str, Any]:
    numeric = account.external_id.isdigit()
    return {
        "id": int(account.external_id) if numeric else account.external_id,
        "localizedName": account.display_name,
        "vanityName": account.handle,
        "localizedDescription": f"{account.display_name}: {account.category}",
        "localizedWebsite": f"https://{account.handle}.example.com",
    }


async def li_organization(request: Request, sim: Sim, now: datetime) -> Response:
    account = _li_org(sim, request.path_params["id"])
    if account is None:
        return errors.linkedin(404, "Not Found", code="NOT_FOUND")
    return JSONResponse(_li_org_body(account))


async def li_organizations(request: Request, sim: Sim, now: datetime) -> Response:
    q = request.query_params
    if q.get("q") != "vanityName":
        return errors.linkedin(400, "Only q=vanityName is simulated.")
    found = sim.world.search("linkedin", q.get("vanityName", ""))
    size = clamp(q.get("count"), 10, 1, 100)
    start = clamp(q.get("start"), 0, 0, 10**6)
    page = found[start : start + size]
    return JSONResponse(
        {
            "elements": [_li_org_body(a) for a in page],
            "paging": {"start": start, "count": size, "total": len(found), "links": []},
        }
    )


async def li_network_size(request: Request, sim: Sim, now: datetime) -> Response:
    account = _li_org(sim, request.path_params["urn"])
    if account is None:
        return errors.linkedin(404, "Not Found", code="NOT_FOUND")
    return JSONResponse({"firstDegreeSize": account.followers(now)})


def _li_post(post: Post) -> dict[str, Any]:
    ms = int(post.published_at.timestamp() * 1000)
    body: dict[str, Any] = {
        "id": post.external_id,
        "author": ORG + post.account.external_id,
        "commentary": post.text,
        "visibility": "PUBLIC",
        "lifecycleState": "PUBLISHED",
        "createdAt": ms,
        "publishedAt": ms,
        "lastModifiedAt": ms,
        "distribution": {"feedDistribution": "MAIN_FEED"},
        "isReshareDisabledByAuthor": False,
    }
    if post.media_type in ("image", "video"):
        body["content"] = {"media": {"id": f"urn:li:{post.media_type}:C4D{post.number}"}}
    elif post.media_type == "link":
        body["content"] = {"article": {"source": "https://example.com/read", "title": "Read"}}
    return body


async def li_posts(request: Request, sim: Sim, now: datetime) -> Response:
    q = request.query_params
    if q.get("q") != "author":
        return errors.linkedin(400, "Only q=author is simulated.")
    account = _li_org(sim, q.get("author", ""))
    if account is None:
        return errors.linkedin(
            403, "Not enough permissions to access: partnerApiPostsExternal", code="ACCESS_DENIED"
        )
    size = clamp(q.get("count"), 10, 1, 100)
    start = clamp(q.get("start"), 0, 0, 10**6)
    posts = feed_of(sim, account, now)
    page = posts[start : start + size]
    return JSONResponse(
        {
            "elements": [_li_post(p) for p in page],
            "paging": {"start": start, "count": size, "total": len(posts), "links": []},
        }
    )


def _restli_list(value: str) -> list[str]:
    inner = value.strip()
    if inner.startswith("List(") and inner.endswith(")"):
        inner = inner[5:-1]
    return [v for v in inner.split(",") if v]


async def li_share_statistics(request: Request, sim: Sim, now: datetime) -> Response:
    q = request.query_params
    account = _li_org(sim, q.get("organizationalEntity", ""))
    if q.get("q") != "organizationalEntity" or account is None:
        return errors.linkedin(400, "organizationalEntity must be an organization URN.")
    elements = []
    for urn in _restli_list(q.get("shares", "")):
        post = live_post(sim, "linkedin", sim.world.post("linkedin", urn), now)
        if post is None:
            continue  # statistics of deleted shares are no longer returned
        c = counters_at(sim, post, now)
        engagement = (
            (c.likes + c.comments + c.shares + c.clicks) / c.impressions if c.impressions else 0.0
        )
        elements.append(
            {
                "organizationalEntity": ORG + account.external_id,
                "share": urn,
                "totalShareStatistics": {
                    "uniqueImpressionsCount": c.reach,
                    "shareCount": c.shares,
                    "engagement": round(engagement, 6),
                    "clickCount": c.clicks,
                    "likeCount": c.likes,
                    "impressionCount": c.impressions,
                    "commentCount": c.comments,
                },
            }
        )
    return JSONResponse(
        {"elements": elements, "paging": {"start": 0, "count": len(elements), "links": []}}
    )


async def li_create_post(request: Request, sim: Sim, now: datetime) -> Response:
    body = await request_params(request)
    author = str(body.get("author") or "")
    account = account_by_id(sim, "linkedin", author.removeprefix(ORG))
    if account is None:
        return errors.linkedin(
            403,
            "Not enough permissions to access: partnerApiPostsExternal.CREATE",
            code="ACCESS_DENIED",
        )
    if body.get("lifecycleState") != "PUBLISHED" or not body.get("distribution"):
        return errors.linkedin(
            422, "lifecycleState and distribution are required", code="UNPROCESSABLE_ENTITY"
        )
    content = body.get("content") or {}
    media = "text"
    if "media" in content:
        media = "video" if "video" in str(content["media"].get("id")) else "image"
    elif "article" in content:
        media = "link"
    elif "multiImage" in content:
        media = "carousel"
    post = sim.publish(
        account,
        str(body.get("commentary") or ""),
        media,
        now,
        media_count=0 if media in ("text", "link") else 1,
    )
    return Response(status_code=201, headers={"x-restli-id": post.external_id})


async def li_init_upload(request: Request, sim: Sim, now: datetime) -> Response:
    if request.path_params["kind"] not in ("images", "videos"):
        return errors.linkedin(404, "Not Found", code="NOT_FOUND")
    if request.query_params.get("action") != "initializeUpload":
        return errors.linkedin(400, "action=initializeUpload is required")
    number = sim.next_id()
    kind = request.path_params["kind"].rstrip("s")  # images -> image, videos -> video
    urn = f"urn:li:{kind}:C4D{number}"
    sim.pending[f"linkedin:upload:{number}"] = {"urn": urn, "bytes": 0}
    upload = f"{str(request.base_url).rstrip('/')}/linkedin/_upload/{number}"
    return JSONResponse({"value": {"uploadUrl": upload, kind: urn, "uploadUrlExpiresAt": 0}})


async def li_upload(request: Request) -> Response:
    sim = sim_of(request)
    state = sim.pending.get(f"linkedin:upload:{request.path_params['n']}")
    if state is None:
        return errors.linkedin(404, "Not Found")
    state["bytes"] = len(await request.body())
    return Response(status_code=201)


def _li_comment_out(
    urn: str, actor: str, text: str, at: str | int, comment_id: str
) -> dict[str, Any]:
    return {
        "id": comment_id,
        "$URN": comment_id,
        "actor": actor,
        "object": urn,
        "message": {"text": text},
        "created": {"time": at},
    }


async def li_comments(request: Request, sim: Sim, now: datetime) -> Response:
    target = request.path_params["urn"]
    if request.method == "POST":
        body = await request_params(request)
        text = str((body.get("message") or {}).get("text") or "")
        parent = str(body.get("parentComment") or target)
        event = find_event(sim, "linkedin", parent, now)
        if event is None:
            return errors.linkedin(404, "Not Found", code="NOT_FOUND")
        reply_id = record_reply(
            sim, "linkedin", event.thread_id, text, now, actor=body.get("actor")
        )
        urn = f"urn:li:comment:({event.post.external_id if event.post else target},{reply_id})"
        return Response(status_code=201, headers={"x-restli-id": urn})
    event = find_event(sim, "linkedin", target, now)
    if event is not None:  # a comment's own comments: our replies
        return JSONResponse(
            {
                "elements": [
                    _li_comment_out(
                        target, str(r.get("actor") or ""), r["text"], r["created_at"], r["id"]
                    )
                    for r in sim.thread_replies("linkedin", event.thread_id)
                ],
                "paging": {"start": 0, "count": 100, "links": []},
            }
        )
    post = sim.world.post("linkedin", target)
    if post is None:
        return errors.linkedin(404, "Not Found", code="NOT_FOUND")
    found = [
        e
        for e in inbox.events(sim.world, post.account, None, now)
        if e.post is not None and e.post.external_id == post.external_id
    ]
    return JSONResponse(
        {
            "elements": [
                {
                    **_li_comment_out(
                        post.external_id,
                        f"urn:li:person:{e.author_id}",
                        e.text,
                        int(e.at.timestamp() * 1000),
                        e.message_id,
                    ),
                    "actorName": e.author_name,
                }
                for e in found
            ],
            "paging": {"start": 0, "count": len(found), "links": []},
        }
    )


def routes() -> list[BaseRoute]:
    """LinkedIn's endpoints: Community Management reads, posts, uploads and comments."""
    comments = _li_checked(li_comments)
    return [
        Route("/linkedin/_upload/{n}", li_upload, methods=["PUT"]),
        *mount(
            "linkedin",
            [
                (
                    "/rest/posts",
                    write("linkedin", _li_checked(li_create_post), commit=True),
                    ["POST"],
                ),
                (
                    "/rest/{kind:str}",
                    write("linkedin", _li_checked(li_init_upload), commit=False),
                    ["POST"],
                ),
                (
                    "/rest/socialActions/{urn:path}/comments",
                    write("linkedin", comments, commit=True),
                    ["POST"],
                ),
                (
                    "/rest/socialActions/{urn:path}/comments",
                    endpoint("linkedin", comments, auth=any_token),
                    ["GET"],
                ),
                *reads(
                    "linkedin",
                    has_bearer,
                    {
                        "/rest/organizations/{id}": _li_checked(li_organization),
                        "/rest/organizations": _li_checked(li_organizations),
                        "/rest/networkSizes/{urn}": _li_checked(li_network_size),
                        "/rest/posts": _li_checked(li_posts),
                        "/rest/organizationalEntityShareStatistics": _li_checked(
                            li_share_statistics
                        ),
                    },
                ),
            ],
        ),
    ]
