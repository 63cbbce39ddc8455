"""The guard every call to a user-given URL goes through (webhook deliveries, feed fetches).

A URL is checked twice. When it is stored (:meth:`Policy.check_url`, no DNS): http(s)
only, no userinfo, a valid port, and a host that is neither a ``localhost`` name nor, in any
notation the OS resolver accepts (``127.1``, ``2130706433``, ``0x7f000001``, ``[::1]``,
``[::ffff:127.0.0.1]``), an address that is not global. When it is called
(:class:`GuardedTransport`): the same checks, then the host is resolved, every address it
resolves to is checked, and the connection goes to a checked address, so a DNS answer that
changes between the check and the connect (rebinding) is never used. Every redirect hop is a
new request through the same transport, and :class:`OutboundClient` follows at most
``max_redirects`` of them, reads at most ``max_bytes`` and gives up after ``timeout`` seconds.

The allow-list (``MURMUR_OUTBOUND_ALLOW_HOSTS``) admits intranet hosts by name
(``hooks.intranet``), name and port, address (``10.1.2.3``, ``[::1]:8600``) or network
(``10.0.0.0/8``). Errors form one hierarchy rooted at :class:`OutboundError`; each class has a
generic ``reason`` that is safe to show a tenant, while ``str(exc)`` has the detail for logs.
"""

from __future__ import annotations

import concurrent.futures
import functools
import ipaddress
import re
import socket
import time
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import ClassVar

import httpx

from core.errors import MurmurError

Address = ipaddress.IPv4Address | ipaddress.IPv6Address
Network = ipaddress.IPv4Network | ipaddress.IPv6Network

DEFAULT_PORTS = {"http": 80, "https": 443}
# A name may resolve to many addresses; a dead host costs one connect timeout per try.
MAX_ADDRESSES_TRIED = 4
# A host name as DNS spells it (IDNA names arrive as xn-- labels); anything else, such as
# a percent-encoded or zone-scoped host, is refused rather than interpreted.
_NAME = re.compile(r"^[a-z0-9_]([a-z0-9_.-]*[a-z0-9_])?\.?$")
_UNIQUE_LOCAL = ipaddress.IPv6Network("fc00::/7")
_NAT64 = ipaddress.IPv6Network("64:ff9b::/96")
# getaddrinfo has no timeout of its own; a small pool lets a call stop waiting for it.
_RESOLVER = concurrent.futures.ThreadPoolExecutor(max_workers=4, thread_name_prefix="outbound-dns")


class OutboundError(MurmurError):
    """Base of every refusal or failure of an outbound call."""

    reason: ClassVar[str] = "outbound call failed"


class Refused(OutboundError):
    """The call was not made, or not finished, because the policy forbids it."""

    reason: ClassVar[str] = "refused by policy"
    issue: ClassVar[str] = "refused"


class InvalidURL(Refused):
    """Not an absolute http(s) URL with a plain host and no userinfo."""

    issue: ClassVar[str] = "invalid_url"


class ForbiddenAddress(Refused):
    """The host is, or resolves to, an address that is not global and not allow-listed."""

    issue: ClassVar[str] = "forbidden_host"


class TooManyRedirects(Refused):
    """More redirects than the policy follows."""


class ResponseRefused(Refused):
    """A response the guard will not read: over the size cap, or compressed."""


class ConnectionFailed(OutboundError):
    """The host did not resolve, did not accept the connection, or broke the exchange."""

    reason: ClassVar[str] = "connection failed"


class Timeout(OutboundError):
    """The call did not finish in time."""

    reason: ClassVar[str] = "timeout"


def refusal(address: Address) -> str | None:
    """Why ``address`` may not be called ("a loopback address"…), or None if it is global."""
    if isinstance(address, ipaddress.IPv6Address):
        inner = _embedded_ipv4(address)
        if inner is not None and (why := refusal(inner)) is not None:
            return f"{why} (IPv4 {inner})"
        if address in _UNIQUE_LOCAL:
            return "a unique-local address"
        if address.is_site_local:
            return "a site-local address"
    for label, hit in (
        ("a loopback address", address.is_loopback),
        ("the unspecified address", address.is_unspecified),
        ("a link-local address", address.is_link_local),
        ("a multicast address", address.is_multicast),
        ("a reserved address", address.is_reserved),
        ("a private address", address.is_private),
        ("not a global address", not address.is_global),
    ):
        if hit:
            return label
    return None


