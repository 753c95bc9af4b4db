"""gateway/http/uvicorn_protocol.py subclasses uvicorn's httptools protocol and follows private code
of it (FOLLOWED). pyproject.toml pins the uvicorn versions that code was checked against, and
this test fails loudly when the installed uvicorn's copy of it differs from the one checked."""

from __future__ import annotations

import hashlib
import inspect
import re
import tomllib
from importlib.metadata import version
from pathlib import Path

from packaging.specifiers import SpecifierSet
from uvicorn.protocols.http import httptools_impl

from gateway.http.uvicorn_protocol import FOLLOWED, FOLLOWED_DIGEST, FOLLOWED_VERSION

ROOT = Path(__file__).resolve().parent.parent


def followed_digest() -> str:
    """sha256 of the source of every FOLLOWED method, in FOLLOWED's order."""
    digest = hashlib.sha256()
    for class_name, methods in FOLLOWED.items():
        cls = getattr(httptools_impl, class_name)
        for name in methods:
            digest.update(f"{class_name}.{name}\n".encode())
            digest.update(inspect.getsource(cls.__dict__[name]).encode())
    return digest.hexdigest()


def pinned() -> SpecifierSet:
    dependencies = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["dependencies"]
    (requirement,) = [d for d in dependencies if re.match(r"uvicorn\b", d)]
    return SpecifierSet(re.sub(r"^uvicorn(\[[^]]*\])?", "", requirement))


def test_the_followed_uvicorn_source_is_the_one_checked() -> None:
    methods = ", ".join(f"{cls}.{name}" for cls, names in FOLLOWED.items() for name in names)
    assert followed_digest() == FOLLOWED_DIGEST, (
        f"the installed uvicorn ({version('uvicorn')}) differs in code "
        f"gateway/http/uvicorn_protocol.py follows (checked against {FOLLOWED_VERSION}). Re-check "
        f"BoundedHttpTools (its on_response_complete is a copy of uvicorn's; refuse stands in "
        f"for connection_lost) and "
        f"gateway/http/response_writes.py against uvicorn.protocols.http.httptools_impl: "
        f"{methods}. Then set FOLLOWED_VERSION, FOLLOWED_DIGEST = {followed_digest()!r} and the "
        "uvicorn pin of pyproject.toml."
    )


def test_pyproject_pins_the_uvicorn_versions_checked() -> None:
    """An upper bound below the next minor release: a newer uvicorn is a decision, made with
    the test above, not an accident of an install."""
    specifier = pinned()
    assert FOLLOWED_VERSION in specifier and version("uvicorn") in specifier
    major, minor, _ = (int(part) for part in FOLLOWED_VERSION.split("."))
    assert f"{major}.{minor + 1}.0" not in specifier, f"uvicorn{specifier}: no upper bound"
