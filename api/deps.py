"""Request dependencies: the key, its scope, its workspace, its budget and its transaction.

Endpoints take one ``Annotated`` alias (``PostsWrite``, ``InboxRead``…) and receive a
:class:`Context` whose ``tx`` is a transaction the route class commits after the endpoint
returns, together with the idempotency record of a write.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Annotated

from fastapi import Depends, Header, Path, Query, Request, Security
from fastapi.concurrency import run_in_threadpool
from fastapi.security import HTTPAuthorizationCredentials, HTTPBearer, SecurityScopes

from api import idempotency
from api.auth import KeyCache, bearer_hash
from api.ratelimit import Budget, RateLimiter, client_address, parse_networks
from api.request_state import IdempotencyMode, RequestState
from connectors.outbound import Policy, policy_for
from core.settings import Settings
from domain import text
from domain.analytics.as_of import AS_OF_DESCRIPTION, resolve_as_of
from domain.errors import ApiKeyExpired, ApiKeyInvalid, AuthRequired, RateLimited, ValidationFailed
from domain.schemas import UtcDatetime
from domain.workspaces.keys import ApiKey, authenticate
from domain.workspaces.schemas import Platform
from warehouse import idempotency as idem_repo
from warehouse.cursor import Cursor
from warehouse.sealing import Sealer
from warehouse.store import LakeSnapshot, Store, Transaction

WRITE_METHODS = frozenset({"POST", "PUT", "PATCH", "DELETE"})

_bearer = HTTPBearer(
    auto_error=False,
    description="An API key: `Authorization: Bearer sk_test_…` (or `sk_live_…`).",
)


# Dependencies are coroutines even when they do not await: FastAPI runs a plain ``def``
# dependency on the thread pool, a hop that cost ~10% of a cached read's CPU in profiles.
async def get_store(request: Request) -> Store:
    store: Store = request.app.state.store
    return store


def sealer_of(store: Store) -> Sealer:
    """What seals this installation's secrets (set when the store was opened by its settings)."""
    if store.sealer is None:
        raise RuntimeError("the store was opened without its data directory's sealing key")
    return store.sealer


async def get_settings(request: Request) -> Settings:
    settings: Settings = request.app.state.settings
    return settings


StoreDep = Annotated[Store, Depends(get_store)]
SettingsDep = Annotated[Settings, Depends(get_settings)]

# Parameters several endpoints take, defined once so that each reads the same in all of them.
#: A resource's id in a path; every id the store hands out fits in 64 characters.
IdPath = Annotated[str, Path(max_length=64)]
PlatformFilter = Annotated[Platform | None, Query(description="Only this platform.")]
AccountFilter = Annotated[
    str | None, Query(max_length=64, description="Only this connected account (`acc_…`).")
]
RangeEnd = Annotated[
    UtcDatetime | None, Query(description="Exclusive end, with offset; default now.")
]


async def outbound_policy(settings: SettingsDep) -> Policy:
    """Where a user-given URL (a webhook's, a feed's) may point: the settings' allow-list."""
    return policy_for(settings.outbound_allow_hosts)


OutboundPolicy = Annotated[Policy, Depends(outbound_policy)]


@dataclass
class Context:
    """Who is asking, in which workspace, and the transaction their request runs in."""

    key: ApiKey
    requested_workspace: str | None
    txn: Transaction
    _workspace_id: str | None = field(default=None, repr=False)

    @property
    def tx(self) -> Cursor:
        """The request's transaction (begun on first use; the route class ends it)."""
        return self.txn.cur

    @property
    def workspace_id(self) -> str:
        """The request's workspace (X-Workspace-Id, or the key's only one)."""
        if self._workspace_id is None:
            self._workspace_id = self.key.workspace(self.requested_workspace)
        return self._workspace_id

    @property
    def actor(self) -> str:
        return self.key.id

    @property
    def idempotency_workspace(self) -> str:
        """The workspace an Idempotency-Key is scoped to; "" for a write that names none."""
        if self.requested_workspace is None and len(self.key.workspace_ids) != 1:
            return ""  # e.g. members, whose workspace is in the path, by a key with several
        return self.workspace_id


