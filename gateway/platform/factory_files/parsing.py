"""Parsing a posted tree away from the event loop that serves ingress.

Parsing and checking a tree is pure Python (strict YAML, the schemas, the builders): up to
MAX_TREE_NODES YAML values, a second or more of CPU on a busy host. On the serving event loop
that second stalls every request of the process, ingress included; in a thread it still holds
the GIL most of the time (libyaml's composer builds a whole document without letting go of it).
So a tree is parsed in a child process of a small pool (`MODE = "process"`), one parse at a
time per serving process, and at most MAX_WAITING more wait their turn: beyond them a plan or
apply is a 503 with Retry-After. docs/factory-files.md ("Limits") has the figures that chose
the process over a thread.

The pool starts on the first tree a process parses (a fresh interpreter importing
factory_format: a few hundred ms once) and stops with the process (Services.close).
"""

from __future__ import annotations

import asyncio
import multiprocessing
from collections.abc import Mapping
from concurrent.futures import Executor, ProcessPoolExecutor, ThreadPoolExecutor
from concurrent.futures.process import BrokenProcessPool
from typing import Any, Literal

from gateway.foundation.services import Services
from gateway.kernel.errors import Unavailable
from gateway.platform.factory_files.posted import Parsed, parse_posted

Mode = Literal["process", "thread", "inline"]
MODE: Mode = "process"
MAX_PARSING = 1  # parses at once in a serving process (a child each)
MAX_WAITING = 8  # parses waiting for their turn; beyond, 503


class _TreeParser:
    """The pool and the turns of one process (one event loop)."""

    def __init__(self, key: int) -> None:
        self.key = key
        self.executor: Executor | None = None
        self.turns: asyncio.Semaphore | None = None
        self.waiting = 0

    async def parse(self, services: Services, files: Mapping[str, Any]) -> Parsed:
        if MODE == "inline":
            return parse_posted(files)
        if self.turns is None:
            self.turns = asyncio.Semaphore(MAX_PARSING)
        if self.turns.locked() and self.waiting >= MAX_WAITING:
            raise Unavailable(
                f"files: {MAX_PARSING + MAX_WAITING} factory trees are being parsed or wait "
                "for their turn here; try again in a moment",
                retry_after=2,
            )
        self.waiting += 1
        try:
            await self.turns.acquire()
        finally:
            self.waiting -= 1
        try:
            executor = self._executor(services)
            try:
                return await asyncio.get_running_loop().run_in_executor(
                    executor, parse_posted, dict(files)
                )
            except BrokenProcessPool:  # its child died (killed): a new pool for the next one
                self.executor = None
                executor.shutdown(wait=False)
                raise
        finally:
            self.turns.release()

    def _executor(self, services: Services) -> Executor:
        if self.executor is None:
            if MODE == "process":
                # spawn: a fresh interpreter, never a fork of a process with threads and a loop
                context = multiprocessing.get_context("spawn")
                self.executor = ProcessPoolExecutor(MAX_PARSING, mp_context=context)
            else:
                self.executor = ThreadPoolExecutor(MAX_PARSING, thread_name_prefix="tree-parse")
            services.lifetime.on_close(self.close)
        return self.executor

    async def close(self) -> None:
        _PARSERS.pop(self.key, None)
        executor, self.executor = self.executor, None
        if executor is not None:
            await asyncio.to_thread(executor.shutdown, wait=True, cancel_futures=True)


_PARSERS: dict[int, _TreeParser] = {}


async def parse_off_loop(services: Services, files: Mapping[str, Any]) -> Parsed:
    """`parse_posted(files)`, off the event loop (see the module's notes)."""
    parser = _PARSERS.get(id(services))
    if parser is None:
        parser = _PARSERS[id(services)] = _TreeParser(id(services))
    return await parser.parse(services, files)
