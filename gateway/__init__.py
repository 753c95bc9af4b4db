"""Webhook ingress gateway and the factory platform API it serves."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from gateway.composition.app import create_app
    from gateway.kernel.settings import Settings, load_settings

__all__ = ["Settings", "create_app", "load_settings"]


def __getattr__(name: str) -> Any:
    # lazily: importing any gateway module must not import the whole app (the package's own
    # modules would import back into a package that is still initialising)
    if name == "create_app":
        from gateway.composition.app import create_app

        return create_app
    if name in ("Settings", "load_settings"):
        from gateway.kernel import settings

        return getattr(settings, name)
    raise AttributeError(f"module 'gateway' has no attribute {name!r}")
