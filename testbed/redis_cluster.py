"""A private Redis Cluster on loopback: `masters` redis-servers with `replicas` replicas each, on
consecutive free ports from `base_port`, joined by `redis-cli --cluster create`, in a temporary
directory; for the tests and the scale-out benchmark (never the shared 6379). Masters can be
killed outright and started again (they come back as replicas of whoever took over).

Nodes run with a short `cluster-node-timeout` (a dead master is failed over in ~2 s), AOF off
(the data lives as long as the processes) and `cluster-require-full-coverage no`, as
docs/operations.md recommends: shards on healthy masters keep answering while one fails over.
"""

from __future__ import annotations

import shutil
import socket
import subprocess
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from subprocess import Popen

import redis
from redis.cluster import RedisCluster

from testbed.procs import spawn, stop, wait_port

NODE_TIMEOUT_MS = 1000


# the cluster bus of a node listens on its port + 10000
BUS_OFFSET = 10000


def free_ports(first: int, count: int, last: int) -> list[int]:
    """`count` consecutive ports from `first` on (up to `last`) free on loopback, with their
    cluster-bus ports: another run's cluster may hold the first ones."""
    for start in range(first, last - count + 2):
        if all(_free(port) and _free(port + BUS_OFFSET) for port in range(start, start + count)):
            return list(range(start, start + count))
    raise RuntimeError(f"no {count} free consecutive ports in {first}-{last}")


def _free(port: int) -> bool:
    with socket.socket() as probe:
        # as redis-server binds: a port whose closed connections linger in TIME_WAIT is free
        probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            probe.bind(("127.0.0.1", port))
        except OSError:
            return False
    return True


class ClusterServers:
    def __init__(self, ports: list[int], masters: int = 3, replicas: int = 0) -> None:
        assert len(ports) == masters * (1 + replicas)
        self.ports = ports
        self.masters = masters
        self.replicas = replicas
        self.dir = Path(tempfile.mkdtemp(prefix="private-redis-cluster-"))
        self.procs: dict[int, Popen[bytes]] = {}

    @property
    def url(self) -> str:
        """The first node's address: any node will do, the clients discover the rest."""
        return f"redis://127.0.0.1:{self.ports[0]}/0"

    def node(self, port: int) -> redis.Redis:
        return redis.Redis(host="127.0.0.1", port=port)

    def client(self) -> RedisCluster:
        live = [port for port, proc in self.procs.items() if proc.poll() is None]
        return RedisCluster(host="127.0.0.1", port=live[0])

    def start_node(self, port: int) -> None:
        binary = shutil.which("redis-server")
        if binary is None:
            raise SystemExit("FAILED: redis-server not found (apt-get install -y redis-server)")
        node_dir = self.dir / str(port)
        node_dir.mkdir(exist_ok=True)
        argv = [
            binary,
            "--bind", "127.0.0.1",
            "--port", str(port),
            "--dir", str(node_dir),
            "--save", "",
            "--appendonly", "no",
            "--cluster-enabled", "yes",
            "--cluster-config-file", "nodes.conf",
            "--cluster-node-timeout", str(NODE_TIMEOUT_MS),
            "--cluster-require-full-coverage", "no",
            "--repl-diskless-sync-delay", "0",  # a replica is in sync at once, not after 5 s
        ]  # fmt: skip
        self.procs[port] = spawn(argv, log=node_dir / "redis.log")
        wait_port(port, self.procs[port])

    def start(self) -> None:
        for port in self.ports:
            self.start_node(port)
        create = [
            "redis-cli",
            "--cluster", "create",
            *(f"127.0.0.1:{port}" for port in self.ports),
            "--cluster-replicas", str(self.replicas),
            "--cluster-yes",
        ]  # fmt: skip
        subprocess.run(create, check=True, capture_output=True, timeout=60)
        self.wait_healthy()

    def wait_healthy(self, timeout: float = 30.0) -> None:
        """Every live node says cluster_state:ok, every slot has a master that is up, and every
        replica is in sync (only then can it take over)."""
        deadline = time.monotonic() + timeout
        while True:
            states = []
            for port, proc in self.procs.items():
                if proc.poll() is not None:
                    continue
                with self.node(port) as node:
                    info = node.execute_command("CLUSTER", "INFO").decode()
                    states.append("cluster_state:ok" in info and "slots_fail:0" in info)
                    states.append("cluster_slots_assigned:16384" in info)
                    replication = node.info("replication")
                    if replication["role"] == "slave":
                        states.append(replication["master_link_status"] == "up")
            if all(states):
                return
            if time.monotonic() > deadline:
                raise TimeoutError(f"Redis Cluster on {self.ports} not healthy in {timeout} s")
            time.sleep(0.1)

    def master_ports(self) -> list[int]:
        with self.client() as cluster:
            return sorted(node.port for node in cluster.get_primaries())

    def kill(self, port: int) -> None:
        """SIGKILL: no goodbye to the cluster or the clients."""
        proc = self.procs[port]
        proc.kill()
        proc.wait(timeout=10)

    def stop(self) -> None:
        for proc in self.procs.values():
            stop(proc)
        self.procs.clear()


@contextmanager
def redis_cluster(
    base_port: int, masters: int = 3, replicas: int = 0, last_port: int | None = None
) -> Iterator[ClusterServers]:
    """A cluster on the first free ports from `base_port` (up to `last_port`, default +99)."""
    count = masters * (1 + replicas)
    ports = free_ports(base_port, count, last_port or base_port + 99)
    servers = ClusterServers(ports, masters, replicas)
    try:
        servers.start()
        yield servers
    finally:
        servers.stop()
        shutil.rmtree(servers.dir, ignore_errors=True)
