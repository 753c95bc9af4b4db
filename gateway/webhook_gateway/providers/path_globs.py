"""`paths` trigger filters: glob patterns with GitHub Actions' semantics (the filter pattern cheat
sheet of `on.push.paths`), matched against the files a push names.

- `*` matches any characters but `/`; `**` any characters, `/` included (`**/` also none at all,
  so `**/x.py` matches `x.py`);
- `?` makes the character before it optional, `+` repeats it one or more times (GitHub's
  meaning, not the shell's);
- `[a-z]` a character of the set; `\\` takes the next character as it is;
- a pattern starting with `!` excludes the files it matches from what the patterns before it
  included (a later positive pattern includes again), as in GitHub's `paths`.

`in` is GitHub's `paths`: the trigger fires when at least one file is included. `not_in` is its
`paths-ignore`: the trigger does not fire when every file is ignored. docs/providers.md.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

__all__ = ["PathPatterns", "compile_patterns", "glob_regex"]


class GlobError(ValueError):
    pass


def glob_regex(pattern: str) -> re.Pattern[str]:
    """The regular expression of one glob (without its leading `!`); GlobError if malformed."""
    out: list[str] = []
    char = False  # whether the last piece of `out` is one character (what `?` and `+` follow)
    i, n = 0, len(pattern)
    while i < n:
        c = pattern[i]
        one = c not in "*?+"
        if c == "*":
            if pattern.startswith("**", i):
                if pattern.startswith("**/", i):
                    out.append("(?:.*/)?")
                    i += 3
                else:
                    out.append(".*")
                    i += 2
            else:
                out.append("[^/]*")
                i += 1
        elif c in "?+":
            if not char:
                raise GlobError(f"{c!r} at {i} follows no character it could apply to")
            out[-1] = f"(?:{out[-1]}){c}"
            i += 1
        elif c == "[":
            end = pattern.find("]", i + 2 if pattern.startswith(("[]", "[!]"), i) else i + 1)
            if end < 0:
                raise GlobError(f"'[' at {i} is not closed")
            body = pattern[i + 1 : end]
            if body.startswith("!"):
                body = "^" + body[1:]
            out.append(f"[{body.replace(chr(92), chr(92) * 2)}]")
            i = end + 1
        elif c == "\\":
            if i + 1 >= n:
                raise GlobError("a pattern cannot end with '\\'")
            out.append(re.escape(pattern[i + 1]))
            i += 2
        else:
            out.append(re.escape(c))
            i += 1
        char = one
    try:
        return re.compile("".join(out))
    except re.error as exc:
        raise GlobError(str(exc)) from exc


@dataclass(frozen=True, slots=True)
class PathPatterns:
    """Patterns in their order: (excludes, regex)."""

    patterns: tuple[tuple[bool, re.Pattern[str]], ...]

    def includes(self, path: str) -> bool:
        """Whether the patterns, read in order, leave `path` included."""
        included = False
        for excludes, regex in self.patterns:
            if included == excludes and regex.fullmatch(path):
                included = not excludes
        return included


def compile_patterns(patterns: Sequence[str]) -> PathPatterns:
    """GlobError naming the first malformed pattern."""
    compiled = []
    for pattern in patterns:
        excludes = pattern.startswith("!")
        body = pattern[1:] if excludes else pattern
        if not body:
            raise GlobError(f"{pattern!r}: an empty pattern")
        try:
            compiled.append((excludes, glob_regex(body)))
        except GlobError as exc:
            raise GlobError(f"{pattern!r}: {exc}") from exc
    return PathPatterns(tuple(compiled))
