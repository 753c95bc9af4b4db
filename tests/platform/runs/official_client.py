"""The official Python client (oz-agent-sdk) talking to the app under test: a test oracle for
paths, methods and field names. Never a dependency of the service itself."""

from __future__ import annotations

import httpx
from oz_agent_sdk import OzAPI

from tests.support import World


class ThroughTestClient(httpx.BaseTransport):
    """Hands each request of the client to the app's test client, in this process."""

    def __init__(self, world: World) -> None:
        self.world = world

    def handle_request(self, request: httpx.Request) -> httpx.Response:
        answer = self.world.client.request(
            request.method, str(request.url), headers=dict(request.headers), content=request.read()
        )
        headers = list(answer.headers.multi_items())
        return httpx.Response(answer.status_code, headers=headers, content=answer.content)


def official_client(world: World, api_key: str | None = None) -> OzAPI:
    return OzAPI(
        api_key=api_key or world.user_key,
        base_url="http://testserver/api/v1",
        http_client=httpx.Client(transport=ThroughTestClient(world)),
        max_retries=0,
    )