def _look_up_key(store: Store, key_hash: str) -> ApiKey:
    """A write's key, read outside its transaction (which begins after the idempotency claim)."""
    return store.read(lambda cur: authenticate(cur, key_hash))


def _look_up_key_in(txn: Transaction, key_hash: str) -> ApiKey:
    """A read's key, read inside its own transaction: one thread hop instead of two."""
    return authenticate(txn.cur, key_hash)


def anonymous_bucket(address: str) -> str:
    """The budget of requests without any key from ``address`` (the edge middleware's)."""
    return f"anon:{address}"


def _failed_keys_bucket(request: Request, settings: Settings) -> str:
    """The address's budget of failed keys; keyless requests are budgeted apart, at the edge.

    Apart, so that a client's keyless requests (a health probe, a docs page) never stop a
    valid key from being looked up, as when another process's write empties the key cache.
    """
    address = RequestState.of(request.scope).client_address
    if address is None:  # the edge middleware sets it; compute it the same way otherwise
        address = client_address(request.scope, parse_networks(settings.trusted_proxies))
    return f"badkey:{address}"


def _over_anonymous_budget(budget: Budget) -> RateLimited:
    return RateLimited(
        f"Over {budget.limit} requests a minute without a valid API key from this address.",
        retry_after=budget.retry_after,
    )


async def authenticate_request(
    request: Request, store: Store, settings: Settings, txn: Transaction, is_write: bool
) -> ApiKey:
    """The request's key; failures and unknown keys are budgeted per client address."""
    # A key seen before is answered from the cache; any other costs a store lookup, which
    # an address over its budget of failures no longer gets (429 instead of 401).
    limiter: RateLimiter = request.app.state.rate_limiter
    state = RequestState.of(request.scope)
    bucket = _failed_keys_bucket(request, settings)
    limit = settings.unauthenticated_rate_limit
    try:
        key_hash = bearer_hash(request.headers.get("authorization"))
        keys: KeyCache = request.app.state.keys
        key = keys.get(key_hash, txn.keys_token)
        if key is None:
            standing = limiter.peek(bucket, limit)
            if not standing.allowed:
                state.rate_budget = standing
                raise _over_anonymous_budget(standing)
            if is_write:
                key = await run_in_threadpool(_look_up_key, store, key_hash)
            else:
                key = await run_in_threadpool(_look_up_key_in, txn, key_hash)
            keys.put(key_hash, txn.keys_token, key)
    except (AuthRequired, ApiKeyInvalid, ApiKeyExpired):
        if state.rate_budget is None:  # the edge counts keyless ones
            budget = limiter.hit(bucket, limit)
            state.rate_budget = budget
            if not budget.allowed:
                raise _over_anonymous_budget(budget) from None
        raise
    return key


def key_budget(
    limiter: RateLimiter, settings: Settings, key: ApiKey, is_write: bool, *, count: bool = True
) -> Budget:
    """The key's budget of reads or writes, this request counted against it (``count``)."""
    if is_write:
        limit = key.write_rate_limit or settings.write_rate_limit
    else:
        limit = key.read_rate_limit or settings.read_rate_limit
    bucket = f"{key.id}:{'write' if is_write else 'read'}"
    return limiter.hit(bucket, limit) if count else limiter.peek(bucket, limit)


def refuse_over(budget: Budget, is_write: bool) -> None:
    """429 when ``budget`` (a key's, :func:`key_budget`) did not allow the request."""
    if not budget.allowed:
        raise RateLimited(
            f"Over {budget.limit} {'writes' if is_write else 'reads'} a minute for this key.",
            retry_after=budget.retry_after,
        )


