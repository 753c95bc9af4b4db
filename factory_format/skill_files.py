"""A skill's other files: what its directory holds besides SKILL.md (scripts, references,
templates), which the format does not parse but a run that uses the skill reads."""

from __future__ import annotations

from collections.abc import Mapping

import msgspec

from .model import FactoryTree, Skill
from .sources import MAX_FILE_BYTES, MAX_FILES, MAX_TREE_BYTES

__all__ = ["is_skill_file", "with_skill_files"]


def with_skill_files(tree: FactoryTree, files: Mapping[str, str]) -> FactoryTree:
    """`tree` with each skill's `files`: every text file under its directory but its SKILL.md
    and those of a skill nested in it (which has its own), by path under the directory. Hidden
    files are left out, as everywhere in a tree, and so is what a definition file could not be
    (over 256 KiB, a NUL character), and anything past the tree's limits (files, bytes)."""
    if not tree.skills:
        return tree
    directories = {skill.path.rsplit("/", 1)[0] + "/": skill for skill in tree.skills}
    found: dict[str, dict[str, str]] = {}
    count = size = 0
    for raw, text in sorted(files.items()):
        if not (isinstance(raw, str) and isinstance(text, str)):
            continue
        path = raw[2:] if raw.startswith("./") else raw
        if not is_skill_file(path) or "\x00" in text:
            continue
        try:
            length = len(text.encode("utf-8"))
        except UnicodeEncodeError:  # an unpaired surrogate: not text a file can hold
            continue
        if length > MAX_FILE_BYTES or count >= MAX_FILES or size + length > MAX_TREE_BYTES:
            continue
        owner = max((d for d in directories if path.startswith(d)), key=len, default=None)
        if owner is not None:
            found.setdefault(owner, {})[path[len(owner) :]] = text
            count, size = count + 1, size + length
    skills = tuple(_with(skill, found.get(directory)) for directory, skill in directories.items())
    return msgspec.structs.replace(tree, skills=tuple(sorted(skills, key=_order)))


def is_skill_file(path: str) -> bool:
    """A file that may belong to a skill's directory (skills/... or agents/<a>/skills/...),
    other than a SKILL.md."""
    parts = path.split("/")
    if any(part in ("", ".", "..") or part.startswith(".") for part in parts):
        return False
    if parts[-1] == "SKILL.md":
        return False
    return (len(parts) >= 3 and parts[0] == "skills") or (
        len(parts) >= 5 and parts[0] == "agents" and parts[2] == "skills"
    )


def _with(skill: Skill, files: dict[str, str] | None) -> Skill:
    if not files:
        return skill
    return msgspec.structs.replace(skill, files=dict(sorted(files.items())))


def _order(skill: Skill) -> tuple[str, str]:
    return (skill.agent or "", skill.name)
