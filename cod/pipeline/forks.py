"""Processes forked from one server process (multiprocessing's forkserver) that imported the heavy
modules once: a forked process starts in milliseconds where `python -m ...` spends seconds
importing torch, pandas or papermill. `cod.pipeline.experiments` forks its CPU runs this way,
`cod.pipeline.runner` its stage commands.

The server is one per process and imports what `FORKS.set_forkserver_preload` names when it
starts (at the first fork). A forked process also runs its parent's main module again, as
`__mp_main__` (multiprocessing's way of giving it the parent's `__main__`), so a server must not
preload that module itself: runpy warns when it runs a module that is already imported ("found in
sys.modules ... prior to execution"). `preloadable` leaves it out.
"""

from __future__ import annotations

import multiprocessing
import multiprocessing.connection
import os
import sys
import threading
from typing import Any, Callable, Iterable

FORKS = multiprocessing.get_context("forkserver")

# multiprocessing reads a forked process's exit status from a pipe in `poll`, which is not thread-safe:
# `Process.start` polls every other live process, so a start in one thread could read the status
# that another thread's `join` was reading, and that join then met the pipe's end: exit status 255
# for a run that completed. Starts and joins hold this lock; the wait for a process's end does not.
FORK_STATUS = threading.Lock()


def main_module() -> str | None:
    """The name this process's main module was run by (`python -m NAME`); None for a script or `-c`."""
    return getattr(getattr(sys.modules.get("__main__"), "__spec__", None), "name", None)


def preloadable(modules: Iterable[str]) -> list[str]:
    """`modules` less this process's main module (see the module's docstring), sorted."""
    return sorted(set(modules) - {main_module()})


class Fork:
    """`target(*args)` in a process forked from `FORKS`' server, started at once. Safe to use from
    several threads at once."""

    def __init__(self, target: Callable[..., Any], args: tuple):
        self.process = FORKS.Process(target=target, args=args)
        with FORK_STATUS:
            self.process.start()

    def send_signal(self, signum: int) -> None:
        os.kill(self.process.pid, signum)

    def wait(self) -> int:
        """The exit status (negative: killed by that signal), once the process has ended."""
        multiprocessing.connection.wait([self.process.sentinel])  # the server has sent the exit status
        with FORK_STATUS:
            self.process.join()
        return self.process.exitcode


def exit_status_of_fork(target: Callable[..., Any], args: tuple) -> int:
    """`target(*args)` in a process forked from `FORKS`' server; its exit status."""
    return Fork(target, args).wait()
