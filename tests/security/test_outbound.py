"""Outbound calls to user-given URLs (webhooks, feeds), checked at validation and when called.

Every live target here is a loopback listener, reached through names and notations the guard
must refuse. Link-local, private and public addresses appear only as strings that validation
must refuse; nothing here ever connects to them.
"""

from __future__ import annotations

import json
import socket
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import datetime
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import httpx
import pytest

from core.settings import Settings
from tests.engagement.conftest import wait_for
from tests.support import LiveServer, Tenant, assert_error, free_port, serving
from warehouse.store import Store
from workers.engagement import content_automations
from workers.engagement.runner import engagement_for, run_engagement

# (URL, the issue validation must answer); the old check let every one of these through.
REFUSED: list[tuple[str, str]] = [
    ("http://localhost/", "forbidden_host"),
    ("http://LOCALHOST./hook", "forbidden_host"),
    ("http://api.localhost:8080/", "forbidden_host"),
    ("http://127.0.0.1/", "forbidden_host"),
    ("http://127.1/", "forbidden_host"),
    ("http://2130706433/", "forbidden_host"),
    ("http://0x7f000001/", "forbidden_host"),
    ("http://0x7f.1/", "forbidden_host"),
    ("http://017700000001/", "forbidden_host"),
    ("http://[::1]/", "forbidden_host"),
    ("http://[0:0:0:0:0:0:0:1]:8080/", "forbidden_host"),
    ("http://[::ffff:127.0.0.1]/", "forbidden_host"),
    ("http://[::ffff:7f00:1]/", "forbidden_host"),
    ("http://0.0.0.0/", "forbidden_host"),
    ("http://0/", "forbidden_host"),
    ("http://[::]/", "forbidden_host"),
    ("http://169.254.169.254/latest/meta-data/", "forbidden_host"),
    ("http://[fe80::1]/", "forbidden_host"),
    ("http://10.0.0.1/", "forbidden_host"),
    ("http://172.16.0.1/", "forbidden_host"),
    ("http://192.168.1.1/", "forbidden_host"),
    ("http://100.64.0.1/", "forbidden_host"),
    ("http://[fc00::1]/", "forbidden_host"),
    ("http://[fd12:3456::1]/", "forbidden_host"),
    ("http://224.0.0.1/", "forbidden_host"),
    ("http://[ff02::1]/", "forbidden_host"),
    ("http://240.0.0.1/", "forbidden_host"),
    ("http://255.255.255.255/", "forbidden_host"),
    ("http://[64:ff9b::a9fe:a9fe]/", "forbidden_host"),  # NAT64 of 169.254.169.254
    ("http://[2002:a9fe:a9fe::]/", "forbidden_host"),  # 6to4 of 169.254.169.254
    ("http://user:pw@example.com/", "invalid_url"),
    ("http://user@example.com/", "invalid_url"),
    ("http://example.com\\@127.0.0.1/", "invalid_url"),
    ("http://0177.0.0.1/", "invalid_url"),
    ("http://%6c%6fcalhost/", "invalid_url"),
    ("http://example.com:0/", "invalid_url"),
    ("http://example.com:99999/", "invalid_url"),
]


# -- helpers -----------------------------------------------------------------------------------


Routes = dict[str, tuple[int, dict[str, str], bytes]]  # path -> (status, headers, body)


@dataclass
class Listener:
    """A loopback HTTP server that records each request path and answers from ``routes``."""

    port: int = 0
    routes: Routes = field(default_factory=dict)
    paths: list[str] = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock)

    def seen(self) -> list[str]:
        with self.lock:
            return list(self.paths)


class _Server6(ThreadingHTTPServer):
    address_family = socket.AF_INET6


