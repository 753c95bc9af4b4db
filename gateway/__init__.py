"""Webhook ingress gateway and the factory platform API it serves."""

from gateway.app import create_app
from gateway.settings import Settings, load_settings

__all__ = ["Settings", "create_app", "load_settings"]