def _embedded_ipv4(address: ipaddress.IPv6Address) -> ipaddress.IPv4Address | None:
    """The IPv4 address an IPv6 one reaches through (mapped, NAT64, 6to4, Teredo), if any."""
    if address.ipv4_mapped is not None:
        return address.ipv4_mapped
    if address in _NAT64:
        return ipaddress.IPv4Address(int(address) & 0xFFFFFFFF)
    if address.sixtofour is not None:
        return address.sixtofour
    if address.teredo is not None:
        return address.teredo[1]
    return None


def numeric_address(host: str) -> Address | None:
    """The address a host spells in any notation the OS accepts (``127.1``, ``0x7f000001``)."""
    try:
        infos = socket.getaddrinfo(host, None, type=socket.SOCK_STREAM, flags=socket.AI_NUMERICHOST)
    except (socket.gaierror, UnicodeError, ValueError):
        return None
    return ipaddress.ip_address(str(infos[0][4][0]).split("%", 1)[0])


@dataclass(frozen=True)
class AllowEntry:
    """One allow-list entry: a host name or a network, optionally limited to one port."""

    name: str | None = None
    network: Network | None = None
    port: int | None = None

    @classmethod
    def parse(cls, text: str) -> AllowEntry:
        """``host``, ``host:port``, ``10.1.2.3``, ``[::1]:8600`` or ``10.0.0.0/8``."""
        raw = text.strip().lower()
        port: int | None = None
        if raw.startswith("["):
            host, _, rest = raw[1:].partition("]")
            if rest:
                port = _port(rest.removeprefix(":"), text)
        elif raw.count(":") == 1:
            host, _, given = raw.partition(":")
            port = _port(given, text)
        else:
            host = raw
        if not host:
            raise ValueError(f"outbound allow-list entry {text!r} names no host")
        try:
            return cls(network=ipaddress.ip_network(host, strict=False), port=port)
        except ValueError:
            pass
        if not _NAME.match(host):
            raise ValueError(f"outbound allow-list entry {text!r} is not a host, address or CIDR")
        return cls(name=host.rstrip("."), port=port)

    def admits_name(self, host: str, port: int) -> bool:
        return self.name is not None and self.name == host and self.port in (None, port)

    def admits_address(self, address: Address, port: int) -> bool:
        return self.network is not None and address in self.network and self.port in (None, port)


def _port(text: str, entry: str) -> int:
    if not text.isdigit() or not 0 < int(text) < 65536:
        raise ValueError(f"outbound allow-list entry {entry!r} has a bad port")
    return int(text)


@dataclass(frozen=True)
class Target:
    """A checked URL: its scheme, its host as DNS spells it, and its port."""

    url: httpx.URL
    host: str
    port: int


