"""The container files: the image checks its health on /healthz and owns its data directory;
docker-compose.yml runs gateway, worker and runner from that image beside Redis (AOF) and
PostgreSQL, each started once what it needs is healthy. (This machine's Docker has no compose
plugin: `docker compose config` could not be run here; the structure is checked instead.)"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml

ROOT = Path(__file__).resolve().parent.parent


def _compose() -> dict[str, Any]:
    loaded: dict[str, Any] = yaml.safe_load((ROOT / "docker-compose.yml").read_text())
    return loaded


def test_the_image_checks_its_health_and_owns_its_data() -> None:
    dockerfile = (ROOT / "Dockerfile").read_text()
    assert "HEALTHCHECK" in dockerfile and "/healthz" in dockerfile
    assert "chown gateway:gateway /home/gateway/data" in dockerfile
    assert "USER gateway" in dockerfile


def test_compose_runs_the_gateway_worker_and_runner_beside_redis_and_postgres() -> None:
    services = {
        name: service
        for name, service in _compose()["services"].items()
        if "profiles" not in service  # what `docker compose up` starts
    }
    assert set(services) == {"gateway", "worker", "runner", "redis", "postgres"}
    for name in ("gateway", "worker", "runner"):
        service = services[name]
        assert service["build"] == "." and service["command"][0] == "gateway"
        env = service["environment"]
        assert env["GATEWAY_REDIS_URL"] == "redis://redis:6379/0"
        assert env["GATEWAY_DATABASE_URL"].startswith("postgresql://")
        assert {"redis", "postgres"} <= set(service["depends_on"]) or name == "runner"
    assert services["gateway"]["environment"]["GATEWAY_EVALUATOR"] == "off"
    assert services["worker"]["command"] == ["gateway", "worker"]
    runner = services["runner"]
    assert runner["command"][:2] == ["gateway", "runner"]
    assert runner["environment"]["GATEWAY_API_URL"] == "http://gateway:8000"
    assert runner["depends_on"]["gateway"]["condition"] == "service_healthy"
    assert "--appendonly" in services["redis"]["command"]
    for name in ("redis", "postgres"):
        assert services[name]["healthcheck"]["test"]


def test_the_cluster_profile_runs_gateway_and_worker_on_six_cluster_nodes() -> None:
    services = _compose()["services"]
    cluster = {name for name, service in services.items() if service.get("profiles") == ["cluster"]}
    nodes = {f"redis-node-{n}" for n in range(1, 7)}
    assert cluster == {"gateway-cluster", "worker-cluster", "redis-cluster-init", *nodes}
    for name in ("gateway-cluster", "worker-cluster"):
        env = services[name]["environment"]
        assert env["GATEWAY_REDIS_CLUSTER"] == "1"
        assert env["GATEWAY_REDIS_URL"] == "redis://redis-node-1:6379/0"
        depends = services[name]["depends_on"]
        assert depends["redis-cluster-init"]["condition"] == "service_completed_successfully"
    for node in nodes:
        command = " ".join(services[node]["command"])
        assert "--cluster-enabled yes" in command and "--appendonly yes" in command
        assert "--maxmemory-policy noeviction" in command
        assert services[node]["hostname"] == node
    init = " ".join(services["redis-cluster-init"]["command"])
    assert "--cluster create" in init and "--cluster-replicas 1" in init
    assert all(f"{node}:6379" in init for node in nodes)
