"""`gateway runner --checkout` (gateway/platform/runner/checkout.py): which repository and ref a
run's event names, on GitHub's real example payloads (@octokit/webhooks-examples) and GitLab's
documented samples; the git commands it runs, against local bare repositories; and a token that
reaches a (stand-in, loopback) HTTPS-style git server in a header while nothing on disk holds
it."""

from __future__ import annotations

import base64
import os
import subprocess
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

from gateway.platform.runner.checkout import (
    CheckoutSettings,
    Target,
    git_environment,
    git_steps,
    parse_templates,
    target_of,
)
from tests.providers.conftest import GithubExamples, fixture, github_examples

__all__ = ["github_examples"]  # the fixture, used by name

GIT_ID = {
    "GIT_AUTHOR_NAME": "t",
    "GIT_AUTHOR_EMAIL": "t@example.com",
    "GIT_COMMITTER_NAME": "t",
    "GIT_COMMITTER_EMAIL": "t@example.com",
}


def git(*args: str, cwd: Path, env: dict[str, str] | None = None) -> str:
    done = subprocess.run(
        ["git", *args],
        cwd=cwd,
        env=(env or dict(os.environ)) | GIT_ID,
        capture_output=True,
        text=True,
        check=True,
    )
    return done.stdout.strip()


def test_a_push_checks_out_its_commit_on_its_branch(github_examples: GithubExamples) -> None:
    pushes = [p for p in github_examples["push"] if p["ref"] == "refs/heads/master"]
    assert pushes
    for push in pushes:
        target = target_of(push, None)
        assert target == Target(
            "github",
            "Codertocat",
            "Hello-World",
            ref="refs/heads/master",
            commit=push["after"],
            branch="master",
        )
    tag = next(p for p in github_examples["push"] if p["ref"].startswith("refs/tags/"))
    if not tag["deleted"]:
        assert target_of(tag, None) == Target(
            "github", "Codertocat", "Hello-World", ref=tag["ref"], commit=tag["after"]
        )
    deleted = next(p for p in github_examples["push"] if p["deleted"])
    assert target_of(deleted, None) == Target(  # the ref is gone: the default branch
        "github", "Codertocat", "Hello-World", ref="refs/heads/master", branch="master"
    )


def test_a_pull_request_checks_out_its_head(github_examples: GithubExamples) -> None:
    examples = github_examples["pull_request"] + github_examples["pull_request_review"]
    for payload in examples:
        pull = payload["pull_request"]
        owner, name = payload["repository"]["full_name"].split("/")
        assert target_of(payload, None) == Target(
            "github",
            owner,
            name,
            ref=f"refs/pull/{pull['number']}/head",
            commit=pull["head"]["sha"],
            branch=pull["head"]["ref"],
        )


def test_other_github_events_check_out_the_default_branch(
    github_examples: GithubExamples,
) -> None:
    for event in ("issues", "issue_comment", "release", "workflow_run"):
        for payload in github_examples[event]:
            repository = payload["repository"]
            target = target_of(payload, None)
            assert target is not None, event
            assert target.full_name == repository["full_name"]
            assert target.ref == f"refs/heads/{repository['default_branch']}"
            assert target.commit is None


def test_gitlab_events_name_their_project() -> None:
    merge = fixture("gitlab", "merge_request_open")
    assert target_of(merge, None) == Target(
        "gitlab",
        "gitlabhq",
        "gitlab-test",
        ref="refs/merge-requests/1/head",
        branch="ms-viewport",
    )
    note = fixture("gitlab", "note_merge_request")
    target = target_of(note, None)
    assert target is not None and target.ref == "refs/merge-requests/1/head"
    assert target.full_name == "gitlab-org/gitlab-test"
    issue = fixture("gitlab", "issue_open")
    assert target_of(issue, None) == Target(
        "gitlab", "gitlabhq", "gitlab-test", ref="refs/heads/master", branch="master"
    )
    push = {
        "object_kind": "push",
        "ref": "refs/heads/main",
        "checkout_sha": "a" * 40,
        "project": {"path_with_namespace": "group/sub/app", "default_branch": "main"},
    }
    assert target_of(push, None) == Target(
        "gitlab", "group/sub", "app", ref="refs/heads/main", commit="a" * 40, branch="main"
    )


def test_without_an_event_the_factorys_first_repository() -> None:
    repositories = [{"owner": "acme", "name": "api"}, {"owner": "acme", "name": "web"}]
    assert target_of(None, repositories) == Target("github", "acme", "api")
    assert target_of({"action": "build"}, repositories) == Target("github", "acme", "api")
    gitlab = [{"owner": "team", "name": "app", "provider": "gitlab"}]
    assert target_of(None, gitlab) == Target("gitlab", "team", "app")
    assert target_of({"action": "build"}, None) is None
    assert target_of(None, []) is None