@dataclass(frozen=True)
class Policy:
    """What may be called: global addresses, plus what the allow-list admits; and the bounds."""

    allow: tuple[AllowEntry, ...] = ()
    max_redirects: int = 5
    resolve_timeout: float = 5.0

    @classmethod
    def from_allow_list(cls, entries: Iterable[str]) -> Policy:
        """A policy from the settings' ``outbound_allow_hosts`` (ValueError on a bad entry)."""
        return cls(allow=tuple(AllowEntry.parse(e) for e in entries if e.strip()))

    def check_url(self, url: str | httpx.URL) -> Target:
        """Refuse, without DNS, what no resolution can make acceptable; else the target."""
        try:
            parsed = url if isinstance(url, httpx.URL) else httpx.URL(url)
        except httpx.InvalidURL as exc:
            raise InvalidURL(f"Give an absolute http(s) URL ({exc}).") from None
        if parsed.scheme not in DEFAULT_PORTS or not parsed.raw_host:
            raise InvalidURL("Give an absolute http(s) URL.")
        if parsed.userinfo:
            raise InvalidURL("Give the URL without a user name or password.")
        port = DEFAULT_PORTS[parsed.scheme] if parsed.port is None else parsed.port
        if not 0 < port < 65536:
            raise InvalidURL(f"Port {port} is not a TCP port.")
        host = parsed.raw_host.decode("ascii").lower()
        if ":" in host:
            address: Address | None = _ipv6_literal(host)
        elif _NAME.match(host):
            host = host.rstrip(".")
            address = numeric_address(host)
        else:
            raise InvalidURL("Give a plain host name or IP address.")
        target = Target(parsed, host, port)
        if self._admits_name(host, port):
            return target
        if address is not None:
            self._check_address(host, address, port)
        elif host == "localhost" or host.endswith(".localhost"):
            raise ForbiddenAddress(f"{host} is a loopback name: give a public host.")
        return target

    def resolve(self, target: Target, timeout: float) -> list[Address]:
        """The target's addresses, each checked; refuses them all if any one is refused."""
        future = _RESOLVER.submit(
            socket.getaddrinfo, target.host, target.port, type=socket.SOCK_STREAM
        )
        try:
            infos = future.result(timeout=timeout)
        except concurrent.futures.TimeoutError:
            raise Timeout(f"resolving {target.host} took over {timeout} s") from None
        except (OSError, UnicodeError) as exc:
            raise ConnectionFailed(f"cannot resolve {target.host}: {exc}") from None
        addresses = list(
            dict.fromkeys(ipaddress.ip_address(str(i[4][0]).split("%", 1)[0]) for i in infos)
        )
        if not addresses:
            raise ConnectionFailed(f"{target.host} resolves to no address")
        if not self._admits_name(target.host, target.port):
            for address in addresses:
                self._check_address(target.host, address, target.port)
        return addresses

    def _admits_name(self, host: str, port: int) -> bool:
        return any(entry.admits_name(host, port) for entry in self.allow)

    def _check_address(self, host: str, address: Address, port: int) -> None:
        why = refusal(address)
        if why is not None and not any(e.admits_address(address, port) for e in self.allow):
            shown = host if host == str(address) else f"{host} ({address})"
            raise ForbiddenAddress(f"{shown} is {why}: give a public host.")


def _ipv6_literal(host: str) -> Address:
    try:
        return ipaddress.IPv6Address(host)
    except ValueError:
        raise InvalidURL("Give a plain host name or IP address.") from None


@functools.lru_cache(maxsize=16)
def _cached_policy(entries: tuple[str, ...]) -> Policy:
    return Policy.from_allow_list(entries)


def policy_for(allow_hosts: Iterable[str]) -> Policy:
    """The policy for an allow-list, parsed once per distinct list."""
    return _cached_policy(tuple(allow_hosts))


# No allow-list: the default wherever no settings are at hand, so forgetting one is safe.
STRICT = Policy()


class GuardedTransport(httpx.BaseTransport):
    """Checks each request (so each redirect hop) and connects only to a checked address."""

    def __init__(self, policy: Policy, inner: httpx.BaseTransport | None = None) -> None:
        self.policy = policy
        # No keep-alive: a pooled connection is keyed by the pinned address, and reusing it
        # for another host name would skip that name's TLS certificate check.
        self._inner = inner or httpx.HTTPTransport(limits=httpx.Limits(max_keepalive_connections=0))

    def handle_request(self, request: httpx.Request) -> httpx.Response:
        """Send ``request`` to the first checked address of its host that accepts it."""
        target = self.policy.check_url(request.url)
        limits: Mapping[str, float | None] = request.extensions.get("timeout", {})
        timeout = min(self.policy.resolve_timeout, limits.get("connect") or float("inf"))
        addresses = self.policy.resolve(target, timeout)
        extensions = dict(request.extensions)
        if target.url.scheme == "https":
            extensions["sni_hostname"] = target.host  # the certificate is checked for the name
        failure: httpx.ConnectError | None = None
        for address in addresses[:MAX_ADDRESSES_TRIED]:
            pinned = httpx.Request(
                request.method,
                request.url.copy_with(host=str(address)),
                headers=request.headers,  # keeps Host: the name, not the address
                stream=request.stream,
                extensions=extensions,
            )
            try:
                return self._inner.handle_request(pinned)
            except httpx.ConnectError as exc:
                failure = exc
        assert failure is not None
        raise failure

    def close(self) -> None:
        self._inner.close()


