"""`gateway runner --checkout`: the repository a run works on, cloned into its working directory
before setup (docs/runners.md#a-working-copy).

The repository is the one the run's event names (a GitHub or GitLab push, pull or merge request,
issue, comment, ... payload), at the event's ref: a push's commit, a pull request's head
(`refs/pull/<n>/head`), a merge request's (`refs/merge-requests/<iid>/head`), else the default
branch. A run whose event names none gets the first repository its factory lists
(`agent_config.repositories`), at its default branch. A URL template maps the provider, owner and
name to the clone URL. A token is handed to git in its environment alone (`GIT_CONFIG_*`:
`http.<origin>/.extraHeader`), so it is never written to .git/config, the remote URL or any file.

Pure functions: which repository and ref, which git commands, which environment; running them
is the execution's (gateway.platform.runner.execution).
"""

from __future__ import annotations

import base64
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, TypeGuard
from urllib.parse import urlsplit

DEFAULT_TEMPLATES = {
    "github": "https://github.com/{owner}/{name}.git",
    "gitlab": "https://gitlab.com/{owner}/{name}.git",
}
# the user name each forge takes with a token as the password of HTTP basic authentication
TOKEN_USERS = {"github": "x-access-token", "gitlab": "oauth2"}
NO_COMMIT = "0" * 40  # a push's `after` when it deleted the ref
# what the runner leaves in the working directory, kept out of `git status` (.git/info/exclude)
RUNNER_FILES = (
    "/.run/",
    "/attachments/",
    "/outputs/",
    "/messages.jsonl",
    "/event-payload.json",
)
_SEGMENT = re.compile(r"[A-Za-z0-9_.][A-Za-z0-9_.-]{0,99}\Z")
_REF = re.compile(r"refs/[A-Za-z0-9_.][A-Za-z0-9_./+@-]{0,250}\Z")
CHECKOUT_FAILED = "checkout_failed"  # the error_code of a run whose repository was not cloned


@dataclass(frozen=True)
class Target:
    """A repository at a ref: `ref` the ref to fetch (None: the default branch, HEAD), `commit`
    the commit the event names (fetched first; the ref when the remote refuses it), `branch`
    the local branch to check out (None: a detached head)."""

    provider: str  # github | gitlab
    owner: str  # a GitLab project's namespace may hold `/`
    name: str
    ref: str | None = None
    commit: str | None = None
    branch: str | None = None

    @property
    def full_name(self) -> str:
        return f"{self.owner}/{self.name}"

    def describe(self) -> str:
        at = self.commit or self.ref or "its default branch"
        return f"{self.provider} {self.full_name} at {at}"


@dataclass(frozen=True)
class CheckoutSettings:
    """`templates`: the clone URL template of each provider (`{provider}`, `{owner}`, `{name}`);
    `token`: the token for private repositories (GATEWAY_CHECKOUT_TOKEN), None for none."""

    templates: Mapping[str, str] = field(default_factory=lambda: dict(DEFAULT_TEMPLATES))
    token: str | None = None
    depth: int = 0  # 0: the whole history

    def clone_url(self, target: Target) -> str:
        template = self.templates.get(target.provider) or DEFAULT_TEMPLATES[target.provider]
        return template.format(provider=target.provider, owner=target.owner, name=target.name)


def parse_templates(values: list[str]) -> dict[str, str]:
    """`--clone-url-template` values: `PROVIDER=TEMPLATE` sets one provider's, a plain
    `TEMPLATE` every provider's; later values win. ValueError for a template that names a
    placeholder other than {provider}, {owner}, {name}, or a provider not known."""
    templates = dict(DEFAULT_TEMPLATES)
    for value in values:
        provider, sep, template = value.partition("=")
        if sep and provider in DEFAULT_TEMPLATES and "{" not in provider:
            providers = [provider]
        else:
            providers, template = list(DEFAULT_TEMPLATES), value
        try:
            template.format(provider="p", owner="o", name="n")
        except (KeyError, IndexError, ValueError) as exc:
            raise ValueError(
                f"clone URL template {value!r}: use {{provider}}, {{owner}} and {{name}} ({exc})"
            ) from None
        for each in providers:
            templates[each] = template
    return templates


