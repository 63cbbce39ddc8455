"""Property-based run over the OpenAPI document: no 5xx and no response that breaks its schema."""

from __future__ import annotations

import tempfile
from pathlib import Path
from typing import Any

import httpx
import pytest
import schemathesis
from hypothesis import HealthCheck, settings
from schemathesis.checks import (
    content_type_conformance,
    not_a_server_error,
    response_headers_conformance,
    response_schema_conformance,
    status_code_conformance,
)

from api.app import BASE_PATH, create_app
from core.settings import Settings
from tests.support import LiveServer, Tenant, new_tenant

# One worker runs the module: its shared fixture is built once, not on each worker.
pytestmark = pytest.mark.xdist_group(__name__)


@pytest.fixture(scope="module")
def fuzz_tenant(server: LiveServer) -> Tenant:
    return new_tenant(server)


# The document the server publishes; built from the same app factory without starting it, so
# that pytest can collect one test per operation. test_served_document_is_this_one checks that
# the live server publishes exactly this document.
DOCUMENT = create_app(Settings(data_dir=Path(tempfile.gettempdir()) / "murmur-openapi")).openapi()
schema = schemathesis.openapi.from_dict(DOCUMENT)


def test_served_document_is_this_one(server: LiveServer) -> None:
    served = httpx.get(f"{server.base_url}{BASE_PATH}/openapi.json").json()
    assert served == DOCUMENT


CHECKS = [
    not_a_server_error,
    status_code_conformance,
    content_type_conformance,
    response_schema_conformance,
    response_headers_conformance,
]


@schema.parametrize()
@settings(
    max_examples=15,
    deadline=None,
    suppress_health_check=list(HealthCheck),
    derandomize=True,
)
def test_no_server_error_and_schema_holds(
    case: Any, server: LiveServer, fuzz_tenant: Tenant
) -> None:
    headers = {"Authorization": f"Bearer {fuzz_tenant.key}"}
    if case.headers and "X-Workspace-Id" in case.headers:
        case.headers.pop("X-Workspace-Id")
    # The document's paths are relative to its server, the base path.
    case.call_and_validate(base_url=server.base_url + BASE_PATH, headers=headers, checks=CHECKS)
