"""Hostile input over real HTTP: templates, text, timestamps, throttling, idempotency scope.

Each test pins one finding of the security review (issue 12, points 4 to 7, 9 and 10); the
hypothesis strategies throw NUL characters, lone surrogates and edge timestamps at the
string and time fields of the main write endpoints, and expect a 400 in the envelope.
Addresses in X-Forwarded-For are documentation ranges, only ever sent as header text to
the loopback server.
"""

from __future__ import annotations

import json
import tempfile
import uuid
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any, cast

import httpx
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from api.app import BASE_PATH
from connectors.base import AccountRef, Conversation, Publisher
from domain.inbox import drafts
from domain.workspaces.keys import authenticate
from murmur.logs import configure_logging
from tests.support import (
    Api,
    LiveServer,
    Tenant,
    assert_error,
    embedded_settings,
    new_tenant,
    start_server,
)
from warehouse import workspaces as ws_repo
from workers.engagement import inbox_sync
from workers.engagement.content_automations import render_row

# One worker runs the module: its shared fixture is built once, not on each worker.
pytestmark = pytest.mark.xdist_group(__name__)

EDGE_TIMESTAMPS = ["0001-01-01T00:00:00+14:00", "9999-12-31T23:59:59-12:00"]
HYPOTHESIS = settings(
    max_examples=15,
    deadline=None,
    derandomize=True,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)


# -- fixtures ----------------------------------------------------------------------------------


def _own_server(**options: Any) -> Iterator[LiveServer]:
    configure_logging()
    with tempfile.TemporaryDirectory() as data_dir:
        live = start_server(embedded_settings(Path(data_dir) / "data", **options))
        try:
            yield live
        finally:
            live.stop()


@pytest.fixture(scope="module")
def proxied() -> Iterator[LiveServer]:
    """A server whose trusted proxy is loopback, with a budget of 5 anonymous requests."""
    yield from _own_server(unauthenticated_rate_limit=5, trusted_proxies=["127.0.0.1"])


@pytest.fixture(scope="module")
def direct() -> Iterator[LiveServer]:
    """A server that trusts no proxy, with a budget of 5 anonymous requests."""
    yield from _own_server(unauthenticated_rate_limit=5)


@pytest.fixture(scope="module")
def writer(server: LiveServer) -> Tenant:
    """One tenant for the property-based tests (hypothesis runs each example in one test)."""
    return new_tenant(server)


def send_json(api: Api, method: str, path: str, body: Any, **kwargs: Any) -> httpx.Response:
    """A JSON body with ASCII escapes, so that lone surrogates travel as `\\udXXX`."""
    headers = {"Content-Type": "application/json", **kwargs.pop("headers", {})}
    return api.request(method, path, content=json.dumps(body), headers=headers, **kwargs)


def refused(response: httpx.Response, field: str | None = None) -> dict[str, Any]:
    """A 400 VALIDATION_ERROR in the envelope, naming ``field`` when given."""
    error = assert_error(response, 400, "VALIDATION_ERROR")
    if field is not None:
        assert field in [d["field"] for d in error["details"]], error
    return error


# -- strategies --------------------------------------------------------------------------------

SURROGATES = st.integers(0xD800, 0xDFFF).map(chr)
BAD_CHARACTER = st.one_of(st.just("\x00"), SURROGATES)
PLAIN = st.text(st.characters(codec="utf-8", exclude_characters="\x00"), max_size=8)
# Text with at least one NUL or unpaired surrogate somewhere in it.
BAD_TEXT = st.tuples(PLAIN, BAD_CHARACTER, PLAIN).map("".join)
OFFSET = st.integers(-14 * 60, 14 * 60).map(
    lambda m: f"{'+' if m >= 0 else '-'}{abs(m) // 60:02d}:{abs(m) % 60:02d}"
)
# Instants Python cannot take to UTC, or that the API refuses as out of range.
EDGE_DATETIME = st.one_of(
    st.datetimes(min_value=datetime(1, 1, 1), max_value=datetime(1899, 12, 30)),
    st.datetimes(min_value=datetime(9000, 1, 2), max_value=datetime(9999, 12, 31, 23, 59, 59)),
)
EDGE_TIMESTAMP = st.one_of(
    st.sampled_from(EDGE_TIMESTAMPS),
    st.tuples(EDGE_DATETIME, OFFSET).map(lambda p: p[0].isoformat() + p[1]),
)


