"""A progress bar with an ETA, for a person watching a terminal (the CLI decides when to show it).

The pipeline reports each stage with the share of the run done when it starts; the bar redraws one
line on the stream (`\\r`, no new lines) and the ETA is the time so far scaled by what is left:
elapsed x (1 - done) / done.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import TextIO

BAR_WIDTH = 24


def eta_text(elapsed_s: float, done: float) -> str:
    """'ETA 12 s', 'ETA 3 min 5 s', or 'ETA --' before anything is done."""
    if done <= 0:
        return "ETA --"
    left = max(0.0, elapsed_s * (1 - done) / done)
    if left < 60:
        return f"ETA {left:.0f} s"
    return f"ETA {int(left // 60)} min {int(left % 60)} s"


def bar_line(message: str, done: float, elapsed_s: float, width: int = BAR_WIDTH) -> str:
    """'[##########..............]  42% ranking options  ETA 7 s'."""
    done = min(max(done, 0.0), 1.0)
    filled = round(done * width)
    return f"[{'#' * filled}{'.' * (width - filled)}] {done:4.0%} {message}  {eta_text(elapsed_s, done)}"


class ProgressBar:
    """progress(message, done) redraws the bar; close() ends its line. `clock` is for tests."""

    def __init__(self, stream: TextIO, clock: Callable[[], float] = time.monotonic):
        self.stream, self.clock = stream, clock
        self.start = clock()
        self.width = 0

    def __call__(self, message: str, done: float | None = None) -> None:
        line = bar_line(message, done or 0.0, self.clock() - self.start)
        self.stream.write("\r" + line.ljust(self.width))
        self.stream.flush()
        self.width = len(line)

    def close(self) -> None:
        if self.width:
            self.stream.write("\r" + " " * self.width + "\r")
            self.stream.flush()
