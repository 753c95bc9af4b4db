"""runners/<name>.yaml -> Runner: the platform pairs, Docker image and instance shapes that
the schema leaves to the server (x-warp-rules of runner.schema.json)."""

from __future__ import annotations

from typing import Any

from ..codes import Code
from ..documents import Document
from ..model import InstanceShape, Runner, RunnerPlatform
from .context import BuildContext

__all__ = ["build_runner"]

MAC_SHAPES = ((4, 7), (6, 14), (8, 14), (12, 28), (12, 56))
DEFAULT_MAC_VERSION = "26"


def build_runner(doc: Document, ctx: BuildContext) -> Runner | None:
    """The platform rules run on a schema-clean `platform`, the shape rules on a clean
    `instanceShape` too, so their problems show beside the schema's."""
    platform_raw: dict[str, Any] | None = doc.get(("platform",)) or (
        {} if doc.clean(("platform",)) else None
    )
    if platform_raw is None:
        return None
    os_name = platform_raw.get("os", "linux")
    arch = platform_raw.get("arch", "aarch64" if os_name == "macos" else "x86_64")
    problems = _platform_problems(os_name, arch, platform_raw)
    if doc.clean(("instanceShape",)):
        problems += _shape_problems(os_name, doc.value.get("instanceShape"))
    for path, code, message in problems:
        doc.report(ctx.sink, path, code, message)
    if problems or not doc.clean():
        return None
    raw = doc.value
    linux: dict[str, Any] = platform_raw.get("linux") or {}
    if linux.get("registryCredentialSecretName"):
        path = ("platform", "linux", "registryCredentialSecretName")
        ctx.defer("secret", linux["registryCredentialSecretName"], doc, path)
    shape = raw.get("instanceShape")
    mac_version = (platform_raw.get("mac") or {}).get("version", DEFAULT_MAC_VERSION)
    return Runner(
        name=doc.name,
        path=doc.path,
        description=raw.get("description"),
        setup_commands=tuple(raw.get("setupCommands") or ()),
        instance_shape=(
            InstanceShape(vcpus=shape["vcpus"], memory_gb=shape["memoryGb"]) if shape else None
        ),
        platform=RunnerPlatform(
            os=os_name,
            arch=arch,
            docker_image=linux.get("dockerImage"),
            registry_credential_secret_name=linux.get("registryCredentialSecretName"),
            mac_version=mac_version if os_name == "macos" else None,
        ),
    )


Problem = tuple[tuple[str, ...], Code, str]


def _platform_problems(os_name: str, arch: str, raw: dict[str, Any]) -> list[Problem]:
    problems: list[Problem] = []
    if os_name == "macos" and arch != "aarch64":
        problems.append((("platform", "arch"), Code.INVALID_VALUE, _MAC_ARCH))
    if os_name == "macos" and "linux" in raw:
        problems.append((("platform", "linux"), Code.CONFLICTING_FIELDS, _LINUX_ON_MAC))
    if os_name == "linux" and "mac" in raw:
        problems.append((("platform", "mac"), Code.CONFLICTING_FIELDS, _MAC_ON_LINUX))
    if os_name == "linux" and not (raw.get("linux") or {}).get("dockerImage"):
        where = ("platform", "linux") if "linux" in raw else ("platform",) if raw else ()
        problems.append((where, Code.MISSING_FIELD, _DOCKER_IMAGE))
    return problems


def _shape_problems(os_name: str, shape: dict[str, Any] | None) -> list[Problem]:
    if not shape:
        return []
    vcpus, memory = shape["vcpus"], shape["memoryGb"]
    if os_name == "macos":
        if (vcpus, memory) in MAC_SHAPES:
            return []
        listed = ", ".join(f"{c}/{m}" for c, m in MAC_SHAPES)
        message = f"macOS shapes (vcpus/memoryGb) are {listed}; {vcpus}/{memory} is not one"
        return [(("instanceShape",), Code.INVALID_VALUE, message)]
    return [
        (
            ("instanceShape", key),
            Code.INVALID_VALUE,
            f"Linux `{key}` must be a power of two (1, 2, 4, 8, 16, ...); {value} is not",
        )
        for key, value in (("vcpus", vcpus), ("memoryGb", memory))
        if value & (value - 1)
    ]


_MAC_ARCH = "macOS runners are aarch64 only: write `arch: aarch64` or leave arch out"
_LINUX_ON_MAC = (
    "`platform.linux` is for Linux runners only (a macOS sandbox is a VM, not a container): "
    "remove it"
)
_MAC_ON_LINUX = "`platform.mac` is for macOS runners only: remove it, or set `os: macos`"
_DOCKER_IMAGE = (
    "a Linux runner (Linux is the default) needs `platform.linux.dockerImage`, the image its "
    "toolchain comes from, like ubuntu:24.04"
)
