"""A headless Chromium driven over the Chrome DevTools Protocol, with the websocket client the
project already has (websockets, through uvicorn[standard]): enough to navigate, fill and
submit forms, accept confirm() dialogs, read cookies and take screenshots.

Chromium comes from the OS packages (/usr/bin/chromium). When it is missing, `find_chromium`
installs it with apt-get, or fails the test saying how: a browser test is never skipped.
"""

from __future__ import annotations

import base64
import contextlib
import json
import shutil
import subprocess
import time
import urllib.request
from pathlib import Path
from typing import Any

import pytest
from websockets.sync.client import ClientConnection, connect

DIALOG = "Page.javascriptDialogOpening"


def find_chromium() -> str:
    found = shutil.which("chromium") or shutil.which("chromium-browser")
    if found:
        return found
    install = subprocess.run(
        ["apt-get", "install", "-y", "--no-install-recommends", "chromium"],
        capture_output=True,
        text=True,
        check=False,
    )
    found = shutil.which("chromium")
    if found is None:
        pytest.fail(
            "Chromium is required for the console's browser test and could not be installed "
            f"(apt-get install -y chromium): {install.stderr[-500:]}"
        )
    return found


class Browser:
    def __init__(self, binary: str, port: int, profile: Path) -> None:
        self.proc = subprocess.Popen(
            [
                binary,
                "--headless=new",
                "--no-sandbox",  # tests may run as root, which the sandbox refuses
                "--disable-gpu",
                "--no-first-run",
                "--window-size=1280,900",
                f"--remote-debugging-port={port}",
                f"--user-data-dir={profile}",
                "about:blank",
            ],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        self._next_id = 0
        self._open = contextlib.ExitStack()
        try:
            self.ws = self._open.enter_context(self._connect(port))
            self.call("Page.enable")
            self.call("Network.enable")
        except BaseException:
            self.close()
            raise

    def _connect(self, port: int) -> ClientConnection:
        deadline = time.monotonic() + 30
        while True:
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{port}/json/list") as answer:
                    targets = json.load(answer)
                page = next(t for t in targets if t["type"] == "page")
                return connect(page["webSocketDebuggerUrl"], max_size=None)
            except (OSError, StopIteration):
                if time.monotonic() > deadline or self.proc.poll() is not None:
                    raise RuntimeError("chromium did not open its DevTools port") from None
                time.sleep(0.2)

    def call(self, method: str, **params: Any) -> dict[str, Any]:
        """One command; dialogs that open meanwhile (confirm) are accepted."""
        self._next_id += 1
        wanted = self._next_id
        self.ws.send(json.dumps({"id": wanted, "method": method, "params": params}))
        while True:
            message = json.loads(self.ws.recv(timeout=30))
            if message.get("method") == DIALOG:
                self._next_id += 1
                accept = {"accept": True}
                command = {"id": self._next_id, "method": "Page.handleJavaScriptDialog"}
                self.ws.send(json.dumps(command | {"params": accept}))
            elif message.get("id") == wanted:
                if "error" in message:
                    raise RuntimeError(f"{method}: {message['error']}")
                result: dict[str, Any] = message["result"]
                return result

    def evaluate(self, expression: str) -> Any:
        result = self.call(
            "Runtime.evaluate", expression=expression, returnByValue=True, userGesture=True
        )
        if "exceptionDetails" in result:
            raise RuntimeError(f"{expression}: {result['exceptionDetails']}")
        return result["result"].get("value")

    def evaluate_async(self, expression: str) -> Any:
        """The value of a promise the expression makes, once it settles."""
        result = self.call(
            "Runtime.evaluate", expression=expression, returnByValue=True, awaitPromise=True
        )
        if "exceptionDetails" in result:
            raise RuntimeError(f"{expression[:200]}: {result['exceptionDetails']}")
        return result["result"].get("value")

    def goto(self, url: str) -> None:
        self.call("Page.navigate", url=url)
        self.wait_for("document.readyState === 'complete' && location.href !== 'about:blank'")

    def submit(self, selector: str) -> None:
        """Clicks the submit button of the form `selector` and waits for the next page."""
        self.evaluate("window.__before_submit = true")
        self.evaluate(f"document.querySelector({json.dumps(selector)}).click()")
        self.wait_for("window.__before_submit === undefined && document.readyState === 'complete'")

    def wait_for(self, condition: str, timeout: float = 20.0) -> Any:
        deadline = time.monotonic() + timeout
        while True:
            try:
                value = self.evaluate(condition)
            except RuntimeError:  # the page is being replaced
                value = None
            if value:
                return value
            if time.monotonic() > deadline:
                raise AssertionError(f"not met in {timeout} s: {condition}")
            time.sleep(0.1)

    def text(self) -> str:
        value: str = self.evaluate("document.body.innerText")
        return value

    def cookies(self) -> list[dict[str, Any]]:
        found: list[dict[str, Any]] = self.call("Network.getCookies")["cookies"]
        return found

    def screenshot(self, path: Path) -> None:
        data = self.call("Page.captureScreenshot", format="png")["data"]
        path.write_bytes(base64.b64decode(data))

    def close(self) -> None:
        try:
            self._open.close()
        finally:
            self.proc.terminate()
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(10)