@contextmanager
def listening(
    routes: Routes | None = None,
    *,
    host: str = "127.0.0.1",
    port: int = 0,
    default: tuple[int, dict[str, str], bytes] = (204, {}, b""),
) -> Iterator[Listener]:
    """A :class:`Listener` on ``host`` (``::1`` for IPv6); other paths get ``default``."""
    made = Listener(routes=dict(routes or {}))

    class Handler(BaseHTTPRequestHandler):
        def _answer(self) -> None:
            self.rfile.read(int(self.headers.get("Content-Length", "0")))
            with made.lock:
                made.paths.append(self.path)
            status, headers, body = made.routes.get(self.path, default)
            self.send_response(status)
            for name, value in headers.items():
                self.send_header(name, value)
            self.end_headers()
            self.wfile.write(body)

        do_GET = do_POST = _answer

        def log_message(self, format: str, *args: Any) -> None:
            pass

    cls = _Server6 if ":" in host else ThreadingHTTPServer
    with serving(cls((host, port), Handler)) as server:
        made.port = server.server_address[1]
        yield made


@contextmanager
def admitted(server: LiveServer, *entries: str) -> Iterator[None]:
    """The API's outbound allow-list extended with ``entries`` for the block's duration."""
    before = server.settings.outbound_allow_hosts
    server.settings.outbound_allow_hosts = [*before, *entries]
    try:
        yield
    finally:
        server.settings.outbound_allow_hosts = before


@contextmanager
def engagement_running(server: LiveServer, **overrides: Any) -> Iterator[None]:
    """The engagement runner over the live store, one attempt per delivery."""
    # Platforms that refuse every token at once: the inbox loop, which has no simulator to
    # talk to here, then ends its round in milliseconds instead of retrying for half a minute.
    refusing = (401, {"Content-Type": "application/json", "Content-Length": "2"}, b"{}")
    with listening(default=refusing) as platforms, _runner(server, platforms.port, overrides):
        yield


@contextmanager
def _runner(server: LiveServer, platforms_port: int, overrides: dict[str, Any]) -> Iterator[None]:
    options: dict[str, Any] = {
        "platforms_url": f"http://127.0.0.1:{platforms_port}",
        "webhook_max_attempts": 1,
        "webhook_timeout_seconds": 5.0,
        **overrides,
    }
    stop = threading.Event()
    thread = threading.Thread(
        target=run_engagement,
        args=(server.settings.model_copy(update=options),),
        kwargs={"stop": stop, "poll_interval": 0.1},
        daemon=True,
    )
    thread.start()
    try:
        yield
    finally:
        stop.set()
        thread.join(timeout=30)


@pytest.fixture
def remote(server: LiveServer) -> Iterator[Store]:
    """The store as a runner opens it: by itself, beside the API's."""
    with server.settings.open_store() as store:
        yield store


def _refused(response: httpx.Response, field: str, issue: str) -> None:
    error = assert_error(response, 400, "VALIDATION_ERROR")
    assert [(d["field"], d["issue"]) for d in error["details"]] == [(field, issue)], error


def _hook(tenant: Tenant, url: str, *, enabled: bool = True) -> dict[str, Any]:
    body = {"url": url, "event_types": ["post.created"], "enabled": enabled}
    created: dict[str, Any] = tenant.api.ok(tenant.api.post("/webhooks", json=body), 201)
    return created


def _feed_rule(url: str, *, enabled: bool = True) -> dict[str, Any]:
    return {
        "name": "Feed",
        "enabled": enabled,
        "source": {"type": "feed", "url": url},
        "schedule": {"cron": "0 8 * * *", "timezone": "UTC"},
        "target": {"platforms": ["x"]},
    }


def _rss(*titles: str, padding: int = 0) -> bytes:
    items = "".join(f"<item><guid>{t}</guid><title>{t}</title></item>" for t in titles)
    return f"<rss><channel><!--{'x' * padding}-->{items}</channel></rss>".encode()


def _deliveries(tenant: Tenant, endpoints: dict[str, dict[str, Any]]) -> dict[str, Any]:
    """Each endpoint's delivery by label once none is pending any more; until then, empty."""
    found = {}
    for label, endpoint in endpoints.items():
        log = tenant.api.list_all(f"/webhooks/{endpoint['id']}/deliveries")
        if len(log) != 1 or log[0]["status"] == "pending":
            return {}
        found[label] = log[0]
    return found


