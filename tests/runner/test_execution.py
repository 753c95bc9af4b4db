from __future__ import annotations

from gateway.runner.execution import how_it_ended


def test_an_ending_reads_as_its_error_code_says() -> None:
    assert how_it_ended(0) == "exit 0"
    assert how_it_ended(3) == "exit 3"
    # Popen's returncode of a command a signal ended is minus the signal (error_code signal_15)
    assert how_it_ended(-15) == "signal 15 (SIGTERM)"
    assert how_it_ended(-9) == "signal 9 (SIGKILL)"
    assert how_it_ended(-200) == "signal 200"


def test_secret_names_become_variable_names_by_one_rule() -> None:
    from gateway.runner.execution import secret_variables

    assert secret_variables(["DEPLOY_TOKEN", "my-key.v2", "2fa", "my_key_v2", "é"]) == {
        "DEPLOY_TOKEN": "DEPLOY_TOKEN",
        "my-key.v2": "my_key_v2",
        "2fa": "_2fa",
        "é": "_",  # my_key_v2 is taken by my-key.v2, the first: left out
    }


def test_the_prompt_is_composed_in_the_documented_order() -> None:
    from pathlib import Path

    from gateway.runner.execution import stdin_text
    from gateway.runner.protocol import ClaimedRun

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