def target_of(payload: Any, repositories: Any) -> Target | None:
    """The repository the run works on: the event's (`payload`, the delivery's body), else the
    first of its factory's (`repositories`: agent_config.repositories); None for neither."""
    if isinstance(payload, dict):
        found = _gitlab(payload) if "object_kind" in payload else _github(payload)
        if found is not None and _names_ok(found.owner, found.name):
            return found
    if isinstance(repositories, list):
        for repository in repositories:
            if not isinstance(repository, dict):
                continue
            owner, name = repository.get("owner"), repository.get("name")
            provider = str(repository.get("provider") or "github").lower()
            if not (_text(owner) and _text(name)) or provider not in DEFAULT_TEMPLATES:
                continue
            if _names_ok(owner, name):
                return Target(provider, owner, name)
    return None


def _github(payload: dict[str, Any]) -> Target | None:
    repository = payload.get("repository")
    if not isinstance(repository, dict):
        return None
    owner = (repository.get("owner") or {}).get("login") or (repository.get("owner") or {}).get(
        "name"
    )
    name = repository.get("name")
    if not (_text(owner) and _text(name)):
        full = repository.get("full_name")
        if not (_text(full) and full.count("/") == 1):
            return None
        owner, name = full.split("/")
    default = _branch(repository.get("default_branch"))
    pull = payload.get("pull_request")
    if isinstance(pull, dict) and isinstance(pull.get("number"), int):
        head = pull.get("head") or {}
        return Target(
            "github",
            owner,
            name,
            ref=f"refs/pull/{pull['number']}/head",
            commit=_commit(head.get("sha")),
            branch=_branch(head.get("ref")),
        )
    ref, after = _ref(payload.get("ref")), _commit(payload.get("after"))
    if ref is not None and "after" in payload:  # a push
        if after is None or payload.get("deleted"):  # the ref is gone: the default branch
            return Target("github", owner, name, ref=_heads(default), branch=default)
        return Target("github", owner, name, ref=ref, commit=after, branch=_branch_of(ref))
    return Target("github", owner, name, ref=_heads(default), branch=default)


def _gitlab(payload: dict[str, Any]) -> Target | None:
    project = payload.get("project")
    if not isinstance(project, dict):
        return None
    path = project.get("path_with_namespace")
    if not (_text(path) and "/" in path):
        return None
    owner, name = path.rsplit("/", 1)
    default = _branch(project.get("default_branch"))
    kind = payload.get("object_kind")
    if kind in ("push", "tag_push"):
        ref = _ref(payload.get("ref"))
        commit = _commit(payload.get("checkout_sha")) or _commit(payload.get("after"))
        if ref is not None and commit is not None:
            return Target("gitlab", owner, name, ref=ref, commit=commit, branch=_branch_of(ref))
        return Target("gitlab", owner, name, ref=_heads(default), branch=default)
    merge = payload.get("merge_request") if kind == "note" else payload.get("object_attributes")
    if kind in ("merge_request", "note") and isinstance(merge, dict) and merge.get("iid"):
        last = merge.get("last_commit") or {}
        return Target(
            "gitlab",
            owner,
            name,
            ref=f"refs/merge-requests/{merge['iid']}/head",
            commit=_commit(last.get("id") if isinstance(last, dict) else None),
            branch=_branch(merge.get("source_branch")),
        )
    return Target("gitlab", owner, name, ref=_heads(default), branch=default)


Argv = list[str]


