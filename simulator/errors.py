"""Error responses in each platform's own shape, as the real APIs send them."""

from __future__ import annotations

import json
import math
import uuid
from datetime import datetime

from starlette.responses import JSONResponse

_GOOGLE_STATUS = {
    400: "INVALID_ARGUMENT",
    401: "UNAUTHENTICATED",
    403: "PERMISSION_DENIED",
    404: "NOT_FOUND",
    429: "RESOURCE_EXHAUSTED",
    500: "INTERNAL",
    503: "UNAVAILABLE",
}
_REASON = {
    400: "Bad Request",
    401: "Unauthorized",
    403: "Forbidden",
    404: "Not Found",
    429: "Too Many Requests",
    500: "Internal Server Error",
    503: "Service Unavailable",
}


def youtube(
    status: int, reason: str, message: str, headers: dict[str, str] | None = None
) -> JSONResponse:
    body = {
        "error": {
            "code": status,
            "message": message,
            "errors": [{"message": message, "domain": "youtube.api", "reason": reason}],
            "status": _GOOGLE_STATUS.get(status, "UNKNOWN"),
        }
    }
    return JSONResponse(body, status, headers=headers)


def x(
    status: int, detail: str | None = None, headers: dict[str, str] | None = None
) -> JSONResponse:
    title = _REASON.get(status, "Error")
    body = {"title": title, "detail": detail or title, "type": "about:blank", "status": status}
    return JSONResponse(body, status, headers=headers)


def x_not_found(kind: str, parameter: str, value: str) -> dict[str, str]:
    """One entry of X's partial-error list (HTTP 200 with ``errors`` beside ``data``)."""
    return {
        "value": value,
        "detail": f"Could not find {kind} with {parameter}: [{value}].",
        "title": "Not Found Error",
        "resource_type": kind,
        "parameter": parameter,
        "resource_id": value,
        "type": "https://api.twitter.com/2/problems/resource-not-found",
    }


def graph(
    status: int,
    code: int,
    message: str,
    *,
    subcode: int | None = None,
    transient: bool = False,
    headers: dict[str, str] | None = None,
) -> JSONResponse:
    error: dict[str, object] = {
        "message": message,
        "type": "OAuthException",
        "code": code,
        "is_transient": transient,
        "fbtrace_id": uuid.uuid4().hex[:22],
    }
    if subcode is not None:
        error["error_subcode"] = subcode
    return JSONResponse({"error": error}, status, headers=headers)


def linkedin(
    status: int,
    message: str,
    *,
    service_code: int | None = None,
    code: str | None = None,
    headers: dict[str, str] | None = None,
) -> JSONResponse:
    body: dict[str, object] = {"status": status, "message": message}
    if service_code is not None:
        body["serviceErrorCode"] = service_code
    if code:
        body["code"] = code
    return JSONResponse(body, status, headers=headers)


def tiktok(
    status: int, code: str, message: str, headers: dict[str, str] | None = None
) -> JSONResponse:
    log_id = uuid.uuid4().hex.upper()[:32]
    body = {"data": {}, "error": {"code": code, "message": message, "log_id": log_id}}
    return JSONResponse(body, status, headers=headers)


def bluesky(
    status: int, error: str, message: str, headers: dict[str, str] | None = None
) -> JSONResponse:
    return JSONResponse({"error": error, "message": message}, status, headers=headers)


def pinterest(
    status: int, code: int, message: str, headers: dict[str, str] | None = None
) -> JSONResponse:
    return JSONResponse({"code": code, "message": message}, status, headers=headers)


GRAPH_LIKE = ("instagram", "facebook", "threads")


def reject(platform: str, message: str) -> JSONResponse:
    """The platform refusing a write for what it contains (media type, length, policy)."""
    if platform == "youtube":
        return youtube(400, "invalidVideoMetadata", message)
    if platform == "x":
        return x(403, message)
    if platform in GRAPH_LIKE:
        return graph(400, 100, message, subcode=2207026)
    if platform == "linkedin":
        return linkedin(422, message, code="UNPROCESSABLE_ENTITY")
    if platform == "tiktok":
        return tiktok(400, "invalid_params", message)
    if platform == "pinterest":
        return pinterest(400, 1, message)
    return bluesky(400, "InvalidRequest", message)


