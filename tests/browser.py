"""Headless Chromium for the browser tests: the DOM of a page after load, with no network."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path


def chromium() -> str | None:
    for name in ("chromium", "chromium-browser", "google-chrome"):
        if shutil.which(name):
            return shutil.which(name)
    return None


def dump_dom(url: str, tmp_path: Path, budget_ms: int = 20_000, window: str | None = None, timeout: int = 120) -> str:
    """The DOM after load in headless Chromium, every host unresolvable (offline), `budget_ms` of
    virtual time for the page's scripts."""
    cmd = [
        chromium(),
        "--headless",
        "--no-sandbox",
        "--disable-gpu",
        "--disable-quic",
        "--no-first-run",
        "--disable-background-networking",
        "--disable-component-update",
        "--disable-sync",
        f"--user-data-dir={tmp_path / 'chrome'}",
        "--host-resolver-rules=MAP * ~NOTFOUND",
        *([f"--window-size={window}"] if window else []),
        f"--virtual-time-budget={budget_ms}",
        "--dump-dom",
        url,
    ]
    return subprocess.run(cmd, capture_output=True, text=True, timeout=timeout).stdout
