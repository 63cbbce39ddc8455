"""One registry of platforms: every list of them agrees with it, and its media rules hold."""

from __future__ import annotations

import importlib
import typing
from pathlib import Path

import pytest

from connectors import registry
from connectors.http import HttpConnector
from connectors.platforms import PLATFORMS, SPECS
from connectors.publishing import Publishing
from domain.workspaces.schemas import PlatformName
from domain.workspaces.service import TEST_ACCOUNTS
from simulator import platforms as simulated
from simulator import world


def test_every_list_of_platforms_is_the_registry() -> None:
    assert len(PLATFORMS) == 9
    assert set(typing.get_args(PlatformName)) == set(PLATFORMS)  # the API's enum
    assert set(registry.CONNECTORS) == set(PLATFORMS)
    assert set(registry.SUPPORTED) == set(registry.PUBLISHING) == set(PLATFORMS)
    assert set(TEST_ACCOUNTS) == set(PLATFORMS)
    # The simulator keeps its own list (it stands for the platforms), but serves them all.
    assert set(world.PLATFORMS) == set(PLATFORMS)
    assert "pinterest" not in registry.CREATOR_SEARCH


@pytest.mark.parametrize("platform", PLATFORMS)
def test_a_platform_is_one_package_whose_publisher_is_built_over_its_own_reader(
    platform: str,
) -> None:
    package = importlib.import_module(f"connectors.{platform}")
    reader = importlib.import_module(f"{package.__name__}.reader")
    writer = importlib.import_module(f"{package.__name__}.publisher")
    publisher = registry.build_publisher(platform, base_url="http://127.0.0.1:9")  # no call made
    assert isinstance(publisher, Publishing)
    try:
        # Composed, not inherited: the publisher is no reader, it has one, and it is its own
        # platform's (Facebook's and Threads' publishers once inherited Instagram's reader).
        assert not isinstance(publisher, HttpConnector)
        assert type(publisher.reader) is registry.CONNECTORS[platform]
        assert type(publisher.reader).__module__ == reader.__name__
        assert type(publisher).__module__ == writer.__name__
        assert publisher.platform == publisher.reader.platform == platform
    finally:
        publisher.close()


def test_the_simulator_serves_each_platform_from_its_own_module() -> None:
    served: dict[str, set[str]] = {}
    for module in simulated.MODULES:
        name = module.__name__.rsplit(".", 1)[-1]
        prefixes = {route.path.split("/")[1] for route in module.routes()}
        # Meta's Graph API is one module for its three platforms; every other module is one.
        assert prefixes == ({"instagram", "facebook", "threads"} if name == "graph" else {name})
        for prefix in prefixes:
            assert prefix not in served, f"{prefix} is served by two modules"
            served[prefix] = prefixes
    assert set(served) == set(PLATFORMS)


def _kinds(images: int = 0, videos: int = 0, documents: int = 0) -> list[str]:
    return ["image"] * images + ["video"] * videos + ["document"] * documents


@pytest.mark.parametrize(
    ("platform", "kinds", "issue"),
    [
        ("x", _kinds(images=4), None),
        ("x", _kinds(images=5), "media_count"),
        ("x", _kinds(images=1, videos=1), "media_count"),
        ("bluesky", _kinds(videos=1), None),
        ("linkedin", _kinds(documents=1), None),
        ("linkedin", _kinds(images=1, documents=1), "media_kind"),
        ("facebook", _kinds(documents=1), "media_kind"),
        ("facebook", _kinds(images=30, videos=2), None),
        ("youtube", _kinds(), "media_count"),
        ("youtube", _kinds(videos=1), None),
        ("tiktok", _kinds(videos=2), "media_count"),
        ("pinterest", _kinds(videos=1), "media_kind"),
        ("pinterest", _kinds(), "media_count"),
        ("pinterest", _kinds(images=5), None),
        ("pinterest", _kinds(images=6), "media_count"),
        ("instagram", _kinds(), "media_count"),
        ("instagram", _kinds(images=6, videos=4), None),
        ("instagram", _kinds(images=11), "media_count"),
        ("threads", _kinds(), None),
        ("threads", _kinds(images=10), None),
        ("threads", _kinds(images=11), "media_count"),
    ],
)
def test_media_rules(platform: str, kinds: list[str], issue: str | None) -> None:
    problem = SPECS[platform].media_problem(kinds)
    assert (problem[0] if problem else None) == issue
    if problem:
        assert problem[1].startswith(SPECS[platform].display_name)


def test_the_documented_text_limits_are_the_registrys() -> None:
    doc = (Path(__file__).resolve().parents[2] / "docs" / "api" / "posts.md").read_text()
    table = doc.split("| Platform | Text limit | Media |", 1)[1].split("\n\n", 1)[0]
    documented = {}
    for line in table.strip().splitlines()[1:]:
        name, limit, _ = (cell.strip() for cell in line.strip().strip("|").split("|"))
        documented[name] = int(limit.split()[0].replace(",", ""))
    assert documented == {spec.display_name: spec.text_limit for spec in SPECS.values()}