def test_a_payload_cannot_smuggle_options_or_paths_into_git() -> None:
    repositories = [{"owner": "acme", "name": "api"}]
    for repository in (
        {"full_name": "../../etc"},
        {"owner": {"login": ".."}, "name": "x"},
        {"owner": {"login": "acme"}, "name": "a b"},
    ):
        assert target_of({"repository": repository}, repositories) == Target(
            "github", "acme", "api"
        )
    push = {
        "ref": "--upload-pack=touch /tmp/owned",
        "after": "b" * 40,
        "repository": {"owner": {"login": "acme"}, "name": "api", "default_branch": "-f"},
    }
    target = target_of(push, None)
    assert target == Target("github", "acme", "api")  # no ref, no branch: HEAD, detached
    steps = git_steps(target, "https://example.invalid/acme/api.git")
    fetch = ["git", "fetch", "--no-tags", "--quiet", "--end-of-options", "origin", "HEAD"]
    assert steps[2:] == [[fetch], [["git", "checkout", "--quiet", "--detach", "FETCH_HEAD"]]]


def test_url_templates_per_provider_or_for_all() -> None:
    target = Target("gitlab", "group/sub", "app")
    assert CheckoutSettings().clone_url(target) == "https://gitlab.com/group/sub/app.git"
    templates = parse_templates(["file:///srv/{provider}/{owner}/{name}.git"])
    assert CheckoutSettings(templates).clone_url(target) == "file:///srv/gitlab/group/sub/app.git"
    templates = parse_templates(["gitlab=https://git.example.com/{owner}/{name}"])
    settings = CheckoutSettings(templates)
    assert settings.clone_url(target) == "https://git.example.com/group/sub/app"
    assert settings.clone_url(Target("github", "o", "n")) == "https://github.com/o/n.git"
    with pytest.raises(ValueError, match="clone URL template"):
        parse_templates(["https://host/{repo}.git"])


@pytest.fixture
def origin(tmp_path: Path) -> dict[str, Any]:
    """A bare repository acme/api.git with two commits on main and a pull request's head ref."""
    bare = tmp_path / "git" / "acme" / "api.git"
    bare.mkdir(parents=True)
    git("init", "--quiet", "--bare", "--initial-branch=main", cwd=bare)
    work = tmp_path / "author"
    work.mkdir()
    git("init", "--quiet", "--initial-branch=main", cwd=work)
    (work / "README").write_text("first\n")
    git("add", "README", cwd=work)
    git("commit", "--quiet", "-m", "first", cwd=work)
    first = git("rev-parse", "HEAD", cwd=work)
    (work / "README").write_text("second\n")
    git("commit", "--quiet", "-am", "second", cwd=work)
    second = git("rev-parse", "HEAD", cwd=work)
    git("push", "--quiet", str(bare), "main", cwd=work)
    git("checkout", "--quiet", "-b", "feature", first, cwd=work)
    (work / "FEATURE").write_text("feature\n")
    git("add", "FEATURE", cwd=work)
    git("commit", "--quiet", "-m", "feature", cwd=work)
    head = git("rev-parse", "HEAD", cwd=work)
    git("push", "--quiet", str(bare), "feature:refs/pull/7/head", cwd=work)
    template = f"file://{tmp_path}/git/{{owner}}/{{name}}.git"
    return {"first": first, "second": second, "head": head, "template": template}


def checkout(tmp_path: Path, target: Target, url: str, env: dict[str, str] | None = None) -> Path:
    """The steps run as the runner runs them, in tmp_path/work."""
    where = tmp_path / "work"
    where.mkdir()
    if env is None:
        env = git_environment(dict(os.environ), target, url, None)
    for ways in git_steps(target, url):
        for way in ways:  # the first that works
            if subprocess.run(way, cwd=where, env=env, capture_output=True).returncode == 0:
                break
        else:
            raise AssertionError(f"no way of {ways} worked")
    return where


@pytest.mark.service  # git processes, a loopback server
def test_the_steps_check_out_a_commit_behind_the_branch_tip(
    tmp_path: Path, origin: dict[str, Any]
) -> None:
    target = Target("github", "acme", "api", "refs/heads/main", origin["first"], "main")
    url = CheckoutSettings(parse_templates([origin["template"]])).clone_url(target)
    work = checkout(tmp_path, target, url)
    assert git("rev-parse", "HEAD", cwd=work) == origin["first"]
    assert git("branch", "--show-current", cwd=work) == "main"
    assert (work / "README").read_text() == "first\n"
    assert git("remote", "get-url", "origin", cwd=work) == url