def _count_key(request: Request, settings: Settings, key: ApiKey, is_write: bool) -> None:
    """Count the request against its key's budget of reads or writes; 429 past it."""
    limiter: RateLimiter = request.app.state.rate_limiter
    state = RequestState.of(request.scope)
    budget = state.rate_budget
    if budget is None:  # a retried attempt of the same request is not counted twice
        budget = key_budget(limiter, settings, key, is_write)
        state.rate_budget = budget
    refuse_over(budget, is_write)


def _refuse_unstorable(request: Request, body: object) -> None:
    """NUL and lone surrogates in any query or path value, and what ``text.first_violation``
    finds in a JSON body: 400."""
    # A URL percent-decodes invalid UTF-8 to U+FFFD, so only %00 can bring either character:
    # reads without it skip the scan.
    scope = request.scope
    if b"%00" in scope.get("query_string", b"") or b"%00" in scope.get("raw_path", b"%00"):
        for name, value in (*request.query_params.multi_items(), *request.path_params.items()):
            if isinstance(value, str) and not text.is_clean(value):
                raise ValidationFailed.on(text.scrub(name), text.ISSUE, text.MESSAGE)
    violation = text.first_violation(body)
    if violation is not None:
        raise ValidationFailed.on(*violation)


async def _json_body(request: Request) -> object:
    """The request's JSON body (parsed once, shared with FastAPI), or None."""
    if "json" not in request.headers.get("content-type", ""):
        return None
    if RequestState.of(request.scope).idempotency_mode is IdempotencyMode.MANUAL:
        return None  # an upload, streamed by its endpoint: never buffer it here
    try:
        return await request.json()
    except (ValueError, RecursionError):
        return None  # FastAPI refuses it for endpoints that take a body; others ignore it


async def context(
    request: Request,
    security_scopes: SecurityScopes,
    store: StoreDep,
    settings: SettingsDep,
    _credentials: Annotated[HTTPAuthorizationCredentials | None, Depends(_bearer)],
    x_workspace_id: Annotated[
        str | None,
        Header(
            description="The workspace to act in; optional when the key has only one.",
            max_length=64,
        ),
    ] = None,
) -> Context:
    """Authenticate, check scope and budget, claim the idempotency key, open the transaction."""
    is_write = request.method in WRITE_METHODS
    # The token is read before anything of the store is: see warehouse/changes.py.
    txn = store.begin(write=is_write)
    state = RequestState.of(request.scope)
    state.tx = txn
    key = await authenticate_request(request, store, settings, txn, is_write)
    _count_key(request, settings, key, is_write)
    for scope in security_scopes.scopes:
        key.require(scope)
    ctx = Context(key=key, requested_workspace=x_workspace_id, txn=txn)
    if x_workspace_id is not None:
        _ = ctx.workspace_id  # refuse a forbidden workspace before any work
    already_claimed = state.idempotency is not None
    if is_write and not already_claimed:
        # The documented order of checks: idempotency before validation (of the body too).
        idempotency.validate_key(request.headers.get(idempotency.HEADER))
    if state.malformed_json is not None:  # found by the route class, reported in its turn
        raise ValidationFailed.on(
            "body", "invalid_json", f"The body is not valid JSON: {state.malformed_json}"
        )
    # Before the idempotency claim: a refused request leaves no record.
    _refuse_unstorable(request, await _json_body(request) if is_write else None)
    mode = state.idempotency_mode
    if not is_write or (mode is IdempotencyMode.BATCH and not already_claimed):
        pass  # a read, or a write whose group commit takes a fresh key with the work
    elif not already_claimed and mode is not IdempotencyMode.MANUAL:
        raw_key = idempotency.validate_key(request.headers.get(idempotency.HEADER))
        record = idem_repo.RecordKey(
            key.id, ctx.idempotency_workspace, request.method, request.url.path, raw_key
        )
        digest = idempotency.fingerprint(await request.body())
        state.idempotency = await run_in_threadpool(
            idempotency.take_in,
            store,
            txn,
            record,
            digest,
            lease_seconds=settings.idempotency_lease_seconds,
            ttl_seconds=settings.idempotency_ttl_seconds,
        )
    # Otherwise the transaction begins with its first statement: a writer's takes the write
    # lock then, so nothing the request does before (an upload's claim) waits behind it.
    return ctx


