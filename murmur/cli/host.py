"""The process `serve` and `up` run: the API in a thread, the main thread on signals and children.

Imported by those commands' bodies only: it needs uvicorn, the API and the store.
"""

from __future__ import annotations

import socket
import sys
import threading
from collections.abc import Callable
from typing import TYPE_CHECKING

from murmur.cli import serving
from murmur.cli.common import say
from murmur.supervise import StopSignals, Supervisor

if TYPE_CHECKING:
    from core.settings import Settings
    from warehouse.store import Store

# How long the API may take to finish its requests in flight once told to stop, then to close
# the store.
API_GRACE_SECONDS = 5.0
API_STOP_SECONDS = 60.0


def murmur_argv() -> list[str]:
    """The command line that starts another ``murmur`` with this interpreter."""
    return [sys.executable, "-m", "murmur"]


def run(
    settings: Settings,
    supervisor: Supervisor | None,
    after_api: Callable[[Watch], int],
    before_api: Callable[[], None] | None = None,
    *,
    with_store: Callable[[Store], None] | None = None,
    shared_port: bool = False,
) -> int:
    """Serve the API and ``supervisor``'s children until told to stop; the exit status.

    ``with_store`` runs first, once the store is open and the API's port bound, before
    anything starts.
    """
    # SIGTERM, SIGINT and SIGHUP stop every child (and what it started), then the API, then
    # its store: status 0. A child that keeps dying or an API that stops on its own stops
    # everything as well: status 1.
    with StopSignals() as signals:
        try:
            # The port first: one that is taken is refused before this process pays for the
            # API's and the store's imports (a second `serve` on it cost ~1 CPU-s for nothing).
            sock = listen(settings.host, settings.port, shared=shared_port)
        except OSError as exc:  # the port taken by another program (or another Murmur)
            _say_port_in_use(settings, exc)
            return 1
        from warehouse.errors import StoreUnavailableError

        try:
            api = Api(settings, sock)
        except StoreUnavailableError as exc:
            say(
                f"[bold red]Cannot open the store:[/] {exc}",
                "serve.store_unavailable",
                stderr=True,
                level="error",
            )
            return 1
        except OSError as exc:
            _say_port_in_use(settings, exc)
            return 1
        watch = Watch(signals, supervisor, api)
        code = 1  # until proven otherwise: an exception below still stops everything
        try:
            if with_store is not None:
                with_store(api.store)
            if before_api is not None and not watch.stopping:
                before_api()
            if watch.stopping or not api.start(signals):
                code = 0 if watch.stopping else 1
            else:
                code = after_api(watch)
                if code == 0 and not watch.stopping:
                    code = watch.until(lambda: False)
        finally:
            code = stop(signals, supervisor, api, code)
    return code


def _say_port_in_use(settings: Settings, exc: OSError) -> None:
    say(
        f"[bold red]Refused:[/] {settings.host}:{settings.port} is in use ({exc});"
        " stop what serves it first, or pass another --port.",
        "serve.port_in_use",
        stderr=True,
        level="error",
    )


class Api:
    """The API served by uvicorn in a thread: the main thread is left to signals and children."""

    def __init__(self, settings: Settings, sock: socket.socket) -> None:
        # ``sock``: the API's port, bound before anything else starts (see ``run``). The
        # store is opened here rather than in the app's startup, so that one that cannot be
        # opened (a database server down, a bad URL) is one line, not uvicorn's traceback.
        self.socket = sock
        # Where it listens, for the commands that print a link to it (murmur/cli/serving.py).
        self.serving = serving.record(
            settings.data_dir, settings.host, self.socket.getsockname()[1]
        )
        try:
            import uvicorn

            from api.app import create_app
            from api.server import server_options

            self.store = settings.open_store()
        except BaseException:
            self._unbind()
            raise
        # In a thread uvicorn installs no signal handlers (it may not); StopSignals does.
        self.server = uvicorn.Server(
            uvicorn.Config(
                create_app(settings, store=self.store),
                timeout_graceful_shutdown=int(API_GRACE_SECONDS),
                **server_options(),
            )
        )
        self.thread = threading.Thread(
            target=self.server.run, kwargs={"sockets": [self.socket]}, name="api", daemon=True
        )

    def start(self, signals: StopSignals) -> bool:
        """Start serving; False when it could not (the reason is logged) or a stop came first."""
        self.thread.start()
        while not self.server.started:
            if not self.thread.is_alive() or signals.wait(0.05):
                return False
        return True

    @property
    def alive(self) -> bool:
        return self.thread.is_alive()

    def stop(self) -> bool:
        """Finish requests in flight and the app's shutdown, then close the store."""
        if self.thread.is_alive():
            self.server.should_exit = True
            self.thread.join(API_STOP_SECONDS)
        if self.thread.is_alive():
            return False
        self.store.close()
        self._unbind()
        return True

    def _unbind(self) -> None:
        if self.serving is not None:
            self.serving.close()
        self.socket.close()


def listen(host: str, port: int, *, shared: bool) -> socket.socket:
    """The API's listening socket; ``shared``: beside other Murmur API processes (replicas)."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    try:
        # SO_REUSEADDR: a restart is not refused for its predecessor's TIME_WAIT connections;
        # a port something else listens on still is, unless every listener shares it.
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        if shared:
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEPORT, 1)
        sock.bind((host, port))
        sock.listen(2048)
        sock.set_inheritable(False)
    except BaseException:
        sock.close()
        raise
    return sock


class Watch:
    """The main loop: wait for a condition while watching signals, children and the API."""

    def __init__(self, signals: StopSignals, supervisor: Supervisor | None, api: Api) -> None:
        self.signals, self.supervisor, self.api = signals, supervisor, api

    @property
    def stopping(self) -> bool:
        return self.signals.stopped

    def until(self, done: Callable[[], bool]) -> int:
        """0 once ``done()`` or a stop signal; 1 when a child gave up or the API stopped."""
        while not self.signals.stopped:
            if self.supervisor is not None and self.supervisor.check() is not None:
                return 1
            if not self.api.alive:
                say(
                    "[bold red]The API stopped on its own;[/] stopping everything.",
                    "serve.api_stopped",
                    stderr=True,
                    level="error",
                )
                return 1
            if done():
                return 0
            self.signals.wait(0.2)
        return 0


def stop(signals: StopSignals, supervisor: Supervisor | None, api: Api, code: int) -> int:
    """Stop the children first (they use the store), then the API; the exit status."""
    if signals.name:
        say(f"{signals.name} received: stopping.", "serve.stopping", stderr=True)
    if supervisor is not None:
        supervisor.stop()
    if not api.stop():
        say(
            f"[bold red]The API did not stop within {API_STOP_SECONDS:g} s.[/]",
            "serve.api_stuck",
            stderr=True,
            level="error",
        )
        return code or 1
    return code
