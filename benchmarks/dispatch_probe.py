"""Is run dispatch (RunStarter.start_runs) implemented yet? The evaluator needs it."""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime
from typing import Any

from gateway.domain.automation_runs import AcceptedDelivery, RunStarter


def run_dispatch_ready() -> bool:
    """False while start_runs raises NotImplementedError; any other outcome counts as ready."""
    delivery = AcceptedDelivery("dlv_probe", "whk_probe", datetime.now(UTC), b"{}")
    none: Any = None
    try:
        asyncio.run(RunStarter(none).start_runs(none, delivery))
    except NotImplementedError:
        return False
    except Exception:  # implemented: it just cannot work without a store
        return True
    return True
