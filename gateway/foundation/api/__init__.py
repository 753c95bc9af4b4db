"""What every /api/v1 handler shares: routes that declare their operation, request decoding,
authentication, responses, cursors and the OpenAPI document. The resources themselves live with
their product (gateway/composition/resources.py lists them)."""

from gateway.foundation.api.openapi import API_PREFIX

__all__ = ["API_PREFIX"]
