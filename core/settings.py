"""The one settings class, read from MURMUR_* environment variables."""

from __future__ import annotations

import json
import os
import re
from functools import cached_property
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Literal
from urllib.parse import urlsplit

from pydantic import Field, IPvAnyNetwork, SecretStr, field_validator, model_validator
from pydantic_settings import BaseSettings, NoDecode, SettingsConfigDict

from warehouse.files import private_dir

# The store's modules are imported where the store is opened, not here: every process and
# every command reads the settings, and most commands never need SQLAlchemy, DuckDB or polars
# (tests/cli/test_startup.py).
if TYPE_CHECKING:
    from warehouse.analysts import Login
    from warehouse.lake import S3, Lake
    from warehouse.store import Lakehouse, Store

# Where the store lives besides the data directory: what another process (a pipeline step,
# a child of a test) needs of these settings to open the same store.
STORE_FIELDS = (
    "publishing_url",
    "lake_catalog",
    "lake_data",
    "s3_endpoint",
    "s3_key_id",
    "s3_secret",
    "s3_region",
    "s3_use_ssl",
)


_SIZE = re.compile(r"^\s*\d+(\.\d+)?\s*(B|KB|MB|GB|TB|KiB|MiB|GiB|TiB)\s*$", re.IGNORECASE)


def _default_pipeline_memory() -> str:
    """Half the machine's memory, at most 6 GiB: a build spills rather than crowd the API.

    The limit is DuckDB's buffer manager's; the process runs ~0.8 GiB above it (the full
    build over 100M snapshots: 8.8 GiB of RSS under 8 GiB), so 6 GiB keeps it under 8 GB.
    """
    try:
        total = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    except (ValueError, OSError):  # no such figure on this platform
        return "6GiB"
    return f"{max(min(total // 2, 6 * 1024**3) // 1024**2, 256)}MiB"


