"""What a serving process on the embedded outbox sets for itself when its app starts."""

from __future__ import annotations

import sys
from collections.abc import Callable

from gateway.webhook_gateway.transports.embedded.writer import GIL_SWITCH_S
from tests.conftest import make_settings
from tests.support import GatewayClient


def test_the_event_loop_waits_at_most_a_millisecond_for_the_gil(
    sqlite_store: Callable[..., str],
) -> None:
    default = sys.getswitchinterval()
    sys.setswitchinterval(0.005)  # CPython's default
    try:
        settings = make_settings(sqlite_store(), evaluator="off")  # the outbox writer's thread
        with GatewayClient.running(settings):
            assert sys.getswitchinterval() == GIL_SWITCH_S == 0.001
    finally:
        sys.setswitchinterval(default)