def _due(rule: dict[str, Any]) -> datetime:
    return datetime.fromisoformat(rule["next_run_at"].replace("Z", "+00:00")).replace(tzinfo=None)


# -- at validation -----------------------------------------------------------------------------


@pytest.mark.parametrize(("url", "issue"), REFUSED, ids=[u for u, _ in REFUSED])
def test_a_refused_url_is_a_validation_error_on_every_write(
    tenant: Tenant, url: str, issue: str
) -> None:
    api = tenant.api
    hook = {"url": url, "event_types": ["post.created"], "enabled": False}
    _refused(api.post("/webhooks", json=hook), "url", issue)
    endpoint = _hook(tenant, "https://example.com/hook", enabled=False)
    _refused(api.patch(f"/webhooks/{endpoint['id']}", json={"url": url}), "url", issue)
    _refused(
        api.post("/content-automations", json=_feed_rule(url, enabled=False)), "source.url", issue
    )
    rule = api.ok(
        api.post(
            "/content-automations",
            json=_feed_rule("https://example.com/feed.xml", enabled=False),
        ),
        201,
    )
    patch = {"source": {"type": "feed", "url": url}}
    _refused(api.patch(f"/content-automations/{rule['id']}", json=patch), "source.url", issue)
    assert api.ok(api.get(f"/webhooks/{endpoint['id']}"))["url"] == "https://example.com/hook"


def test_the_allow_list_admits_what_it_names_and_nothing_more(
    server: LiveServer, tenant: Tenant
) -> None:
    api = tenant.api
    admitted_urls = [
        "http://127.0.0.1:8600/hook",
        "http://2130706433:8600/hook",  # the same address and port, in another notation
        "http://10.1.2.3/hook",
        "http://hooks.intranet/hook",
    ]
    still_refused = ["http://127.0.0.1:8601/hook", "http://localhost:8600/", "http://192.168.0.1/"]
    with admitted(server, "127.0.0.1:8600", "10.0.0.0/8", "hooks.intranet"):
        for url in admitted_urls:
            assert _hook(tenant, url, enabled=False)["url"] == url
        for url in still_refused:
            body = {"url": url, "event_types": ["post.created"], "enabled": False}
            _refused(api.post("/webhooks", json=body), "url", "forbidden_host")
    body = {"url": admitted_urls[0], "event_types": ["post.created"], "enabled": False}
    _refused(api.post("/webhooks", json=body), "url", "forbidden_host")


# -- when called -------------------------------------------------------------------------------


def test_stored_webhooks_that_reach_loopback_are_refused_at_connect_time(
    server: LiveServer, tenant: Tenant
) -> None:
    with (
        listening() as allowed,
        listening() as target,
        listening(host="::1") as target6,
    ):
        urls = {
            "allowed": f"http://127.0.0.1:{allowed.port}/hook",
            "localhost": f"http://localhost:{target.port}/hook",
            "127.1": f"http://127.1:{target.port}/hook",
            "decimal": f"http://2130706433:{target.port}/hook",
            "hex": f"http://0x7f000001:{target.port}/hook",
            "ipv6": f"http://[::1]:{target6.port}/hook",
            "mapped": f"http://[::ffff:127.0.0.1]:{target.port}/hook",
        }
        # Stored while an operator admitted loopback; the runner's allow-list no longer does.
        with admitted(server, "localhost", "127.0.0.0/8", "::1", "::ffff:127.0.0.0/104"):
            endpoints = {label: _hook(tenant, url) for label, url in urls.items()}
        body = {"text": "Hello", "platforms": ["x"], "scheduled_at": "2099-01-01T09:00:00Z"}
        tenant.api.ok(tenant.api.post("/posts", json=body), 201)
        with engagement_running(server, outbound_allow_hosts=[f"127.0.0.1:{allowed.port}"]):
            done = wait_for(lambda: _deliveries(tenant, endpoints), what="every delivery tried")
        assert done["allowed"]["status"] == "succeeded"
        assert allowed.seen() == ["/hook"]
        for label in urls.keys() - {"allowed"}:
            delivery = done[label]
            assert delivery["status"] == "failed", (label, delivery)
            assert delivery["last_error"] == "refused by policy", (label, delivery)
            assert delivery["response_status"] is None, (label, delivery)
            assert delivery["response_ms"] is None, (label, delivery)
        assert target.seen() == []
        assert target6.seen() == []