def future(hours: int = 24) -> str:
    return (datetime.now(UTC) + timedelta(hours=hours)).isoformat()


# -- 4. templates ------------------------------------------------------------------------------


def _automation(template: str, rows: list[dict[str, Any]], platforms: list[str]) -> dict[str, Any]:
    return {
        "name": f"tmpl-{uuid.uuid4().hex[:6]}",
        "source": {"type": "template", "template": template, "rows": rows},
        "schedule": {"cron": "0 9 * * *", "timezone": "UTC"},
        "target": {"platforms": platforms},
    }


@pytest.mark.parametrize(
    "template",
    [
        "{a:>1000000000}",
        "{a:{a}}",
        "{a!r:>99999999}",
        "{a!s}",
        "{a.__class__}",
        "{a[0]}",
        "{0}",
        "{}",
        "closing } alone",
        "{a",
    ],
)
def test_templates_take_plain_placeholders_only(tenant: Tenant, template: str) -> None:
    api = tenant.api
    body = _automation(template, [{"a": "x"}], ["linkedin"])
    error = refused(api.post("/content-automations", json=body), "source.template")
    assert error["details"][0]["issue"] == "invalid_template"
    made = api.ok(
        api.post("/content-automations", json=_automation("{{a}} {a}", [{"a": "x"}], ["x"])),
        201,
    )
    patch = {"source": {"type": "template", "template": template, "rows": [{"a": "x"}]}}
    refused(api.patch(f"/content-automations/{made['id']}", json=patch), "source.template")


def test_template_rows_are_measured_against_the_platform_limits(tenant: Tenant) -> None:
    api = tenant.api
    rows = [{"a": "short"}, {"a": "y" * 300}]
    error = refused(api.post("/content-automations", json=_automation("{a}", rows, ["x"])))
    assert [(d["field"], d["issue"]) for d in error["details"]] == [("source.rows.1", "max_length")]
    # Repeating one long value is counted without being built.
    error = refused(
        api.post("/content-automations", json=_automation("{a}" * 20_000, [{"a": "z" * 40}], ["x"]))
    )
    assert error["details"][0]["field"] == "source.rows.0"
    api.ok(api.post("/content-automations", json=_automation("{a}", rows, ["linkedin"])), 201)


def test_the_worker_renders_without_str_format() -> None:
    # A template stored before the check (or written past the API) fails its run cheaply.
    assert render_row("Hi {name}, {{literal}} {missing}", {"name": "Ann"}) == (
        "Hi Ann, {literal} {missing}"
    )
    for template in ("{a:>50}", "{a!r}", "{a.__class__}", "{a[0]}"):
        with pytest.raises(ValueError, match="not allowed"):
            render_row(template, {"a": "x"})
    with pytest.raises(ValueError, match="over 63206 characters"):
        render_row("{a}" * 20_000, {"a": "x" * 500_000})


# -- 5. throttling and proxies -----------------------------------------------------------------


def _anonymous(server: LiveServer, forwarded: str | None = None, key: str | None = None) -> Api:
    api = Api(server.base_url, key)
    if forwarded is not None:
        api.http.headers["X-Forwarded-For"] = forwarded
    return api


