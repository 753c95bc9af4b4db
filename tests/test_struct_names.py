"""One Struct name per shape: no two Structs of the gateway share a name, so a name read in a
traceback, a log or the OpenAPI document means one shape, and msgspec never has to qualify a
component with its module (`gateway.platform.tasks.models.Task`)."""

from __future__ import annotations

import importlib
import pkgutil
from collections import defaultdict

import msgspec

import gateway
from gateway.composition.app import openapi_document


def _gateway_structs() -> dict[str, set[str]]:
    modules: dict[str, set[str]] = defaultdict(set)
    for info in pkgutil.walk_packages(gateway.__path__, "gateway."):
        if info.name == "gateway.__main__" or ".migrations" in info.name:
            continue  # runs the CLI; Alembic's scripts
        module = importlib.import_module(info.name)
        for value in vars(module).values():
            if (
                isinstance(value, type)
                and issubclass(value, msgspec.Struct)
                and value.__module__ == module.__name__
            ):
                modules[value.__qualname__].add(value.__module__)
    return modules


def test_no_two_structs_of_the_gateway_share_a_name() -> None:
    shared = {name: sorted(where) for name, where in _gateway_structs().items() if len(where) > 1}
    assert not shared, f"one name, several shapes: {shared}"


def test_every_component_of_the_openapi_document_is_named_by_its_struct_alone() -> None:
    names = openapi_document()["components"]["schemas"]
    qualified = sorted(name for name in names if "." in name)
    assert not qualified, f"components msgspec qualified with their module: {qualified}"
