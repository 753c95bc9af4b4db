"""Skill specs: `owner/repo:skill-name` or `owner/repo:path/to/SKILL.md` (spec 2.2).

A run started from a skill is named after it (agent_config.name) unless a name is given: the
skill name itself, or for a SKILL.md path the directory that holds the file.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from gateway.kernel.errors import InvalidRequest

OWNER = r"[A-Za-z0-9](?:[A-Za-z0-9-]{0,38})"
REPO = r"[A-Za-z0-9._-]{1,100}"
SKILL_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,99}")
SPEC = re.compile(rf"({OWNER})/({REPO}):(.+)")
SKILL_FILE = "SKILL.md"
MAX_LENGTH = 500


@dataclass(frozen=True, slots=True)
class SkillSpec:
    owner: str
    repo: str
    target: str  # the skill name, or the path of its SKILL.md in the repository
    name: str


def parse_skill_spec(value: str, field: str) -> SkillSpec:
    """The spec's parts; a 400 naming `field` when it has neither form."""
    found = SPEC.fullmatch(value) if len(value) <= MAX_LENGTH else None
    if found is None or found[2] in (".", ".."):
        raise InvalidRequest(
            f"{field}: expected owner/repo:skill-name or owner/repo:path/to/SKILL.md"
        )
    owner, repo, target = found[1], found[2], found[3]
    if target == SKILL_FILE:
        raise InvalidRequest(f"{field}: a {SKILL_FILE} path needs the directory naming the skill")
    if "/" not in target:
        if not SKILL_NAME.fullmatch(target):
            raise InvalidRequest(f"{field}: {target!r} is not a skill name")
        return SkillSpec(owner, repo, target, target)
    *directories, file_name = target.split("/")
    if file_name != SKILL_FILE:
        raise InvalidRequest(f"{field}: a path must end in /{SKILL_FILE}")
    if any(part in ("", ".", "..") for part in directories):
        raise InvalidRequest(f"{field}: the path must not hold empty, '.' or '..' segments")
    if not SKILL_NAME.fullmatch(directories[-1]):
        raise InvalidRequest(f"{field}: {directories[-1]!r} is not a skill directory name")
    return SkillSpec(owner, repo, target, directories[-1])
