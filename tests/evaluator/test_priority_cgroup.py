"""The evaluator's idle cgroup, on a cgroup tree laid out in a temporary directory."""

from __future__ import annotations

from pathlib import Path

from gateway.webhook_gateway.evaluator.cpu_priority import idle_cgroup_name, join_idle_cgroup

IDLE_CGROUP = idle_cgroup_name("gw")


def _cgroup(root: Path, *parts: str) -> Path:
    path = root.joinpath(*parts)
    path.mkdir(parents=True)
    (path / "cpu.idle").write_text("0")
    return path


def test_v1_cpu_hierarchy(tmp_path: Path) -> None:
    base = _cgroup(tmp_path, "cpu,cpuacct", "services", "gw")
    membership = "4:memory:/x\n2:cpu,cpuacct:/services/gw\n0::/services/gw\n"
    group = join_idle_cgroup(4242, IDLE_CGROUP, membership, root=tmp_path)
    assert group == base / IDLE_CGROUP
    assert (group / "cpu.idle").read_text() == "1"
    assert (group / "cgroup.procs").read_text() == "4242"


def test_v1_cpu_hierarchy_mounted_as_cpu(tmp_path: Path) -> None:
    base = _cgroup(tmp_path, "cpu")
    group = join_idle_cgroup(7, IDLE_CGROUP, "1:cpu:/\n", root=tmp_path)
    assert group == base / IDLE_CGROUP


def test_v2_unified_hierarchy(tmp_path: Path) -> None:
    base = _cgroup(tmp_path, "system.slice", "gateway.service")
    group = join_idle_cgroup(7, IDLE_CGROUP, "0::/system.slice/gateway.service\n", root=tmp_path)
    assert group == base / IDLE_CGROUP


def test_no_cpu_controller_leaves_nothing_behind(tmp_path: Path) -> None:
    (tmp_path / "system.slice").mkdir()  # a cgroup without the CPU controller (no cpu.idle)
    assert join_idle_cgroup(7, IDLE_CGROUP, "0::/system.slice\n3:memory:/\n", root=tmp_path) is None
    assert list(tmp_path.rglob(IDLE_CGROUP)) == []


def test_unwritable_tree_gives_up_and_cleans_up(tmp_path: Path) -> None:
    base = _cgroup(tmp_path, "cpu")
    (base / IDLE_CGROUP).write_text("a file where the group would go")  # mkdir fails
    assert join_idle_cgroup(7, IDLE_CGROUP, "1:cpu:/\n", root=tmp_path) is None