@pytest.mark.service  # git processes, a loopback server
def test_the_steps_check_out_a_pull_requests_head(tmp_path: Path, origin: dict[str, Any]) -> None:
    target = Target("github", "acme", "api", "refs/pull/7/head", origin["head"], "feature")
    url = CheckoutSettings(parse_templates([origin["template"]])).clone_url(target)
    work = checkout(tmp_path, target, url)
    assert git("rev-parse", "HEAD", cwd=work) == origin["head"]
    assert (work / "FEATURE").exists()


class GitOverHttp(BaseHTTPRequestHandler):
    """A stand-in for a forge's smart HTTP: git-http-backend over the bare repositories, for
    requests carrying the expected Authorization header (401 otherwise)."""

    root = ""
    expected = ""
    tokens: set[str] = set()  # besides `expected`: any of these as a forge's basic auth
    seen: list[str | None] = []

    def _allowed(self, header: str | None) -> bool:
        if header == self.expected:
            return True
        scheme, _, value = (header or "").partition(" ")
        try:
            user, _, token = base64.b64decode(value).decode().partition(":")
        except ValueError:
            return False
        return scheme == "Basic" and user in ("x-access-token", "oauth2") and token in self.tokens

    def do_GET(self) -> None:
        self._serve()

    def do_POST(self) -> None:
        self._serve()

    def _serve(self) -> None:
        self.seen.append(self.headers.get("Authorization"))
        if not self._allowed(self.headers.get("Authorization")):
            self.send_response(401)
            self.send_header("WWW-Authenticate", 'Basic realm="git"')
            self.send_header("Content-Length", "0")
            self.end_headers()
            return
        path, _, query = self.path.partition("?")
        body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
        env = {
            "GIT_PROJECT_ROOT": self.root,
            "GIT_HTTP_EXPORT_ALL": "1",
            "PATH_INFO": path,
            "QUERY_STRING": query,
            "REQUEST_METHOD": self.command,
            "CONTENT_TYPE": self.headers.get("Content-Type", ""),
            "CONTENT_LENGTH": str(len(body)),
            "GIT_PROTOCOL": self.headers.get("Git-Protocol", ""),
            "PATH": os.environ["PATH"],
        }
        backend = subprocess.run(
            ["git", "http-backend"], input=body, env=env, capture_output=True, check=True
        )
        head, _, content = backend.stdout.partition(b"\r\n\r\n")
        headers = [line.split(": ", 1) for line in head.decode().split("\r\n") if line]
        status = next((int(v.split()[0]) for k, v in headers if k == "Status"), 200)
        self.send_response(status)
        for key, value in headers:
            if key != "Status":
                self.send_header(key, value)
        self.send_header("Content-Length", str(len(content)))
        self.end_headers()
        self.wfile.write(content)

    def log_message(self, *args: Any) -> None:
        pass


@pytest.fixture
def http_origin(tmp_path: Path, origin: dict[str, Any]) -> Iterator[str]:
    GitOverHttp.root = str(tmp_path / "git")
    GitOverHttp.seen, GitOverHttp.tokens = [], set()
    server = ThreadingHTTPServer(("127.0.0.1", 0), GitOverHttp)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield f"http://127.0.0.1:{server.server_address[1]}/{{owner}}/{{name}}.git"
    server.shutdown()
    server.server_close()


@pytest.mark.service  # git processes, a loopback server
def test_a_token_reaches_the_server_in_a_header_and_no_file(
    tmp_path: Path, origin: dict[str, Any], http_origin: str
) -> None:
    token = "ghs_t0ken-for-the-clone"
    basic = base64.b64encode(f"x-access-token:{token}".encode()).decode()
    GitOverHttp.expected = f"Basic {basic}"
    target = Target("github", "acme", "api", "refs/heads/main", origin["second"], "main")
    url = CheckoutSettings(parse_templates([http_origin])).clone_url(target)
    env = git_environment(dict(os.environ), target, url, token)
    work = checkout(tmp_path, target, url, env)
    assert git("rev-parse", "HEAD", cwd=work) == origin["second"]
    assert GitOverHttp.seen and set(GitOverHttp.seen) == {f"Basic {basic}"}
    for path in work.joinpath(".git").rglob("*"):
        if path.is_file():
            data = path.read_bytes()
            assert token.encode() not in data and basic.encode() not in data, path
    assert token not in git("remote", "get-url", "origin", cwd=work)

    # without the token, the server says no and git fails without asking for one
    other = Target("github", "acme", "api", "refs/heads/main", None, "main")
    bare_env = git_environment(dict(os.environ), other, url, None)
    elsewhere = tmp_path / "no-token"
    elsewhere.mkdir()
    with pytest.raises(AssertionError, match="no way of"):
        checkout(elsewhere, other, url, bare_env)