def test_a_name_is_checked_after_dns_and_called_at_the_address_checked(
    server: LiveServer, tenant: Tenant, monkeypatch: pytest.MonkeyPatch
) -> None:
    name = "hooks.rebind.test"
    answers: list[str] = []
    real = socket.getaddrinfo

    def resolve(host: Any, port: Any, *args: Any, **kwargs: Any) -> Any:
        flags = kwargs.get("flags", args[3] if len(args) > 3 else 0)
        if host != name or flags & socket.AI_NUMERICHOST:
            return real(host, port, *args, **kwargs)
        # The name rebinds after its first answer: an admitted address, then loopback.
        answers.append("127.0.0.2" if not answers else "127.0.0.1")
        return real(answers[-1], port, *args, **kwargs)

    monkeypatch.setattr(socket, "getaddrinfo", resolve)
    with (
        listening() as inside,
        listening(host="127.0.0.2", port=inside.port) as admitted_host,
    ):
        # A name passes validation (no DNS there); it is judged by what it resolves to.
        endpoint = _hook(tenant, f"http://{name}:{inside.port}/hook")
        for text in ("One", "Two"):
            body = {"text": text, "platforms": ["x"], "scheduled_at": "2099-01-01T09:00:00Z"}
            tenant.api.ok(tenant.api.post("/posts", json=body), 201)

        def both_tried() -> list[dict[str, Any]]:
            log = tenant.api.list_all(f"/webhooks/{endpoint['id']}/deliveries")
            done = len(log) == 2 and all(d["status"] != "pending" for d in log)
            return log if done else []

        with engagement_running(server, outbound_allow_hosts=["127.0.0.2"]):
            log = wait_for(both_tried, what="both deliveries tried")
        # One lookup per delivery, and the connection went where that lookup was checked:
        # the first to 127.0.0.2, the second refused rather than sent to 127.0.0.1.
        assert answers == ["127.0.0.2", "127.0.0.1"]
        assert admitted_host.seen() == ["/hook"]
        assert inside.seen() == []
    outcomes = sorted((d["status"], d["last_error"]) for d in log)
    assert outcomes == [("failed", "refused by policy"), ("succeeded", None)]


def test_delivery_errors_say_only_connection_failed_or_timeout(
    server: LiveServer, tenant: Tenant
) -> None:
    closed = free_port()  # nothing listens there
    with socket.socket() as silent:  # accepts connections (backlog), never answers
        silent.bind(("127.0.0.1", 0))
        silent.listen(8)
        quiet = silent.getsockname()[1]
        allow = [f"127.0.0.1:{closed}", f"127.0.0.1:{quiet}"]
        with admitted(server, *allow):
            endpoints = {
                "closed": _hook(tenant, f"http://127.0.0.1:{closed}/hook"),
                "silent": _hook(tenant, f"http://127.0.0.1:{quiet}/hook"),
            }
        body = {"text": "Hello", "platforms": ["x"], "scheduled_at": "2099-01-01T09:00:00Z"}
        tenant.api.ok(tenant.api.post("/posts", json=body), 201)
        with engagement_running(server, outbound_allow_hosts=allow, webhook_timeout_seconds=0.5):
            done = wait_for(lambda: _deliveries(tenant, endpoints), what="every delivery tried")
    assert (done["closed"]["last_error"], done["silent"]["last_error"]) == (
        "connection failed",
        "timeout",
    )
    for delivery in done.values():
        assert delivery["response_status"] is None
        assert delivery["response_ms"] is None  # the latency would tell the two apart