def git_steps(target: Target, url: str, depth: int = 0) -> list[list[Argv]]:
    """The git commands that make the working directory a working copy of `target`, in order;
    each step is one or more ways of doing it, the first that works wins: the fetch of the
    event's commit (which a remote may refuse to serve by id), then of its ref (HEAD for the
    default branch)."""
    fetch = ["git", "fetch", "--no-tags", "--quiet"]
    if depth > 0:
        fetch.append(f"--depth={depth}")
    ways = [target.commit] if target.commit else []
    ways.append(target.ref or "HEAD")
    return [
        [["git", "init", "--quiet"]],
        [["git", "remote", "add", "origin", url]],
        [[*fetch, "--end-of-options", "origin", way] for way in ways],
        [checkout_step(target)],
    ]


def checkout_step(target: Target) -> list[str]:
    if target.branch:
        return ["git", "checkout", "--quiet", "-B", target.branch, "FETCH_HEAD"]
    return ["git", "checkout", "--quiet", "--detach", "FETCH_HEAD"]


def git_environment(
    base: Mapping[str, str], target: Target, url: str, token: str | None
) -> dict[str, str]:
    """git's environment: `base`, no prompt for credentials, and with a token, an Authorization
    header for the clone URL's origin alone, given as configuration in the environment
    (GIT_CONFIG_COUNT/KEY/VALUE, git 2.31+): nothing of it is written to disk."""
    env = dict(base)
    env["GIT_TERMINAL_PROMPT"] = "0"
    env.pop("GIT_ASKPASS", None)
    parts = urlsplit(url)
    if token and sends_token(url):
        user = TOKEN_USERS.get(target.provider, "x-access-token")
        basic = base64.b64encode(f"{user}:{token}".encode()).decode()
        count = int(env.get("GIT_CONFIG_COUNT", "0") or "0")
        env[f"GIT_CONFIG_KEY_{count}"] = f"http.{parts.scheme}://{parts.netloc}/.extraHeader"
        env[f"GIT_CONFIG_VALUE_{count}"] = f"Authorization: Basic {basic}"
        env["GIT_CONFIG_COUNT"] = str(count + 1)
    return env


def sends_token(url: str) -> bool:
    """Whether git is given a token for `url`: an HTTP(S) origin's (a file:// or ssh remote
    takes none)."""
    parts = urlsplit(url)
    return parts.scheme in ("http", "https") and bool(parts.hostname)


def header_values(token: str | None, provider: str) -> list[str]:
    """The forms of `token` git could print (the header's base64), to be masked like it."""
    if not token:
        return []
    user = TOKEN_USERS.get(provider, "x-access-token")
    return [token, base64.b64encode(f"{user}:{token}".encode()).decode()]


def _text(value: object) -> TypeGuard[str]:
    return isinstance(value, str) and bool(value.strip())


def _names_ok(owner: str, name: str) -> bool:
    """Owner (namespace) and name as the forges allow them: they go into a URL, and a payload
    is the sender's text."""
    parts = [*owner.split("/"), name]
    return all(_SEGMENT.match(part) and part not in (".", "..") for part in parts)


def _ref(value: object) -> str | None:
    """A ref git may be given as an argument: under refs/, no option, no space."""
    if not (_text(value) and _REF.match(value)):
        return None
    parts = value.split("/")
    return value if all(part and part[0] not in "-." for part in parts) else None


def _commit(value: object) -> str | None:
    if not (isinstance(value, str) and len(value) in (40, 64)):
        return None
    hexadecimal = all(c in "0123456789abcdef" for c in value.lower())
    return value if hexadecimal and value != NO_COMMIT[: len(value)] else None


def _branch(value: object) -> str | None:
    if not (isinstance(value, str) and _ref("refs/heads/" + value.removeprefix("refs/heads/"))):
        return None
    return value.removeprefix("refs/heads/")


def _heads(branch: str | None) -> str | None:
    return f"refs/heads/{branch}" if branch else None


def _branch_of(ref: str) -> str | None:
    return ref.removeprefix("refs/heads/") if ref.startswith("refs/heads/") else None
