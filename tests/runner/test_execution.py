from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest

from gateway.platform.runner.execution import how_it_ended


def test_an_ending_reads_as_its_error_code_says() -> None:
    assert how_it_ended(0) == "exit 0"
    assert how_it_ended(3) == "exit 3"
    # Popen's returncode of a command a signal ended is minus the signal (error_code signal_15)
    assert how_it_ended(-15) == "signal 15 (SIGTERM)"
    assert how_it_ended(-9) == "signal 9 (SIGKILL)"
    assert how_it_ended(-200) == "signal 200"


def test_secret_names_become_variable_names_by_one_rule() -> None:
    from gateway.platform.runner.execution import secret_variables

    assert secret_variables(["DEPLOY_TOKEN", "my-key.v2", "2fa", "my_key_v2", "é"]) == {
        "DEPLOY_TOKEN": "DEPLOY_TOKEN",
        "my-key.v2": "my_key_v2",
        "2fa": "_2fa",
        "é": "_",  # my_key_v2 is taken by my-key.v2, the first: left out
    }


def test_the_prompt_is_composed_in_the_documented_order() -> None:
    from pathlib import Path

    from gateway.platform.runner.execution import stdin_text
    from gateway.platform.runner.protocol import ClaimedRun

    run: ClaimedRun = {  # type: ignore[typeddict-item]
        "prompt": "Do the task.",
        "messages": [],
        "agent_config": {
            "agent": {"name": "builder"},
            "base_prompt": "You build.\n",
            "skill_documents": [
                {"name": "conventions", "description": "House style", "content": "x"},
                {"name": "nested/testing", "content": "y"},
            ],
        },
    }
    assert stdin_text(run, Path("/s")) == (
        "--- agent: builder ---\nYou build.\n\n"
        "--- skills ---\nSkills you may use; read a skill's SKILL.md before you follow it:\n"
        "- conventions: House style (/s/conventions/SKILL.md)\n"
        "- nested/testing (/s/nested/testing/SKILL.md)\n\n"
        "--- task ---\nDo the task."
    )
    plain: ClaimedRun = {"prompt": "Just this.", "messages": []}  # type: ignore[typeddict-item]
    assert stdin_text(plain) == "Just this."


def _execution(secrets: dict[str, str]) -> Any:
    """An execution of a claimed run with `secrets`, whose client is never called (nothing here
    reaches the API)."""
    from gateway.platform.runner.client import RunnerClient
    from gateway.platform.runner.execution import Execution

    run = {"run_id": "r1", "prompt": "p", "messages": [], "secrets": secrets}
    return Execution(RunnerClient("http://127.0.0.1:9", "key"), run, "true", 30.0)  # type: ignore[arg-type]


def test_masking_covers_text_and_the_bytes_of_any_file() -> None:
    execution = _execution({"TOKEN": "s3cr3t-value", "INNER": "s3cr3t", "SHORT": "abc"})
    execution.masks.append(("gh-t0ken", "GATEWAY_CHECKOUT_TOKEN"))
    text = "a s3cr3t-value, a s3cr3t, abc and gh-t0ken"
    assert execution.mask(text) == (
        "a [secret TOKEN], a [secret INNER], abc and [secret GATEWAY_CHECKOUT_TOKEN]"
    )  # the longer value first; a value under 4 characters is left
    binary = b"\x89PNG\x00s3cr3t-value\xff"
    assert execution.mask_bytes(binary) == b"\x89PNG\x00[secret TOKEN]\xff"


def test_a_skill_is_written_with_its_files_inside_its_directory(tmp_path: Path) -> None:
    from gateway.platform.runner.execution import write_skill

    skill = {
        "content": "---\nname: s\n---\nDo.\n",
        "files": [
            {"path": "scripts/run.sh", "content": "#!/bin/sh\necho run\n"},
            {"path": "notes.md", "content": "notes\n"},
            {"path": "../escape.md", "content": "no"},
            {"path": "SKILL.md", "content": "not over the SKILL.md"},
        ],
    }
    write_skill(tmp_path / "skills" / "s", skill)
    written = sorted(str(p.relative_to(tmp_path)) for p in tmp_path.rglob("*") if p.is_file())
    assert written == ["skills/s/SKILL.md", "skills/s/notes.md", "skills/s/scripts/run.sh"]
    assert (tmp_path / "skills/s/SKILL.md").read_text() == skill["content"]
    assert os.access(tmp_path / "skills/s/scripts/run.sh", os.X_OK)
    assert not os.access(tmp_path / "skills/s/notes.md", os.X_OK)


@pytest.mark.service  # it starts processes
def test_a_step_that_cannot_start_fails_as_the_shell_says(tmp_path: Path) -> None:
    execution = _execution({})
    env = dict(os.environ)
    assert execution._step(["sh", "-c", "echo ready"], env, str(tmp_path)) == (0, "ready\n")
    code, output = execution._step(["no-such-program-here"], env, str(tmp_path))
    assert code == 127 and "no-such-program-here" in output


def test_a_checkout_credential_is_used_for_its_own_repository_alone() -> None:
    from gateway.platform.runner.execution import credential_fits

    credential = {"provider": "github", "repository": "Codertocat/Hello-World", "token": "t0k"}
    assert credential_fits(credential, "github", "codertocat/hello-world")  # names' case
    assert not credential_fits(credential, "github", "Codertocat/Other")
    assert not credential_fits(credential, "gitlab", "Codertocat/Hello-World")
    assert not credential_fits(credential | {"token": ""}, "github", "Codertocat/Hello-World")
    assert not credential_fits(None, "github", "Codertocat/Hello-World")


def test_a_harness_key_goes_to_the_variables_its_cli_reads() -> None:
    from gateway.platform.runner.execution import harness_key_variables

    secrets = {"claude-key": "v"}
    claude = {"type": "claude", "auth": {"source": "managedSecret", "secret_name": "claude-key"}}
    assert harness_key_variables(claude, secrets) == [("ANTHROPIC_API_KEY", "claude-key")]
    gemini = claude | {"type": "gemini"}
    assert harness_key_variables(gemini, secrets) == [("GEMINI_API_KEY", "claude-key")]
    assert harness_key_variables(claude, {}) == []  # the team has no such secret
    worker = {"type": "codex", "auth": {"source": "workerEnvironment"}}
    assert harness_key_variables(worker, secrets) == []  # the worker's own environment
    assert harness_key_variables({"type": "oz"}, secrets) == []