@dataclass(frozen=True)
class Fetched:
    """An answer: its status, headers, the body read (empty unless asked) and the final URL."""

    status_code: int
    headers: httpx.Headers
    content: bytes
    url: str


class OutboundClient:
    """The one way to call a user-given URL: checked, pinned, bounded in size and time."""

    def __init__(self, policy: Policy, *, inner: httpx.BaseTransport | None = None) -> None:
        self.policy = policy
        # trust_env=False: no proxy or .netrc from the environment decides where calls go.
        self._http = httpx.Client(
            transport=GuardedTransport(policy, inner), trust_env=False, follow_redirects=False
        )

    def request(
        self,
        method: str,
        url: str,
        *,
        timeout: float,
        max_bytes: int = 0,
        content: bytes | None = None,
        headers: Mapping[str, str] | None = None,
        follow_redirects: bool = False,
    ) -> Fetched:
        """One call within ``timeout`` seconds, reading ``max_bytes`` at most (0: no body)."""
        deadline = time.monotonic() + timeout
        sent = {**(headers or {}), "Accept-Encoding": "identity"}
        try:
            request = self._http.build_request(
                method, url, content=content, headers=sent, timeout=timeout
            )
            for _hop in range(self.policy.max_redirects + 1):
                response = self._http.send(request, stream=True)
                try:
                    if not follow_redirects or response.next_request is None:
                        body = _read(response, max_bytes, deadline) if max_bytes else b""
                        return Fetched(
                            response.status_code, response.headers, body, str(request.url)
                        )
                    request = response.next_request
                    # The next hop gets what is left of the call's time, not a fresh budget.
                    request.extensions["timeout"] = httpx.Timeout(_left(deadline)).as_dict()
                finally:
                    response.close()
            raise TooManyRedirects(f"more than {self.policy.max_redirects} redirects")
        except OutboundError:
            raise
        except httpx.TimeoutException as exc:
            raise Timeout(f"{type(exc).__name__}: {exc}") from None
        except (httpx.UnsupportedProtocol, httpx.InvalidURL) as exc:
            raise InvalidURL(f"{type(exc).__name__}: {exc}") from None
        except httpx.HTTPError as exc:
            raise ConnectionFailed(f"{type(exc).__name__}: {exc}") from None

    def close(self) -> None:
        self._http.close()

    def __enter__(self) -> OutboundClient:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()


def _left(deadline: float) -> float:
    left = deadline - time.monotonic()
    if left <= 0:
        raise Timeout("the call's time ran out")
    return left


def _read(response: httpx.Response, max_bytes: int, deadline: float) -> bytes:
    """The raw body, stopped at ``max_bytes`` and at the deadline."""
    encoding = response.headers.get("Content-Encoding", "identity").strip().lower()
    if encoding not in {"", "identity"}:
        # The cap counts bytes on the wire; a compressed body could expand past it in memory.
        raise ResponseRefused(f"compressed response ({encoding}) although identity was asked")
    declared = response.headers.get("Content-Length", "")
    if declared.isdigit() and int(declared) > max_bytes:
        raise ResponseRefused(f"response of {declared} bytes is over the {max_bytes} byte cap")
    body = bytearray()
    for chunk in response.iter_raw():
        body += chunk
        if len(body) > max_bytes:
            raise ResponseRefused(f"response is over the {max_bytes} byte cap")
        _left(deadline)  # per-read timeouts alone let a server that drips bytes go on forever
    return bytes(body)