PostsRead = Annotated[Context, Security(context, scopes=["posts:read"])]
PostsWrite = Annotated[Context, Security(context, scopes=["posts:write"])]
MediaWrite = Annotated[Context, Security(context, scopes=["media:write"])]
WorkspacesRead = Annotated[Context, Security(context, scopes=["workspaces:read"])]
WorkspacesWrite = Annotated[Context, Security(context, scopes=["workspaces:write"])]
AccountsRead = Annotated[Context, Security(context, scopes=["accounts:read"])]
ApprovalsRead = Annotated[Context, Security(context, scopes=["approvals:read"])]
ApprovalsWrite = Annotated[Context, Security(context, scopes=["approvals:write"])]
InboxRead = Annotated[Context, Security(context, scopes=["inbox:read"])]
InboxWrite = Annotated[Context, Security(context, scopes=["inbox:write"])]
AutomationsRead = Annotated[Context, Security(context, scopes=["automations:read"])]
AutomationsWrite = Annotated[Context, Security(context, scopes=["automations:write"])]
AnalyticsRead = Annotated[Context, Security(context, scopes=["analytics:read"])]


async def keyless(request: Request, settings: SettingsDep) -> None:
    """For an endpoint anyone may call (a sign-in link's use): the address's keyless budget.

    The edge counts a request without ``Authorization`` against that budget and refuses it
    past it; one with the header is left to authentication, which such an endpoint has none
    of, so it is counted here: a header buys no guesses beyond the budget.
    """
    state = RequestState.of(request.scope)
    budget = state.rate_budget
    if budget is None:
        limiter: RateLimiter = request.app.state.rate_limiter
        address = state.client_address
        if address is None:
            address = client_address(request.scope, parse_networks(settings.trusted_proxies))
        budget = limiter.hit(anonymous_bucket(address), settings.unauthenticated_rate_limit)
        state.rate_budget = budget
    if not budget.allowed:
        raise _over_anonymous_budget(budget)
    if state.malformed_json is not None:
        raise ValidationFailed.on(
            "body", "invalid_json", f"The body is not valid JSON: {state.malformed_json}"
        )
    _refuse_unstorable(request, await _json_body(request))


async def own_key(
    request: Request,
    store: StoreDep,
    settings: SettingsDep,
    _credentials: Annotated[HTTPAuthorizationCredentials | None, Depends(_bearer)],
) -> ApiKey:
    """The request's key, for a write about the key itself (sign-out): any scope, no workspace.

    Counted as a write of the key's. No Idempotency-Key is claimed: such a write revokes the
    very key its record would be filed under, so a repeat is refused at authentication.
    """
    # Never begun: a write's key is looked up in a snapshot of its own; only the keys token
    # (the key cache's) is read from it.
    txn = store.begin(write=True)
    key = await authenticate_request(request, store, settings, txn, is_write=True)
    _count_key(request, settings, key, is_write=True)
    return key


Keyless = Depends(keyless)
OwnKey = Annotated[ApiKey, Depends(own_key)]


# -- as_of: analytics read at a past snapshot of the lake ---------------------------------------


async def as_of_snapshot(
    ctx: AnalyticsRead,
    store: StoreDep,
    settings: SettingsDep,
    as_of: Annotated[
        str | None, Query(min_length=1, max_length=64, description=AS_OF_DESCRIPTION)
    ] = None,
) -> LakeSnapshot | None:
    """The past snapshot an analytics read asked for (``as_of``), its lake reads moved to it."""
    if as_of is None:
        return None  # the newest: nothing read, nothing changed
    snapshot = await run_in_threadpool(resolve_as_of, store, settings, as_of)
    ctx.txn.travel(snapshot)
    return snapshot


#: An analytics read's ``as_of``: None for the newest data, else the snapshot its reads are of.
AsOf = Annotated[LakeSnapshot | None, Depends(as_of_snapshot)]
