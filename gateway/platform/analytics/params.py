"""What the factory metrics endpoints share: their problems, and the order of the checks
(credentials, factory access, the caller's request budget, the range). The range parameters and
the answers' envelope are in models.py."""

from __future__ import annotations

from datetime import datetime
from typing import Any, Literal, TypeVar

from starlette.requests import Request

from gateway.foundation.accounts.factories import Factory, get_accessible_factory
from gateway.foundation.api.auth import principal_of, services_of
from gateway.foundation.api.routing import Query
from gateway.foundation.store.types import utcnow
from gateway.kernel.errors import FactoryMetricsRateLimited as BudgetSpent
from gateway.kernel.errors import InvalidRequest
from gateway.kernel.problem import Problem
from gateway.platform.analytics.models import MetricsRange
from gateway.platform.analytics.window import Period, Window, window

RATE_LIMITED = (
    429,
    "`metrics_rate_limited`: the caller's metrics budget is spent; see Retry-After",
)


class FactoryMetricsRateLimited(Problem, kw_only=True):
    """The 429 of the factory metrics endpoints."""

    code: Literal["metrics_rate_limited"]


RATE_LIMITED_TYPE = ((429, FactoryMetricsRateLimited),)
ERRORS = (400, 401, 403, 404, 429)
NO_BINNING = (400, "`invalid_request`; also for any group_by_period")
# what a metered operation documents, as `Routes.get` takes it (UNBINNED: one without periods)
METERED: dict[str, Any] = {
    "errors": ERRORS,
    "problem_types": RATE_LIMITED_TYPE,
    "problems": (RATE_LIMITED,),
}
UNBINNED: dict[str, Any] = {**METERED, "problems": (RATE_LIMITED, NO_BINNING)}


async def metered_factory(request: Request) -> Factory:
    """The accessible factory of the path, after charging the caller's request budget."""
    principal = await principal_of(request)
    services = services_of(request)
    async with services.database.read() as conn:
        factory = await get_accessible_factory(conn, principal, request.path_params["uid"])
    budget = services.metrics_budget
    if budget is not None:
        wait = await budget.spend(f"{principal.kind}:{principal.uid}")
        if wait is not None:
            raise BudgetSpent(
                f"Authorization: metrics request budget of this caller spent; retry in {wait} s",
                retry_after=wait,
            )
    return factory


R = TypeVar("R", bound=MetricsRange)


async def metered_range(request: Request, query: Query[R]) -> tuple[Factory, R, Window]:
    """The factory (as `metered_factory`), then the query and the window it names."""
    factory = await metered_factory(request)
    params = query.read()
    return factory, params, range_of(params.start_date, params.end_date, params.group_by_period)


def range_of(start: datetime | None, end: datetime | None, period: Period | None = None) -> Window:
    return window(start, end, period, utcnow())


def refuse_binning(request: Request) -> None:
    if "group_by_period" in request.query_params:
        raise InvalidRequest("group_by_period: not accepted by this endpoint")
