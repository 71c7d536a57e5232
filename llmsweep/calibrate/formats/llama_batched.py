"""llama.cpp llama-batched-bench (checked: tools/batched-bench/batched-bench.cpp of llama.cpp 0.5.0 as
vendored in llama-cpp-python 0.3.36). Markdown, after a settings line
`main: n_kv_max = 16384, n_batch = 2048, ..., is_pp_shared = 0, is_tg_separate = 0, ...`:

|    PP |     TG |    B |   N_KV |   T_PP s | S_PP t/s |   T_TG s | S_TG t/s |      T s |    S t/s |

or, with `--output-format jsonl`, one object per row: {"n_kv_max", "n_batch", "n_ubatch",
"flash_attn", "is_pp_shared", "n_gpu_layers", "n_threads", "n_threads_batch", "pp", "tg", "pl",
"n_kv", "t_pp", "speed_pp", "t_tg", "speed_tg", "t", "speed"}. B (pl) sequences each prefill PP
tokens (one shared prompt with -pps: S_PP = PP / T_PP, else S_PP = B x PP / T_PP) and then generate
TG tokens, all B in each step (S_TG = B x TG / T_TG), or one sequence after another with
is_tg_separate (then S_TG is one sequence's rate).

Mapped per row: each sequence's decode rate -> decode_tok_s_per_seq at batch B (S_TG / B; with
is_tg_separate S_TG at batch 1), no prefill interleaved; and one prompt's prefill -> prefill_tok_s
(S_PP, at B = 1 or with a shared prompt; a batch of B prompts prefilled together is not compared).
The model and GPU are not in the output: --model and --gpu; the precision is --precision or the
llama.cpp type the model's name states (`...-Q4_0-GGUF`). The JSONL does not say is_tg_separate:
it is taken as 0 (the default).
"""

from __future__ import annotations

import re

from llmsweep.calibrate.formats.common import FormatError, Row, base, measured, number

JSONL_KEYS = {"pp", "tg", "pl", "speed_pp", "speed_tg"}
TABLE_HEADER = ("PP", "TG", "B", "N_KV", "T_PP s", "S_PP t/s", "T_TG s", "S_TG t/s", "T s", "S t/s")


# llama.cpp type names as GGUF repositories and files end (`...-Q8_0-GGUF`, `.Q4_K_M.gguf`, `-MXFP4`, `-F16`)
_GGUF = re.compile(r"(?:^|[-_./])(I?Q\d(?:_K)?(?:_[A-Z0-9]+)?|MXFP4|BF16|F16|F32)(?=$|[-_.])", re.I)


def gguf_type(model: str) -> str:
    """The llama.cpp type a model's repository or file name states ('' when none); the precision
    of a llama-batched-bench row unless --precision gives it."""
    found = _GGUF.findall(model.rsplit("/", 1)[-1])
    return found[-1] if found else ""


def detect_line(record) -> bool:
    return isinstance(record, dict) and record.keys() >= JSONL_KEYS


def is_table(text: str) -> bool:
    return any(_cells(line)[:3] == ["PP", "TG", "B"] for line in text.splitlines()[:200])


def _cells(line: str) -> list[str]:
    line = line.strip()
    if not (line.startswith("|") and line.endswith("|")):
        return []
    return [c.strip() for c in line.strip("|").split("|")]


_SETTING = re.compile(r"\b(is_pp_shared|is_tg_separate)\s*=\s*(\d+)")


def table_records(text: str) -> list[dict | str]:
    records: list[dict | str] = []
    header: list[str] | None = None
    settings: dict[str, int] = {}
    for line in text.splitlines():
        if not line.lstrip().startswith("|"):
            settings.update({k: int(v) for k, v in _SETTING.findall(line)})
        cells = _cells(line)
        if not cells:
            continue
        if cells[:3] == ["PP", "TG", "B"]:
            header = cells
            if tuple(cells) != TABLE_HEADER:
                raise FormatError(f"the table's columns are {' | '.join(cells)}, not llama-batched-bench's")
            continue
        if header is None or set("".join(cells)) <= set("-: "):
            continue
        if len(cells) != len(header):
            records.append(f"row has {len(cells)} cells, the header {len(header)}")
            continue
        try:
            v = [float(c) for c in cells]
        except ValueError:
            records.append(f"row {' | '.join(cells)} holds text where numbers belong")
            continue
        records.append({**settings, "pp": v[0], "tg": v[1], "pl": v[2], "speed_pp": v[5], "speed_tg": v[7]})
    if not records:
        raise FormatError("no rows under the `| PP | TG | B | ...` header of llama-batched-bench")
    return records


def rows(records: list, defaults: dict, name: str) -> list[Row]:
    out: list[Row] = []
    for i, r in enumerate(records, start=1):
        rid = f"{name}:{i}"
        if isinstance(r, str):
            out.append((rid, r))
            continue
        pp, tg, pl = number(r.get("pp")), number(r.get("tg")), number(r.get("pl"))
        if pp is None or tg is None or pp < 0 or tg < 0 or not pl or pl != int(pl) or pl < 1:
            got = ", ".join(f"{k} {r.get(k)!r}" for k in ("pp", "tg", "pl"))
            out.append(
                (
                    rid,
                    f"pp and tg must be token counts of 0 or more, pl a whole number of sequences, at least 1 ({got})",
                )
            )
            continue
        row = base(
            defaults,
            f"llama-batched-bench {name}",
            "llama.cpp (llama-batched-bench)",
            weight_precision=gguf_type(defaults.get("model") or "") or "unknown",
            batch=int(pl),
            input_len=int(pp),
            output_len=int(tg),
        )
        # a speed that is no finite number stays as its text, for the row's checks to refuse
        speed_tg, speed_pp = measured(r.get("speed_tg")), measured(r.get("speed_pp"))
        shared, separate = bool(r.get("is_pp_shared")), bool(r.get("is_tg_separate"))
        decode = tg > 0 and speed_tg is not None
        prefill = pp > 0 and speed_pp is not None and (pl == 1 or shared)
        if decode:
            per_seq, at = (speed_tg, 1) if separate or isinstance(speed_tg, str) else (speed_tg / pl, int(pl))
            decode_row = {**row, "batch": at, "metric": "decode_tok_s_per_seq", "value": per_seq, "unit": "tok/s"}
            if separate and pl > 1:
                decode_row["notes"] = "is_tg_separate: the sequences generate one after another, each alone"
            out.append((f"{rid}:decode", decode_row))
        if prefill:
            prefill_row = {**row, "batch": 1, "output_len": 0, "metric": "prefill_tok_s", "value": speed_pp}
            out.append((f"{rid}:prefill", {**prefill_row, "unit": "tok/s"}))
        if not decode and not prefill:
            out.append((rid, "no generation (TG 0) and a batched prefill (B > 1): nothing llmsweep compares"))
    return out
