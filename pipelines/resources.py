"""Dagster resources: the store and the platforms, each behind a small typed interface."""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Iterator
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING

from dagster import ConfigurableResource, InitResourceContext
from pydantic import Field, PrivateAttr

from core.settings import STORE_FIELDS, Settings
from warehouse.store import Lakehouse

if TYPE_CHECKING:
    from connectors.base import Connector

DEFAULT_SIMULATOR_URL: str = Settings.model_fields["platforms_url"].default


class StoreResource(ConfigurableResource):  # type: ignore[type-arg]
    """The Murmur store, as a pipeline session: the lake read-write, publishing rows joined."""

    data_dir: str = Field(description="Murmur's data directory (MURMUR_DATA_DIR).")
    publishing_url: str | None = Field(
        default=None, description="The publishing database; unset: MURMUR_PUBLISHING_URL's."
    )
    lake_catalog: str | None = Field(
        default=None, description="The lake's catalog; unset: MURMUR_LAKE_CATALOG's."
    )
    lake_data: str | None = Field(
        default=None, description="The lake's files; unset: MURMUR_LAKE_DATA's."
    )
    s3_endpoint: str | None = Field(default=None, description="unset: MURMUR_S3_ENDPOINT's.")
    s3_key_id: str | None = Field(default=None, description="unset: MURMUR_S3_KEY_ID's.")
    s3_secret: str | None = Field(default=None, description="unset: MURMUR_S3_SECRET's.")
    s3_region: str | None = Field(default=None, description="unset: MURMUR_S3_REGION's.")
    s3_use_ssl: bool | None = Field(default=None, description="unset: MURMUR_S3_USE_SSL's.")
    _run_session: contextlib.ExitStack | None = PrivateAttr(default=None)

    def setup_for_execution(self, context: InitResourceContext) -> None:
        """Open one session for the run's steps in this process (see :meth:`session`)."""
        self._run_session = contextlib.ExitStack()
        self._run_session.enter_context(self.session())

    def teardown_after_execution(self, context: InitResourceContext) -> None:
        if self._run_session is not None:
            self._run_session.close()
            self._run_session = None

    @classmethod
    def of(cls, settings: Settings) -> StoreResource:
        """The store of ``settings``, every field carried (an in-process run's)."""
        given = {name: getattr(settings, name) for name in STORE_FIELDS}
        return cls(data_dir=str(settings.data_dir), **given)

    @property
    def root(self) -> Path:
        return Path(self.data_dir)

    @property
    def landing_dir(self) -> Path:
        """Where batches and computed marts are staged as Parquet before the lake loads them."""
        path = self.root / "landing"
        path.mkdir(parents=True, exist_ok=True)
        return path

    @contextlib.contextmanager
    def open(self) -> Iterator[Lakehouse]:
        """A session for one asset's work, closed afterwards.

        Inside :meth:`session` it is the session's, left open for the next asset.
        """
        shared = _SESSIONS.get(self._session_key)
        if shared is not None:
            yield shared
            return
        session = self._connect()
        try:
            yield session
        finally:
            session.close()

    @contextlib.contextmanager
    def session(self) -> Iterator[Lakehouse]:
        """One session for every asset this thread runs until the block ends (a run, ``run_all``).

        Each open costs attaching the lake and copying the publishing rows the SQL joins
        (~1 s): a run of a dozen assets pays that once instead of per asset. An in-process
        run's steps run one at a time in the thread that started it, so they never share the
        session concurrently; a run in another thread has its own.
        """
        if self._session_key in _SESSIONS:
            yield _SESSIONS[self._session_key]
            return
        session = self._connect()
        _SESSIONS[self._session_key] = session
        try:
            yield session
        finally:
            del _SESSIONS[self._session_key]
            session.close()

    @property
    def _session_key(self) -> tuple[str, int]:
        return (str(self.root.resolve()), threading.get_ident())

    def _connect(self) -> Lakehouse:
        # Fields left unset come from the process's MURMUR_* variables, as Settings reads them.
        given = {name: getattr(self, name) for name in STORE_FIELDS}
        settings = Settings(
            data_dir=self.root,
            **{name: value for name, value in given.items() if value is not None},
        )
        return settings.open_lakehouse()


# Open sessions by data directory and thread (see StoreResource.session); Dagster copies
# resources, so the session lives here rather than on the instance.
_SESSIONS: dict[tuple[str, int], Lakehouse] = {}


class PlatformsResource(ConfigurableResource):  # type: ignore[type-arg]
    """Where each platform is: the bundled simulator by default, or per-platform base URLs."""

    platforms_url: str = Field(
        default=DEFAULT_SIMULATOR_URL, description="Root URL of the platform simulator."
    )
    base_urls: dict[str, str] = Field(
        default={}, description="Per-platform base URLs that replace the simulator's."
    )
    tokens: dict[str, str] = Field(default={}, description="Per-platform app tokens.")
    as_of: str | None = Field(
        default=None,
        description="Read the platforms as they were at this ISO 8601 moment, not now: only"
        " the bundled simulator answers that.",
    )

    def base_url(self, platform: str) -> str:
        from connectors.registry import simulator_base_url

        return self.base_urls.get(platform) or simulator_base_url(self.platforms_url, platform)

    def connector(self, platform: str) -> Connector:
        """A connector for ``platform`` at its configured base URL."""
        from connectors.http import PlatformHttp
        from connectors.registry import build_connector, simulator_token

        token = self.tokens.get(platform)
        if token is None and platform not in self.base_urls:
            token = simulator_token(platform, "client")
        as_of = datetime.fromisoformat(self.as_of) if self.as_of else None
        # An hourly read that finds nothing listening reports the account and moves on: the
        # next hour is the retry (timeouts and 5xx keep their back-off).
        http = PlatformHttp(retry_refused=False)
        return build_connector(
            platform, base_url=self.base_url(platform), token=token, http=http, as_of=as_of
        )

    def account_token(self, platform: str, external_id: str) -> str | None:
        """The token to read one of our connected accounts with (the simulator mints its own)."""
        from connectors.registry import simulator_token

        if platform in self.base_urls:
            return self.tokens.get(platform)
        return simulator_token(platform, external_id)

    def supported(self) -> tuple[str, ...]:
        """The platforms a connector exists for."""
        from connectors.registry import SUPPORTED

        return tuple(SUPPORTED)