def fault(platform: str, kind: str, now: datetime, retry_after: int) -> JSONResponse:
    """The response of an injected fault (429, 500, 503, expired_token) on ``platform``."""
    reset = str(math.ceil(now.timestamp()) + retry_after)
    # Facebook and Threads answer with the same Graph API errors as Instagram.
    platform_shape = "instagram" if platform in ("facebook", "threads") else platform
    if platform == "pinterest":
        if kind == "429":
            return pinterest(429, 8, "Rate limit exceeded.", {"Retry-After": str(retry_after)})
        if kind in ("500", "503"):
            return pinterest(int(kind), 5, _REASON[int(kind)])
        return expired(platform)
    platform = platform_shape
    if kind == "429":
        if platform == "youtube":
            return youtube(
                429,
                "rateLimitExceeded",
                "Resource has been exhausted (e.g. check quota).",
                {"Retry-After": str(retry_after)},
            )
        if platform == "x":
            # X says when the window resets (epoch seconds), not Retry-After.
            return x(
                429,
                "Too Many Requests",
                {
                    "x-rate-limit-limit": "900",
                    "x-rate-limit-remaining": "0",
                    "x-rate-limit-reset": reset,
                },
            )
        if platform == "instagram":
            # Graph API rate limits are HTTP 400/403 with code 4/17/32/613 and a usage header
            # whose estimated_time_to_regain_access is in minutes.
            usage = {
                "0": [
                    {
                        "type": "instagram",
                        "call_count": 100,
                        "total_cputime": 20,
                        "total_time": 30,
                        "estimated_time_to_regain_access": math.ceil(retry_after / 60),
                    }
                ]
            }
            return graph(
                400,
                4,
                "(#4) Application request limit reached",
                transient=True,
                headers={"X-Business-Use-Case-Usage": json.dumps(usage)},
            )
        if platform == "linkedin":
            return linkedin(
                429,
                "Resource level throttle APPLICATION DAY limit for calls to this "
                "resource is reached.",
                headers={"Retry-After": str(retry_after)},
            )
        if platform == "tiktok":
            return tiktok(
                429,
                "rate_limit_exceeded",
                "API rate limit exceeded, please retry later.",
                {"Retry-After": str(retry_after)},
            )
        return bluesky(
            429,
            "RateLimitExceeded",
            "Rate Limit Exceeded",
            {
                "RateLimit-Limit": "3000",
                "RateLimit-Remaining": "0",
                "RateLimit-Reset": reset,
                "Retry-After": str(retry_after),
            },
        )
    if kind in ("500", "503"):
        status = int(kind)
        if platform == "youtube":
            return youtube(status, "backendError", "Backend Error")
        if platform == "x":
            return x(status)
        if platform == "instagram":
            if status == 503:
                return graph(503, 2, "Service temporarily unavailable", transient=True)
            return graph(500, 1, "An unknown error has occurred.", transient=True)
        if platform == "linkedin":
            return linkedin(status, _REASON[status])
        if platform == "tiktok":
            return tiktok(status, "internal_error", "Something went wrong. Please try again later.")
        return bluesky(
            status, "InternalServerError" if status == 500 else "UpstreamFailure", _REASON[status]
        )
    return expired(platform)


def expired(platform: str) -> JSONResponse:
    """The platform's answer to an expired or revoked access token."""
    if platform == "youtube":
        return youtube(
            401,
            "authError",
            "Request had invalid authentication credentials. "
            "Expected OAuth 2 access token, login cookie or other valid authentication "
            "credential.",
        )
    if platform == "x":
        return x(401, "Unauthorized")
    if platform in GRAPH_LIKE:
        return graph(400, 190, "Error validating access token: Session has expired.", subcode=463)
    if platform == "pinterest":
        return pinterest(401, 2, "Authentication failed.")
    if platform == "linkedin":
        return linkedin(
            401,
            "The token used in the request has expired",
            service_code=65602,
            code="EXPIRED_ACCESS_TOKEN",
        )
    if platform == "tiktok":
        return tiktok(
            401, "access_token_invalid", "The access token is invalid or not found in the request."
        )
    return bluesky(400, "ExpiredToken", "Token has expired")
