"""`llmsweep publish`: a static, offline site over many runs.

SITE_DIR/index.html lists every run (title, when it ran, sweep file and SHA-256, llmsweep version,
GPUs compared, the headline answer per model) with search and filters done by a small inline
script (no server, no network; a query may be given in the URL: index.html#q=h100&gpu=l40s).
SITE_DIR/runs/<name>/ holds each run's report.html as the run wrote it, with one link back to the
index added after its <body> tag, and beside it report.md with charts/, options.csv and the run's
manifest.json where the run wrote them. The site is written by outfolder.atomic_folder, like a
run's folder: it replaces SITE_DIR whole or not at all, only when SITE_DIR is empty or a site
`publish` wrote, and nothing outside SITE_DIR is written.
"""

from __future__ import annotations

import json
import os
import re
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

from llmsweep import __version__
from llmsweep.errors import LlmsweepError
from llmsweep.limits import UnreadableFile, read_regular_file
from llmsweep.outfolder import atomic_folder
from llmsweep.publish.runs import Run, load_run, run_folders

KIND = "publish"
MAX_COPIED_BYTES = 256 * 2**20  # one report or CSV copied into the site
COPIED = ("report.md", "options.csv", "manifest.json")  # copied as they are, when the run wrote them
BACK_LINK = (
    '<nav class="llmsweep-site" style="font:14px system-ui,sans-serif;margin:0 0 1rem">'
    '<a href="../../index.html">&larr; All runs</a></nav>'
)
_BODY = re.compile(rb"<body[^>]*>", re.I)


@dataclass(frozen=True)
class PublishResult:
    site: Path
    runs: tuple[str, ...]  # the runs/<name> folders, in the index's order
    index: Path


def publish(paths: list[str | Path], site_dir: str | Path) -> PublishResult:
    """Read every run the paths name (all checked first), then write the site into SITE_DIR."""
    if not paths:
        raise LlmsweepError("give at least one run folder (e.g. out/example) or a folder of runs (e.g. out)")
    site = Path(site_dir)
    folders = run_folders(paths)
    site_real = os.path.realpath(site)
    for folder in folders:
        real = os.path.realpath(folder)
        if site_real == real or site_real.startswith(real.rstrip(os.sep) + os.sep):
            where = "is the run folder" if site_real == real else "is inside the run folder"
            raise LlmsweepError(f"{site}: {where} {folder}; publish the site outside every run (e.g. -o site)")
    runs = sorted((load_run(f) for f in folders), key=lambda r: (-r.finished, r.name))
    slugs = _slugs(runs)
    entries = [_entry(run, slug) for run, slug in zip(runs, slugs, strict=True)]
    with atomic_folder(site, KIND, folders) as tmp:
        for run, slug in zip(runs, slugs, strict=True):
            _copy_run(run, tmp / "runs" / slug)
        html = _render({"runs": entries, "version": __version__, "gpus": _all(entries, "gpus")})
        (tmp / "index.html").write_text(html, encoding="utf-8")
        data = {
            "llmsweep_version": __version__,
            "runs": [
                {k: e[k] for k in ("slug", "name", "title", "finished", "sweep_file", "sweep_sha256", "version")}
                for e in entries
            ],
        }
        (tmp / "manifest.json").write_text(json.dumps(data, indent=2) + "\n", encoding="utf-8")
    return PublishResult(site, tuple(slugs), site / "index.html")


def _slugs(runs: list[Run]) -> list[str]:
    """runs/<name>; two runs of one name (from different out folders) become name, name-2, ..."""
    used: set[str] = set()
    out = []
    for run in runs:
        slug, n = run.name, 1
        while slug in used:
            n += 1
            slug = f"{run.name}-{n}"
        used.add(slug)
        out.append(slug)
    return out


def _all(entries: list[dict], key: str) -> list[str]:
    return sorted({v for e in entries for v in e[key]})


def _entry(run: Run, slug: str) -> dict:
    m = run.manifest
    gpus = list(m["catalog"]["gpus"])
    gpu_names = [str(m["catalog"]["gpus"][g].get("name") or g) for g in gpus]
    models = list(m["catalog"]["models"])
    finished = datetime.fromtimestamp(run.finished, UTC).strftime("%Y-%m-%d %H:%M UTC")
    answers = run.answers()
    has = {f: (run.folder / f).is_file() for f in ("report.html", *COPIED)}
    base = f"runs/{slug}/"
    entry = {
        "slug": slug,
        "name": run.name,
        "title": run.title,
        "finished": finished,
        "sweep_file": m["sweep"]["file"],
        "sweep_sha256": m["sweep"]["sha256"],
        "version": m["llmsweep_version"],
        "gpus": gpus,
        "gpu_names": gpu_names,
        "models": models,
        "answers": answers,
        "report": base + "report.html" if has["report.html"] else None,
        "markdown": base + "report.md" if has["report.md"] else None,
        "options": base + "options.csv" if has["options.csv"] else None,
        "manifest": base + "manifest.json",
    }
    words = [run.name, run.title, m["sweep"]["file"], m["sweep"]["sha256"], m["llmsweep_version"], finished]
    entry["search"] = " ".join([*words, *gpus, *gpu_names, *models, *answers]).lower()
    return entry


def _read(path: Path) -> bytes:
    try:
        return read_regular_file(path, MAX_COPIED_BYTES, f"a run's {path.name}")
    except UnreadableFile as e:
        raise LlmsweepError(f"{path}: {e}") from None
    except OSError as e:
        raise LlmsweepError(f"{path}: cannot read it: {e.strerror or e}") from None


def with_back_link(html: bytes) -> bytes:
    """The report as it is, with one link back to the index right after its <body> tag."""
    m = _BODY.search(html)
    at = m.end() if m else 0
    return html[:at] + BACK_LINK.encode() + html[at:]


def _copy_run(run: Run, dest: Path) -> None:
    dest.mkdir(parents=True)
    if (run.folder / "report.html").is_file():
        (dest / "report.html").write_bytes(with_back_link(_read(run.folder / "report.html")))
    for name in COPIED:
        if (run.folder / name).is_file():
            (dest / name).write_bytes(_read(run.folder / name))
    charts = run.folder / "charts"
    if (dest / "report.md").exists() and charts.is_dir() and not charts.is_symlink():
        (dest / "charts").mkdir()
        for svg in sorted(charts.glob("*.svg")):
            if svg.is_file() and not svg.is_symlink():
                (dest / "charts" / svg.name).write_bytes(_read(svg))


def _render(context: dict) -> str:
    from llmsweep.report import environment

    return environment(None, html=True).get_template("site/index.html.j2").render(**context)