def test_bad_keys_are_throttled_per_address_before_any_lookup(
    proxied: LiveServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    lookups: list[str] = []

    def counting(cur: Any, key_hash: str) -> Any:
        lookups.append(key_hash)
        return authenticate(cur, key_hash)

    monkeypatch.setattr("api.deps.authenticate", counting)
    attacker = _anonymous(proxied, "198.51.100.10", key=f"sk_test_{uuid.uuid4().hex}")
    for _ in range(5):
        assert_error(attacker.get("/posts"), 401, "API_KEY_INVALID")
    assert len(lookups) == 5
    for _ in range(3):
        response = attacker.post("/posts", json={"text": "x", "platforms": ["x"]})
        assert_error(response, 429, "RATE_LIMITED")
        assert int(response.headers["Retry-After"]) >= 1
        assert response.headers["X-RateLimit-Remaining"] == "0"
    assert len(lookups) == 5  # refused before the store was asked
    neighbour = _anonymous(proxied, "198.51.100.11", key="sk_test_wrong")
    assert_error(neighbour.get("/posts"), 401, "API_KEY_INVALID")


def test_requests_without_a_key_are_throttled(proxied: LiveServer) -> None:
    anonymous = _anonymous(proxied, "198.51.100.20")
    for _ in range(5):
        assert_error(anonymous.get("/posts"), 401, "AUTH_REQUIRED")
    response = anonymous.get("/posts")
    assert_error(response, 429, "RATE_LIMITED")
    assert int(response.headers["Retry-After"]) >= 1


def test_a_known_key_still_works_from_a_throttled_address(proxied: LiveServer) -> None:
    tenant = new_tenant(proxied)
    good = _anonymous(proxied, "198.51.100.30", key=tenant.key)
    good.ok(good.get("/posts"))  # its key is now known
    bad = _anonymous(proxied, "198.51.100.30", key="sk_test_wrong")
    for _ in range(5):
        bad.get("/posts")
    assert_error(bad.get("/posts"), 429, "RATE_LIMITED")
    good.ok(good.get("/posts"))


def test_keyless_requests_never_stop_a_valid_key_from_being_looked_up(
    proxied: LiveServer,
) -> None:
    """Keyless traffic (probes, docs) has its own budget: an unresolved valid key still works."""
    keyless = _anonymous(proxied, "198.51.100.31", key=None)
    for _ in range(5):
        keyless.get("/posts")
    assert_error(keyless.get("/posts"), 429, "RATE_LIMITED")
    tenant = new_tenant(proxied)  # a key this server has never resolved
    good = _anonymous(proxied, "198.51.100.31", key=tenant.key)
    good.ok(good.get("/posts"))


def _wrong_keys_from(server: LiveServer, forwarded: list[str]) -> None:
    """A call with a wrong key from each of ``forwarded`` (X-Forwarded-For): each refused as
    invalid, none yet as over the budget."""
    for hops in forwarded:
        spoofed = _anonymous(server, hops, key="sk_test_wrong")
        assert_error(spoofed.get("/posts"), 401, "API_KEY_INVALID")


def test_hops_a_client_adds_before_the_trusted_proxy_do_not_reset_its_budget(
    proxied: LiveServer,
) -> None:
    _wrong_keys_from(proxied, [f"192.0.2.{n}, 198.51.100.40" for n in range(5)])
    spoofed = _anonymous(proxied, "192.0.2.99, 198.51.100.40", key="sk_test_wrong")
    assert_error(spoofed.get("/posts"), 429, "RATE_LIMITED")


def test_forwarded_for_from_an_untrusted_peer_does_not_reset_the_budget(
    direct: LiveServer,
) -> None:
    _wrong_keys_from(direct, [f"203.0.113.{n}" for n in range(5)])
    for n in range(5, 8):
        spoofed = _anonymous(direct, f"203.0.113.{n}", key="sk_test_wrong")
        assert_error(spoofed.get("/posts"), 429, "RATE_LIMITED")


# -- 6. edge timestamps and lone surrogates: 400, not 500 --------------------------------------


@pytest.mark.parametrize("value", EDGE_TIMESTAMPS)
def test_edge_timestamps_are_refused_in_queries_and_bodies(tenant: Tenant, value: str) -> None:
    api = tenant.api
    body = {"text": "x", "platforms": ["linkedin"], "scheduled_at": value}
    refused(api.post("/posts", json=body), "scheduled_at")
    for name in ("created_from", "created_to", "scheduled_from", "scheduled_to"):
        refused(api.get("/posts", params={name: value}), name)
    for name in ("from", "to"):
        refused(api.get("/analytics/unified", params={name: value}), name)
        refused(api.get("/scheduled-events", params={name: value}), name)
    refused(api.post("/scheduled-events", json={"title": "t", "starts_at": value}), "starts_at")


def test_a_lone_surrogate_in_platform_options_is_refused(tenant: Tenant) -> None:
    body = {"text": "x", "platforms": ["x"], "platform_options": {"x": {"note": "\ud800"}}}
    refused(send_json(tenant.api, "POST", "/posts", body), "platform_options.x.note")
    keyed = {"text": "x", "platforms": ["x"], "platform_options": {"x": {"\udfff": 1}}}
    refused(send_json(tenant.api, "POST", "/posts", keyed))


@HYPOTHESIS
@given(
    value=BAD_TEXT,
    where=st.sampled_from(["text", "tags", "platforms", "media_ids", "option", "option_key"]),
)
def test_no_string_of_a_post_takes_nul_or_a_lone_surrogate(
    writer: Tenant, value: str, where: str
) -> None:
    body: dict[str, Any] = {"text": "ok", "platforms": ["linkedin"]}
    field = where
    if where == "text":
        body["text"] = value
    elif where in {"tags", "platforms", "media_ids"}:
        body[where] = [value]
        field = f"{where}.0"
    elif where == "option":
        body["platform_options"] = {"linkedin": {"k": value}}
        field = "platform_options.linkedin.k"
    else:
        body["platform_options"] = {"linkedin": {value: "v"}}
        field = ""
    error = refused(send_json(writer.api, "POST", "/posts", body))
    assert error["details"][0]["issue"] == "invalid_character"
    if field:
        assert error["details"][0]["field"] == field


@HYPOTHESIS
@given(value=BAD_TEXT, which=st.integers(0, 5))
def test_other_writes_refuse_nul_and_lone_surrogates(
    writer: Tenant, value: str, which: int
) -> None:
    api = writer.api
    requests: list[tuple[str, str, dict[str, Any], str]] = [
        ("POST", "/scheduled-events", {"title": value, "starts_at": future()}, "title"),
        ("POST", "/queues", {"name": value, "timezone": "UTC", "destinations": ["x"]}, "name"),
        (
            "POST",
            "/content-automations",
            _automation("{a}", [{"a": value}], ["linkedin"]),
            "source.rows.0.a",
        ),
        ("POST", "/content-automations", _automation(value, [{}], ["linkedin"]), "source.template"),
        ("PATCH", "/posts/post_missing", {"text": value}, "text"),
        ("POST", "/inbox/automations", {"name": value}, "name"),
    ]
    method, path, body, field = requests[which]
    error = refused(send_json(api, method, path, body), field)
    assert error["details"][0]["issue"] == "invalid_character"


@HYPOTHESIS
@given(value=EDGE_TIMESTAMP, which=st.integers(0, 8))
def test_edge_timestamps_anywhere_are_400(writer: Tenant, value: str, which: int) -> None:
    api = writer.api
    calls: list[tuple[str, str, dict[str, Any], str]] = [
        ("POST", "/posts", {"json": {"text": "x", "platforms": ["x"], "scheduled_at": value}}, ""),
        ("PATCH", "/posts/post_missing", {"json": {"scheduled_at": value}}, ""),
        ("POST", "/scheduled-events", {"json": {"title": "t", "starts_at": value}}, ""),
        ("GET", "/posts", {"params": {"created_from": value}}, "created_from"),
        ("GET", "/posts", {"params": {"scheduled_to": value}}, "scheduled_to"),
        ("GET", "/analytics/unified", {"params": {"from": value}}, "from"),
        ("GET", "/analytics/unified", {"params": {"to": value}}, "to"),
        ("GET", "/scheduled-events", {"params": {"from": value}}, "from"),
        ("GET", "/scheduled-events", {"params": {"to": value}}, "to"),
    ]
    method, path, kwargs, field = calls[which]
    error = refused(api.request(method, path, **kwargs), field or None)
    assert error["details"][0]["issue"] == "out_of_range"


# -- 7. idempotency keys are scoped to the workspace -------------------------------------------


def test_an_idempotency_key_reused_in_another_workspace_is_a_new_request(
    server: LiveServer, tenant: Tenant
) -> None:
    def second_workspace(cur: Any) -> str:
        ws = ws_repo.create_workspace(cur, tenant.organization_id, "Second workspace")
        ws_repo.insert_account(cur, ws, "linkedin", "li_b", "LinkedIn B", "ext-li-b")
        return ws

    ws_a, ws_b = tenant.workspace_id, server.store.run(second_workspace)
    both = tenant.key_with(server, workspace_ids=[ws_a, ws_b])
    key = str(uuid.uuid4())
    body = {"text": "Same words, two workspaces", "platforms": ["linkedin"]}
    in_a = both.post("/posts", json=body, idempotency_key=key, headers={"X-Workspace-Id": ws_a})
    in_b = both.post("/posts", json=body, idempotency_key=key, headers={"X-Workspace-Id": ws_b})
    post_a, post_b = both.ok(in_a, 201), both.ok(in_b, 201)
    assert "Idempotent-Replayed" not in in_b.headers
    assert (post_a["workspace_id"], post_b["workspace_id"]) == (ws_a, ws_b)
    again = both.post("/posts", json=body, idempotency_key=key, headers={"X-Workspace-Id": ws_b})
    assert again.headers["Idempotent-Replayed"] == "true"
    assert again.json()["data"]["id"] == post_b["id"]  # the stored answer, its request id too
    # The same through the generic claim (every other write).
    event = {"title": "Launch", "starts_at": future()}
    first = both.post(
        "/scheduled-events", json=event, idempotency_key=key, headers={"X-Workspace-Id": ws_a}
    )
    second = both.post(
        "/scheduled-events", json=event, idempotency_key=key, headers={"X-Workspace-Id": ws_b}
    )
    assert both.ok(first, 201)["id"] != both.ok(second, 201)["id"]
    assert "Idempotent-Replayed" not in second.headers


# -- 9. text the API takes must not break the workers ------------------------------------------


def test_nul_is_refused_at_the_api(tenant: Tenant) -> None:
    refused(tenant.api.post("/posts", json={"text": "a\x00b", "platforms": ["x"]}), "text")
    refused(tenant.api.get("/posts", params={"tag": "a\x00b"}), "tag")


class _Inbox:
    """A platform (X) whose inbox for ``account`` is the test's, everything received at
    ``received``."""

    def __init__(self, account: str, received: datetime) -> None:
        self.platform = "x"
        self.account = account
        self.received = received

    def sync(self, server: LiveServer) -> inbox_sync.SyncReport:
        """One inbox sync of every account through this platform, as the workers open the
        store: one of their own, beside the API's."""
        platform = cast(Publisher, self)
        remote = server.settings.open_store()
        try:
            return inbox_sync.sync_inbox(
                remote, lambda _: platform, lambda _p, _e: None, drafts.drafter_for(None)
            )
        finally:
            remote.close()


class _Platform(_Inbox):
    """A platform whose inbox for ``account`` holds broken text, and fine text elsewhere."""

    def list_conversations(self, ref: AccountRef, since: datetime | None) -> list[Conversation]:
        def conv(kind: str, body: str) -> Conversation:
            return Conversation(
                platform=ref.platform,
                external_id=f"{ref.account_id}-{kind}",
                kind="comment",
                author_handle="someone",
                author_name="Some\x00one",
                text=body,
                message_external_id=f"{ref.account_id}-{kind}-msg",
                received_at=self.received,
            )

        if ref.account_id == self.account:
            return [conv("surrogate", "broken \ud83d text"), conv("nul", "nul \x00 here")]
        return [conv("fine", "all good")]


def test_inbox_sync_survives_broken_text_from_a_platform(proxied: LiveServer) -> None:
    tenant = new_tenant(proxied)
    accounts = sorted(tenant.accounts.values())  # the order sync reads them in
    report = _Platform(accounts[0], datetime.now(UTC).replace(microsecond=0)).sync(proxied)
    assert report.errors == []
    texts = {}
    for item in tenant.api.list_all("/inbox/items"):
        detail = tenant.api.ok(tenant.api.get(f"/inbox/items/{item['id']}"))
        texts[item["external_id"]] = [m["text"] for m in detail["messages"]]
    assert texts[f"{accounts[0]}-surrogate"] == ["broken \ufffd text"]
    assert texts[f"{accounts[0]}-nul"] == ["nul \ufffd here"]
    for account in accounts[1:]:
        assert texts[f"{account}-fine"] == ["all good"]


# -- 10. contract nits -------------------------------------------------------------------------


def test_405_names_every_method_of_the_path(tenant: Tenant) -> None:
    for method, path, allowed in [
        ("DELETE", "/posts", {"GET", "POST"}),
        ("PUT", "/posts/post_x", {"GET", "PATCH"}),
        ("DELETE", "/queues/q_x/slots", {"GET", "PUT"}),
    ]:
        response = tenant.api.request(method, path)
        assert_error(response, 405, "METHOD_NOT_ALLOWED")
        assert {m.strip() for m in response.headers["Allow"].split(",")} == allowed


def test_openapi_declares_the_idempotency_key_and_what_refuses_null(server: LiveServer) -> None:
    document = httpx.get(f"{server.base_url}{BASE_PATH}/openapi.json").json()
    writes = 0
    for path, operations in document["paths"].items():
        for method, operation in operations.items():
            if method.upper() not in {"POST", "PUT", "PATCH", "DELETE"}:
                continue
            header = [p for p in operation["parameters"] if p["name"] == "Idempotency-Key"]
            assert len(header) == 1
            # The sessions alone take none (docs/api.md, "Sessions"): declared, not required.
            assert header[0]["required"] is not path.startswith("/sessions"), path
            schema = header[0]["schema"]
            assert (schema["minLength"], schema["maxLength"]) == (1, 255)
            assert schema["pattern"] == r"^[\x21-\x7e][\x20-\x7e]{0,254}$"
            writes += 1
    assert writes > 20
    schemas = document["components"]["schemas"]

    def nullable(model: str, field: str) -> bool:
        return '"null"' in json.dumps(schemas[model]["properties"][field])

    for model, fields in {
        "PostUpdate": ["text", "platforms", "media_ids", "tags", "platform_options", "draft"],
        "ContentAutomationUpdate": [
            "name",
            "enabled",
            "source",
            "schedule",
            "target",
        ],
        "QueueUpdate": ["name", "timezone", "slots", "destinations"],
        "PresetUpdate": ["name", "destinations"],
    }.items():
        assert not [f for f in fields if nullable(model, f)], model
    assert nullable("PostUpdate", "scheduled_at")  # documented: null publishes now


def test_no_operation_lists_a_parameter_twice(server: LiveServer) -> None:
    """A parameter is a (name, in) pair: an operation declaring one twice is not valid OpenAPI.

    The Idempotency-Key header is added to every write in one place (api/app.py); a route or a
    router that declared it as well would list it twice.
    """
    document = httpx.get(f"{server.base_url}{BASE_PATH}/openapi.json").json()
    twice: list[tuple[str, str, str, str]] = []
    operations = 0
    for path, methods in document["paths"].items():
        for method, operation in methods.items():
            operations += 1
            seen: set[tuple[str, str]] = set()
            for parameter in operation.get("parameters", []):
                key = (parameter["name"], parameter["in"])
                if key in seen:
                    twice.append((method, path, *key))
                seen.add(key)
    assert operations > 60
    assert twice == []


def test_a_null_the_document_does_not_offer_is_a_400_naming_the_field(tenant: Tenant) -> None:
    api = tenant.api
    post = api.ok(api.post("/posts", json={"text": "x", "platforms": ["x"], "draft": True}), 201)
    for field in ("text", "tags", "platform_options"):
        refused(api.patch(f"/posts/{post['id']}", json={field: None}), field)
    api.ok(api.patch(f"/posts/{post['id']}", json={"scheduled_at": None}))


# -- 11. stored content has a bound (issue 50, point 5) ----------------------------------------

# A control character is the JSON's worst case: six bytes (\u0001) for one character.
WORST = "\x01"
# The most an inbox list item can take as JSON (docs/api/inbox.md): a page of 100, 100 times it.
INBOX_ITEM_BYTES = 13_400


def _options(size: int) -> dict[str, Any]:
    """Options that take exactly ``size`` bytes as compact JSON."""
    return {"x": {"note": "a" * (size - len('{"x":{"note":""}}'))}}


def test_platform_options_take_at_most_16_kib(tenant: Tenant) -> None:
    """Options over 16 KiB as JSON are a 400 naming the field, on posts and presets alike."""
    api = tenant.api
    body = {"text": "bounded", "platforms": ["x"], "draft": True}
    post = api.ok(api.post("/posts", json={**body, "platform_options": _options(16_384)}), 201)
    assert len(json.dumps(post["platform_options"], separators=(",", ":"))) == 16_384
    error = refused(api.post("/posts", json={**body, "platform_options": _options(16_385)}))
    assert [(d["field"], d["issue"]) for d in error["details"]] == [
        ("platform_options", "too_large")
    ]
    huge = {"x": {"note": "a" * 900_000}}  # ~900 KB a post was taken before
    refused(api.post("/posts", json={**body, "platform_options": huge}), "platform_options")
    patch = {"platform_options": _options(16_385)}
    refused(api.patch(f"/posts/{post['id']}", json=patch), "platform_options")
    preset = {
        "name": "big",
        "destinations": [{"account_id": tenant.accounts["x"], "options": {"note": "a" * 16_384}}],
    }
    refused(api.post("/destination-presets", json=preset), "destinations.0.options")
    # Each part within its bound, their merge over it: what is stored is the merge.
    half = {"account_id": tenant.accounts["x"], "options": {"preset_note": "b" * 10_000}}
    made = api.ok(
        api.post("/destination-presets", json={"name": "half", "destinations": [half]}), 201
    )
    merged = {**body, "platforms": [{"preset_id": made["id"]}]}
    refused(
        api.post("/posts", json={**merged, "platform_options": _options(10_000)}),
        "platform_options",
    )
    api.ok(api.post("/posts", json={**merged, "platform_options": _options(1_000)}), 201)


class _Verbose(_Inbox):
    """A platform whose DMs to ``account`` are over every bound: text, names and an id."""

    def list_conversations(self, ref: AccountRef, since: datetime | None) -> list[Conversation]:
        if ref.account_id != self.account:
            return []

        def dm(external_id: str) -> Conversation:
            return Conversation(
                platform=ref.platform,
                external_id=external_id,
                kind="dm",
                author_handle=WORST * 1_000,
                author_name=WORST * 1_000,
                text=WORST * 200_008,
                message_external_id=f"{external_id[:8]}-msg",
                received_at=self.received,
            )

        return [dm(WORST * 256), dm("t" * 257)]


def test_a_huge_dm_is_kept_cut_and_an_inbox_page_stays_bounded(proxied: LiveServer) -> None:
    """A 200,008-character DM is kept cut to 10,000 characters; its list item is bounded."""
    tenant = new_tenant(proxied)
    account = tenant.accounts["x"]
    report = _Verbose(account, datetime.now(UTC).replace(microsecond=0)).sync(proxied)
    # An id cannot be cut: the conversation with one over 256 characters is skipped.
    assert report.errors == [f"{account}: ValueError: external_id is over 256 characters"]
    (item,) = tenant.api.list_all("/inbox/items")
    cut = " [… cut by Murmur at 10,000 characters]"
    (message,) = tenant.api.ok(tenant.api.get(f"/inbox/items/{item['id']}"))["messages"]
    assert message["text"] == WORST * (10_000 - len(cut)) + cut
    assert item["preview"] == WORST * 279 + "…"
    assert item["author_handle"] == item["author_name"] == WORST * 199 + "…"
    # The rest of an item at its bound too, then the page's bytes as sent.
    update = {"tags": [f"{n:02}{WORST * 48}" for n in range(20)], "assignee": WORST * 200}
    tenant.api.ok(tenant.api.patch(f"/inbox/items/{item['id']}", json=update))
    page = tenant.api.get("/inbox/items", params={"limit": 100})
    assert len(page.content) <= INBOX_ITEM_BYTES + 400  # one item and the envelope