class Settings(BaseSettings):
    """Murmur's configuration; every field can be set as MURMUR_<NAME>."""

    model_config = SettingsConfigDict(env_prefix="MURMUR_", extra="ignore")

    data_dir: Path = Field(
        default=Path("data"), description="Where the store, media and keys live."
    )
    host: str = "127.0.0.1"
    port: int = 8000
    log_format: Literal["plain", "json"] = Field(
        default="plain",
        description="How the processes log: plain, one readable line per event that matters"
        " (people); json, one JSON object per event, every event (machines).",
    )
    access_log: bool = Field(
        default=False, description="Log a line per API request (in either log format)."
    )
    publishing_url: str | None = Field(
        default=None,
        description="SQLAlchemy URL of the publishing database (PostgreSQL at scale:"
        " postgresql+psycopg://…); default: SQLite <data_dir>/publishing.sqlite.",
    )
    lake_catalog: str | None = Field(
        default=None,
        description="The lake's DuckLake catalog, sqlite:PATH or postgres:DSN;"
        " default: sqlite:<data_dir>/lake.sqlite.",
    )
    lake_data: str | None = Field(
        default=None,
        description="Where the lake's Parquet files go: an absolute folder ending in /, or"
        " s3://bucket/prefix/; default: <data_dir>/lake/.",
    )
    s3_endpoint: str | None = Field(
        default=None, description="host:port of the S3-compatible store of an s3:// lake_data."
    )
    s3_key_id: str | None = Field(default=None, description="That store's access key id.")
    s3_secret: str | None = Field(default=None, description="That store's secret key.")
    s3_region: str = Field(default="us-east-1", description="That store's region.")
    s3_use_ssl: bool = Field(default=True, description="Whether to reach that store by HTTPS.")
    # The analysts' own credentials at scale, which `murmur attach` prints instead of the
    # service's (docs/security.md, "Analysts at scale"); the service never connects with them.
    analyst_role: str | None = Field(
        default=None,
        description="The analysts' read-only PostgreSQL role (`murmur analysts grant` makes it).",
    )
    analyst_password: SecretStr | None = Field(default=None, description="That role's password.")
    analyst_s3_key_id: str | None = Field(
        default=None,
        description="The analysts' read-only access key (s3:GetObject, s3:ListBucket) to the"
        " lake's bucket.",
    )
    analyst_s3_secret: SecretStr | None = Field(default=None, description="That key's secret.")
    simulator_port: int = Field(default=8600, description="Where `murmur up` runs the simulator.")
    platforms_url: str = Field(
        default="",
        description="Root URL of the platform APIs; unset: the bundled simulator on"
        " simulator_port.",
    )
    simulator_seed: int = 42
    dagster_port: int = Field(default=3000, description="Where `murmur up` runs Dagster's UI.")
    import_sensor_seconds: int = Field(
        default=60,
        ge=1,
        description="How often Dagster's import sensor looks for new imports (`murmur up`).",
    )
    read_rate_limit: int = Field(
        default=6000, description="Default GETs per key per rolling minute."
    )
    write_rate_limit: int = Field(default=1200, description="Default writes per key per minute.")
    unauthenticated_rate_limit: int = Field(
        default=600,
        ge=1,
        description="Requests a minute per client address without a valid key (429 past it).",
    )
    trusted_proxies: list[IPvAnyNetwork] = Field(
        default_factory=list,
        description="Addresses or CIDRs of reverse proxies whose X-Forwarded-For names the"
        " client; empty: the header is ignored. JSON in the environment. See docs/security.md.",
    )
    cors_origins: Annotated[list[str], NoDecode] = Field(
        default_factory=list,
        description="Origins (scheme://host[:port]) whose pages may call the API from a"
        " browser: comma-separated (JSON works too); none by default. See docs/api.md, CORS.",
    )
    request_threads: int = Field(default=40, description="Threads serving blocking store work.")
    pipeline_memory_limit: str = Field(
        default_factory=_default_pipeline_memory,
        description="DuckDB's memory limit in each pipeline process (e.g. 8GiB); past it a"
        " build spills to pipeline_temp_dir. Default: half the machine's memory, at most 6 GiB.",
    )
    pipeline_temp_dir: Path | None = Field(
        default=None, description="Where a pipeline's DuckDB spills; default DATA_DIR/tmp."
    )
    pipeline_executor: Literal["multiprocess", "celery"] = Field(
        default="multiprocess",
        description="Where a Dagster run's steps run: processes of the run's machine, or"
        " Celery workers on other machines (docs/operations.md, 'Murmur on several machines').",
    )
    celery_broker_url: str = Field(
        default="redis://127.0.0.1:6379/0",
        description="The celery executor's broker (and result backend): Redis or RabbitMQ.",
    )
    celery_backend_url: str | None = Field(
        default=None, description="Celery's result backend; default the broker (Redis)."
    )
    celery_visibility_timeout: int = Field(
        default=3600,
        ge=10,
        description="Seconds after which a step's task that no worker acknowledged (its worker"
        " died) is handed to another worker: longer than the longest step.",
    )
    lake_snapshot_keep_hours: float = Field(
        default=24 * 7,
        ge=0,
        description="How long the lake keeps its snapshots: analytics reads' `as_of` reaches"
        " this far back (older: 400), and the daily upkeep expires the older ones and deletes"
        " the files only they read. It must outlast the longest lake transaction"
        " (docs/operations.md).",
    )
    duckdb_threads: int | None = Field(
        default=None,
        ge=1,
        description="DuckDB threads per lake session, in every process; default one per core."
        " One is cheaper on small stores and busy machines (docs/operations.md).",
    )
    max_json_body_bytes: int = 1_048_576
    media_quota_bytes_per_workspace: int = Field(
        default=5 * 1024**3,
        ge=0,
        description="Bytes of uploaded media a workspace may hold (413 `quota_exceeded` past it).",
    )
    idempotency_ttl_seconds: int = 24 * 3600
    idempotency_lease_seconds: int = 60
    drafter_base_url: str | None = Field(
        default=None,
        description="An OpenAI-compatible API (POST {base}/v1/chat/completions) for reply drafts;"
        " unset: the offline drafter.",
    )
    drafter_api_key: str | None = Field(default=None, description="Bearer key for that API.")
    drafter_model: str = Field(default="gpt-4o-mini", description="The model drafts ask for.")
    webhook_max_attempts: int = Field(default=8, description="Delivery attempts before failing.")
    webhook_retry_base_seconds: float = Field(
        default=30.0, description="First retry delay; each next one doubles (30 s … ~64 min)."
    )
    webhook_timeout_seconds: float = Field(default=10.0, description="Per delivery attempt.")
    outbound_allow_hosts: list[str] = Field(
        default_factory=list,
        description="Hosts, host:port, addresses or CIDRs that webhooks and feeds may reach"
        " although not global (intranet, tests); JSON in the environment. See docs/security.md.",
    )

    @model_validator(mode="after")
    def _platforms_follow_the_simulator(self) -> Settings:
        """Moving the simulator's port moves where the pipeline reads, unless told otherwise."""
        if not self.platforms_url:
            self.platforms_url = f"http://127.0.0.1:{self.simulator_port}"
        return self

    @field_validator("outbound_allow_hosts")
    @classmethod
    def _allow_entries_parse(cls, entries: list[str]) -> list[str]:
        """A bad entry stops the process at start, not the first webhook write with a 500."""
        if not entries:
            return entries  # the usual case, without importing httpx for the parser
        from connectors.outbound import AllowEntry

        for entry in entries:
            AllowEntry.parse(entry)
        return entries

    @field_validator("cors_origins", mode="before")
    @classmethod
    def _origins_from_text(cls, value: object) -> object:
        """``a,b`` as the environment gives it, or a JSON list."""
        if not isinstance(value, str):
            return value
        if value.lstrip().startswith("["):
            return json.loads(value)
        return [part.strip() for part in value.split(",") if part.strip()]

    @field_validator("cors_origins")
    @classmethod
    def _origins_as_browsers_send_them(cls, origins: list[str]) -> list[str]:
        """Each entry as a browser's ``Origin`` header spells it; anything else stops the start.

        A browser sends the scheme and host in lower case and no default port, and
        ``CORSMiddleware`` compares exact strings: ``https://Dash.example.com:443/`` would
        never match, so it is stored as ``https://dash.example.com``. ``*`` and ``null``
        (sandboxed frames, files) are refused: each origin is named.
        """
        named = []
        for origin in origins:
            parts = urlsplit(origin.strip())
            try:
                port = parts.port
            except ValueError:
                port = -1
            if (
                parts.scheme.lower() not in {"http", "https"}
                or not parts.hostname
                or parts.username is not None
                or port == -1
                or parts.path not in {"", "/"}
                or parts.query
                or parts.fragment
            ):
                raise ValueError(
                    f"{origin!r} is not an origin such as https://dashboard.example.com"
                    " (a scheme, a host and maybe a port; no path, no wildcard)"
                )
            scheme = parts.scheme.lower()
            host = parts.hostname if ":" not in parts.hostname else f"[{parts.hostname}]"
            default = 443 if scheme == "https" else 80
            named.append(f"{scheme}://{host}" + (f":{port}" if port not in {None, default} else ""))
        return list(dict.fromkeys(named))

    publishing_concurrency: int = Field(
        default=16, ge=1, description="Platform calls one publishing worker makes at once."
    )
    publishing_poll_interval_seconds: float = Field(
        default=0.5, gt=0, description="How often an idle publishing worker looks for due posts."
    )
    publishing_lease_seconds: float = Field(
        default=60.0,
        gt=0,
        description="How long a claim holds a destination (well above the HTTP timeout).",
    )
    publishing_http_timeout_seconds: float = Field(
        default=15.0, gt=0, description="How long a publishing call to a platform may take."
    )
    publishing_max_attempts: int = Field(
        default=5, ge=1, description="Attempts per destination before it fails for good."
    )
    worker_stop_seconds: float = Field(
        default=30.0,
        gt=0,
        description="How long a stopping `murmur worker` lets its steps in flight finish before"
        " it exits without them (their work is leased: another worker takes it up).",
    )
    inbox_sync_interval_seconds: float = Field(
        default=30.0, description="How often the engagement runner reads each account's inbox."
    )
    probe_timeout_seconds: float = Field(
        default=2.0,
        gt=0,
        description="How long /readyz and /metrics wait for the store (docs/operations.md).",
    )
    metrics_store_max_age_seconds: float = Field(
        default=1.0,
        ge=0,
        description="How long /metrics may answer the store's figures it read before, while"
        " no write on this machine moved the change token (docs/operations.md).",
    )

    @cached_property
    def old_store_path(self) -> Path:
        """The DuckDB store of Murmur before ADR 0002, which ``murmur migrate`` moves."""
        return self.data_dir / "murmur.duckdb"

    @field_validator("pipeline_memory_limit")
    @classmethod
    def _a_size(cls, value: str) -> str:
        if not _SIZE.match(value):
            raise ValueError("a size such as 8GiB or 512MB")
        return value.strip()

    @cached_property
    def spill_dir(self) -> Path:
        """Where a pipeline's DuckDB writes what does not fit in its memory limit."""
        return self.pipeline_temp_dir or self.data_dir / "tmp"

    @cached_property
    def media_dir(self) -> Path:
        return self.data_dir / "media"

    @cached_property
    def secret_file(self) -> Path:
        return self.data_dir / ".secret"

    @cached_property
    def changes_file(self) -> Path:
        """The change token every committed write replaces (warehouse/changes.py)."""
        return self.data_dir / "store.changes"

    @property
    def pub_url(self) -> str:
        """The publishing database's SQLAlchemy URL."""
        from warehouse.pubdb.engine import sqlite_url

        return self.publishing_url or sqlite_url(self.data_dir.resolve() / "publishing.sqlite")

    @property
    def lake(self) -> Lake:
        """Where the lake lives, as settings say (the data directory's by default)."""
        from warehouse.lake import S3, Lake

        embedded = Lake.under(self.data_dir)
        s3 = None
        if self.s3_endpoint is not None:
            s3 = S3(
                endpoint=self.s3_endpoint,
                key_id=self.s3_key_id or "",
                secret=self.s3_secret or "",
                region=self.s3_region,
                use_ssl=self.s3_use_ssl,
            )
        if self.lake_catalog is None and self.lake_data is None and s3 is None:
            return embedded
        return Lake(
            catalog=self.lake_catalog or embedded.catalog,
            data=self.lake_data or embedded.data,
            s3=s3,
        )

    @property
    def analyst_login(self) -> Login | None:
        """The analysts' PostgreSQL role and password, when both are set."""
        from warehouse.analysts import Login

        if not self.analyst_role or self.analyst_password is None:
            return None
        return Login(self.analyst_role, self.analyst_password.get_secret_value())

    @property
    def analyst_s3(self) -> S3 | None:
        """The lake's object store with the analysts' key, when the key is set."""
        from warehouse.lake import S3

        s3 = self.lake.s3
        if s3 is None or not self.analyst_s3_key_id or self.analyst_s3_secret is None:
            return None
        return S3(
            endpoint=s3.endpoint,
            key_id=self.analyst_s3_key_id,
            secret=self.analyst_s3_secret.get_secret_value(),
            region=s3.region,
            use_ssl=s3.use_ssl,
        )

    def analyst_settings_missing(self) -> list[str]:
        """The MURMUR_ANALYST_* variables this store needs for an analyst's attach and lacks.

        None on the embedded profile, whose files the analyst reads under the file
        permissions; the PostgreSQL role where a database is PostgreSQL; the key where the
        lake's files are on S3.
        """
        from sqlalchemy.engine import make_url

        needed: list[str] = []
        if (
            make_url(self.pub_url).get_backend_name() == "postgresql"
            or self.lake.kind == "postgres"
        ):
            needed += ["analyst_role", "analyst_password"]
        if self.lake.s3 is not None:
            needed += ["analyst_s3_key_id", "analyst_s3_secret"]
        return [f"MURMUR_{name.upper()}" for name in needed if not getattr(self, name)]

    def ensure_dirs(self) -> None:
        """Create the data and media directories, owner-only (warehouse/files.py)."""
        private_dir(self.data_dir)
        private_dir(self.media_dir)

    def open_store(self, *, prepare_lake: bool = True) -> Store:
        """This process's handle on the store (every process opens it itself).

        ``prepare_lake=False``: the lake is created or migrated on its first read, not now
        (:meth:`warehouse.store.Store.open`).
        """
        from warehouse.store import Secrets, Store

        self.ensure_dirs()
        if self.old_store_path.exists():
            self._refuse_unmigrated()
        store = Store.open(
            self.pub_url,
            self.lake,
            self.changes_file,
            prepare_lake=prepare_lake,
            # PostgreSQL: each request thread may hold one; opened only as they are used.
            connections=self.request_threads,
        )
        store.sealer = Secrets.load(self.data_dir).sealer()
        store.duckdb_threads = self.duckdb_threads
        return store

    def open_lakehouse(self) -> Lakehouse:
        """A pipeline session on this process's own store (closing it closes the store)."""
        from warehouse.store import Lakehouse

        # The session's own attach creates and migrates the lake: preparing it first on a
        # connection of its own loaded the extensions and attached twice per process.
        private_dir(self.spill_dir)
        return Lakehouse(
            self.open_store(prepare_lake=False),
            owned=True,
            memory_limit=self.pipeline_memory_limit,
            spill_dir=self.spill_dir,
        )

    def _refuse_unmigrated(self) -> None:
        # Murmur before ADR 0002 kept everything in murmur.duckdb; starting on an empty new
        # store beside it would hide every post. ``murmur migrate`` moves it (and renames it).
        from warehouse.errors import StoreUnavailableError

        raise StoreUnavailableError(
            f"{self.old_store_path} holds a store of an earlier Murmur:"
            " run `murmur migrate` to move it into the new store first"
        )