@pytest.mark.parametrize("host", ["127.1", "localhost", "2130706433", "[::ffff:127.0.0.1]"])
def test_a_feed_redirect_to_a_refused_notation_is_not_followed(
    server: LiveServer, tenant: Tenant, remote: Store, host: str
) -> None:
    with listening({"/internal.xml": (200, {}, _rss("Internal page"))}) as internal:
        location = f"http://{host}:{internal.port}/internal.xml"
        with listening(
            {"/feed.xml": (302, {"Location": location, "Content-Length": "0"}, b"")}
        ) as feed:
            allow = [f"127.0.0.1:{feed.port}"]
            with admitted(server, *allow):
                url = f"http://127.0.0.1:{feed.port}/feed.xml"
                rule = tenant.api.ok(
                    tenant.api.post("/content-automations", json=_feed_rule(url)), 201
                )
            settings = Settings(data_dir=server.settings.data_dir, outbound_allow_hosts=allow)
            engagement = engagement_for(settings, remote)
            try:
                report = content_automations.run_due(
                    remote, engagement.http, now=_due(rule), workspace_id=tenant.workspace_id
                )
            finally:
                engagement.http.close()
            assert feed.seen() == ["/feed.xml"]
        assert internal.seen() == []
    assert report.posts == []
    assert len(report.errors) == 1
    assert "refused by policy" in report.errors[0]
    assert tenant.api.list_all("/posts") == []


def test_a_feed_follows_allowed_redirects_and_stops_at_the_size_cap(
    server: LiveServer, tenant: Tenant, remote: Store
) -> None:
    routes: Routes = {
        "/old.xml": (301, {"Location": "/new.xml", "Content-Length": "0"}, b""),
        "/new.xml": (200, {}, _rss("Moved post")),
        # No Content-Length: the cap must hold while streaming, not only on the header.
        "/big.xml": (200, {}, _rss("Huge post", padding=3 * 1024 * 1024)),
    }
    with listening(routes) as feed:
        allow = [f"127.0.0.1:{feed.port}"]
        with admitted(server, *allow):
            rules = [
                tenant.api.ok(
                    tenant.api.post(
                        "/content-automations",
                        json=_feed_rule(f"http://127.0.0.1:{feed.port}/{name}"),
                    ),
                    201,
                )
                for name in ("old.xml", "big.xml")
            ]
        settings = Settings(data_dir=server.settings.data_dir, outbound_allow_hosts=allow)
        engagement = engagement_for(settings, remote)
        try:
            report = content_automations.run_due(
                remote,
                engagement.http,
                now=max(_due(r) for r in rules),
                workspace_id=tenant.workspace_id,
            )
        finally:
            engagement.http.close()
    texts = [p["text"] for p in tenant.api.list_all("/posts")]
    assert texts == ["Moved post"]
    assert len(report.errors) == 1
    assert rules[1]["id"] in report.errors[0]
    assert "refused by policy" in report.errors[0]


# -- the setting -------------------------------------------------------------------------------


def test_the_allow_list_is_read_from_the_environment_and_bad_entries_are_refused(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from connectors.outbound import AllowEntry, Policy

    entries = ["hooks.intranet", "hooks.intranet:8443", "10.0.0.0/8", "[::1]:8600", "127.0.0.1"]
    monkeypatch.setenv("MURMUR_OUTBOUND_ALLOW_HOSTS", json.dumps(entries))
    assert Settings().outbound_allow_hosts == entries
    policy = Policy.from_allow_list(Settings().outbound_allow_hosts)
    assert policy.allow[1] == AllowEntry(name="hooks.intranet", port=8443)
    assert policy.allow[3].port == 8600
    for bad in ["http://x/", "host:port", "10.0.0.0/99", "[::1]:0", "a b"]:
        with pytest.raises(ValueError, match="allow-list entry"):
            Policy.from_allow_list([bad])
