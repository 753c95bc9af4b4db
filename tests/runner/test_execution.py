from __future__ import annotations

from gateway.runner.execution import how_it_ended


def test_an_ending_reads_as_its_error_code_says() -> None:
    assert how_it_ended(0) == "exit 0"
    assert how_it_ended(3) == "exit 3"
    # Popen's returncode of a command a signal ended is minus the signal (error_code signal_15)
    assert how_it_ended(-15) == "signal 15 (SIGTERM)"
    assert how_it_ended(-9) == "signal 9 (SIGKILL)"
    assert how_it_ended(-200) == "signal 200"
