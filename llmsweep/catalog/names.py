"""Name matching shared by the catalogs: the names users' files contain -> catalog ids.

Every kind first tries an exact match: the id or an alias, compared after `normalize` (case,
spaces and underscores, a leading vendor word). What happens next is rule-based, so that new
catalog entries are found under the same spellings without new aliases:

GPUs (`GpuIndex`): the name is parsed into a family, a memory size and a form factor after
dropping marketing words (`NVIDIA`, `Tesla`, `Blackwell`, `Edition`, `HBM3`, ...). Entries of the
family are kept when their memory size (the catalog's `memory_gb`) and form factor (named in the
id or an alias: sxm, pcie, nvl, server, workstation) agree with what the name says. One entry
left: that is the GPU. Several: a knowingly ambiguous group (the catalog's `ambiguous_aliases`)
picks its first member and says so; any other overlap is an error. None: an unknown name with
did-you-mean (`A100 20GB` is never "the nearest A100").

Models (`ModelIndex`): the org prefix and a trailing quantization suffix are dropped and the rest
is matched against catalog ids and aliases keyed the same way (`Qwen3-235B-A22B-Thinking-2507-FP8`
finds a Thinking entry when there is one). If none matches, the closed lists below are stripped
too (release dates from the end, variant words anywhere) and the key must match exactly one entry.
Two entries with one key are an ambiguity error unless the name's org picks one; `Llama-3.2-3B`
never becomes `Llama-3.1-8B` (an unknown name, with did-you-mean). A quantization suffix becomes the
precision the match carries (`ModelMatch.precision`); every dropped part is said in the note.
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass

from llmsweep.errors import LlmsweepError, UnknownNameError, did_you_mean

_VENDOR_PREFIX = re.compile(r"^(nvidia|amd|intel|apple|geforce|radeon|instinct)-+")


def normalize(name: str) -> str:
    """'NVIDIA GeForce RTX 4090' -> 'rtx-4090'; 'H100_SXM' -> 'h100-sxm'."""
    key = re.sub(r"[\s_]+", "-", name.strip().lower())
    while True:
        stripped = _VENDOR_PREFIX.sub("", key)
        if stripped == key:
            return key
        key = stripped


def squash(name: str) -> str:
    """`normalize` with the punctuation gone too: 'rtx4090' and 'RTX-4090' -> 'rtx4090'."""
    return re.sub(r"[^a-z0-9]", "", normalize(name))


@dataclass(frozen=True, slots=True)
class Resolved:
    id: str
    note: str | None = None  # said to the user when something was assumed, dropped or ambiguous


@dataclass(frozen=True, slots=True)
class ModelMatch(Resolved):
    precision: str | None = None  # the precision a quantization suffix names (`-FP8` -> fp8); None if none


class AmbiguousNameError(LlmsweepError):
    """A name that matches several catalog entries equally well; the message lists them."""

    def __init__(self, kind: str, name: str, candidates: list[str]):
        self.kind, self.name, self.candidates = kind, name, candidates
        listed = ", ".join(candidates[:-1]) + f" and {candidates[-1]}"
        super().__init__(
            f"ambiguous {kind} {name!r}: it matches {listed}; name one of them (`llmsweep {kind}s` lists them)"
        )


class NameIndex:
    """Maps ids and aliases (normalised) to catalog ids; some aliases are knowingly ambiguous."""

    def __init__(self, kind: str, names: dict[str, list[str]], ambiguous: dict[str, list[str]] | None = None):
        self.kind = kind
        self._ids = list(names)
        self._lookup: dict[str, str] = {}
        for cid, aliases in names.items():
            for n in [cid, *aliases]:
                self._lookup.setdefault(normalize(n), cid)
        self._ambiguous = {normalize(k): v for k, v in (ambiguous or {}).items()}
        self._display = [n for cid, aliases in names.items() for n in [cid, *aliases]]
        # punctuation aside: a spelling without the dashes or dots resolves when only one entry has it
        squashed: dict[str, set[str]] = {}
        for key, cid in self._lookup.items():
            squashed.setdefault(squash(key), set()).add(cid)
        ambiguous_keys = {squash(k) for k in self._ambiguous}
        self._squashed = {k: next(iter(v)) for k, v in squashed.items() if len(v) == 1 and k not in ambiguous_keys}

    def __contains__(self, name: str) -> bool:
        return normalize(name) in self._lookup

    def _exact(self, name: str) -> Resolved | None:
        key = normalize(name)
        if key in self._ambiguous:
            return self._pick(name, self._ambiguous[key])
        if key in self._lookup:
            return Resolved(self._lookup[key])
        if squash(name) in self._squashed:
            return Resolved(self._squashed[squash(name)])
        return None

    def _pick(self, name: str, group: list[str]) -> Resolved:
        chosen, *others = group
        if not others:
            return Resolved(chosen)
        return Resolved(
            chosen,
            f"{self.kind} {name!r} is ambiguous; using {chosen} (the most common variant; also: {', '.join(others)})",
        )

    def _unknown(self, name: str, suggestions: list[str] | None = None, hint: str = "") -> UnknownNameError:
        if suggestions is None:
            hits = did_you_mean(name, self._display, n=4)
            suggestions = list(dict.fromkeys(self._lookup[normalize(s)] for s in hits))
            if self.kind == "gpu":  # a part's number tells more than its letters: RTX 3070 Tii is a 3070
                digits = re.findall(r"\d+", name)
                suggestions.sort(key=lambda s: re.findall(r"\d+", s) != digits)
        if not hint and self.kind == "model":  # a model the catalog lacks: say how to add one
            hint = (
                "`llmsweep models` lists them; for another model give the path of its config.json "
                "(--model ./config.json) or add it under `models:` in a sweep"
            )
        return UnknownNameError(self.kind, name, suggestions[:2], hint or f"`llmsweep {self.kind}s` lists them")

    def resolve(self, name: str) -> Resolved:
        hit = self._exact(name)
        if hit is None:
            raise self._unknown(name)
        return hit


# -- GPUs ----------------------------------------------------------------------------------------

# Words that name the vendor, the brand, the architecture generation or the memory technology:
# they never tell two catalog entries apart. ('Ada' does: RTX 6000 Ada is not the Turing RTX 6000.)
# fmt: off
GPU_MARKETING_WORDS = frozenset({
    "nvidia", "amd", "intel", "apple", "geforce", "radeon", "instinct", "tesla", "blackwell", "hopper",
    "edition", "hgx", "hbm", "hbm2", "hbm2e", "hbm3", "hbm3e", "gddr6", "gddr6x", "gddr7", "lpddr5x",
})
# fmt: on
# Form-factor words, reduced to the family the catalog ids use.
GPU_FORM_FACTORS = {
    "sxm": "sxm",
    "sxm2": "sxm",
    "sxm3": "sxm",
    "sxm4": "sxm",
    "sxm5": "sxm",
    "sxm6": "sxm",
    "pcie": "pcie",
    "nvl": "nvl",
    "server": "server",
    "workstation": "workstation",
    "oam": "oam",
}
_RACK = re.compile(r"^nvl\d+$")  # NVL72, NVL16: the rack or board a per-GPU entry sits in
_GB = re.compile(r"^(\d+(?:\.\d+)?)gb?$")


@dataclass(frozen=True, slots=True)
class GpuName:
    family: str
    memory_gb: float | None
    form_factor: str | None


def parse_gpu(name: str) -> GpuName:
    """'Tesla V100-SXM2-32GB' -> GpuName('v100', 32.0, 'sxm'); 'NVIDIA H100 80GB HBM3' -> ('h100', 80.0, None)."""
    text = re.sub(r"[()\[\],/]", " ", name.lower())
    text = re.sub(r"(\d)\s*-?\s*(gb|g)\b", r"\1gb", text)
    family, memory, form = [], None, None
    for tok in re.split(r"[\s_-]+", text.strip()):
        if not tok or tok in GPU_MARKETING_WORDS or _RACK.match(tok):
            continue
        if tok in GPU_FORM_FACTORS:
            form = GPU_FORM_FACTORS[tok]
        elif m := _GB.match(tok):
            memory = float(m.group(1))
        else:
            family.append(tok)
    return GpuName("-".join(family), memory, form)


_BRACKET = re.compile(r"^(?P<out>[^(\[]*?)\s*[(\[](?P<inner>[^)\]]*)[)\]]\s*(?P<rest>.*)$")


def _gpu_spellings(name: str) -> list[str]:
    """Other readings of a GPU name with a bracketed variant or a trailing 'GPU', as tools print
    them: 'Apple M1 Pro (14-core GPU)' -> 'Apple M1 Pro'; 'NVIDIA GB10 (DGX Spark)' -> 'NVIDIA
    GB10', 'DGX Spark'; 'AMD MI300X GPU' -> 'AMD MI300X'."""
    out = []
    if m := _BRACKET.match(name.strip()):
        out += [f"{m['out']} {m['rest']}".strip(), m["inner"].strip()]
    plain = re.sub(r"\s+gpu$", "", name.strip(), flags=re.I)
    if plain != name.strip():
        out.append(plain)
    return [x for x in dict.fromkeys(out) if x and x != name and "(" not in x and "[" not in x]


class GpuIndex(NameIndex):
    """GPU names: exact ids and aliases, then family + memory size + form factor."""

    def __init__(
        self,
        names: dict[str, list[str]],
        memory_gb: dict[str, float],
        ambiguous: dict[str, list[str]] | None = None,
    ):
        super().__init__("gpu", names, ambiguous)
        self._memory = memory_gb
        self._families: dict[str, list[str]] = {}
        self._forms: dict[str, set[str]] = {}
        for gid, aliases in names.items():
            for n in [gid, *aliases]:
                parsed = parse_gpu(n)
                ids = self._families.setdefault(parsed.family, [])
                if gid not in ids:
                    ids.append(gid)
                if parsed.form_factor:
                    self._forms.setdefault(gid, set()).add(parsed.form_factor)
        self._groups = [list(v) for v in (ambiguous or {}).values()]

    def resolve(self, name: str) -> Resolved:
        hit = self._exact(name)
        if hit is not None:
            return hit
        want = parse_gpu(name)
        family = self._families.get(want.family, [])
        if not family:
            for alt in _gpu_spellings(name):  # the variant in brackets, as vendors and tools print it
                try:
                    found = self.resolve(alt)
                except LlmsweepError:
                    continue
                return Resolved(found.id, found.note)
            raise self._unknown(name)
        cands = [
            gid
            for gid in family
            if (want.memory_gb is None or abs(self._memory.get(gid, -1) - want.memory_gb) < 0.5)
            and (want.form_factor is None or gid not in self._forms or want.form_factor in self._forms[gid])
        ]
        if not cands:
            said = " ".join(
                x for x in (f"{want.memory_gb:g} GB" if want.memory_gb else "", want.form_factor or "") if x
            )
            if want.memory_gb is not None:  # the nearest sizes first
                family = sorted(family, key=lambda gid: abs(self._memory.get(gid, 0) - want.memory_gb))
            variants = ", ".join(f"{gid} ({self._memory.get(gid, 0):g} GB)" for gid in family)
            raise self._unknown(name, family, f"no {want.family} in the catalog is {said}; its variants: {variants}")
        if len(cands) == 1:
            return Resolved(cands[0])
        for group in self._groups:
            if set(cands) <= set(group):
                return self._pick(name, [g for g in group if g in cands])
        raise AmbiguousNameError("gpu", name, cands)


# -- models --------------------------------------------------------------------------------------

# Quantized repackagings, as they end a repository or file name (several may follow one another:
# `-AWQ-INT4`, `-FP8-dynamic`, `-unsloth-bnb-4bit`, `.Q4_K_M.gguf`). A token names a precision
# outright (strong) or a method whose usual precision applies unless a strong token says otherwise
# (weak). GGUF quant types (`Q4_K_M`) and `<N>bpw` name the catalog precision of that name.
QUANT_STRONG = {
    "fp8": "fp8",
    "nvfp4": "nvfp4",
    # a name's `-FP4` is a checkpoint's format, not a GPU's: NVIDIA's `-FP4` checkpoints are NVFP4
    # (AMD names its MXFP4 ones `-MXFP4`); a sweep's precision `fp4` is per GPU (Catalog.fp4_format)
    "fp4": "nvfp4",
    "mxfp4": "mxfp4",
    "int4": "int4",
    "4bit": "int4",
    "int8": "int8",
    "8bit": "int8",
    "bf16": "bf16",
    "fp16": "fp16",
    "f16": "fp16",
}
QUANT_WEAK: dict[str, str | None] = {
    "awq": "int4",
    "gptq": "int4",
    "bnb": "int4",
    "w4a16": "int4",
    "w8a8": "int8",
    "w8a16": "int8",
    "gguf": None,  # file formats whose files come in many precisions (the quant type or bpw may follow)
    "exl2": None,
}
# Qualifiers that only travel with a quantization suffix: they change neither architecture nor format.
QUANT_QUALIFIERS = frozenset({"dynamic", "static", "kv", "unsloth", "quantized"})
# Variant words: fine-tunes of one base model share its architecture (config.json shapes).
VARIANT_WORDS = frozenset({"instruct", "chat", "base", "it", "hf", "thinking"})
# A checkpoint's release, after its quantization suffix (`amd/DeepSeek-R1-MXFP4-Preview`,
# `nvidia/DeepSeek-R1-0528-FP4-v2`): dropped there only, since elsewhere it names the model
# (`DeepSeek-V2`, `Llama-3_3-Nemotron-Super-49B-v1`).
_RELEASE = re.compile(r"^(?:preview|v\d+)$")
_GGUF_TYPE = re.compile(r"^i?q\d(?:_k)?(?:_[a-z0-9]+)?$")
_BPW = re.compile(r"^\d+(?:\.\d+)?bpw$")
_DATE = re.compile(r"^\d{4}$")


@dataclass(frozen=True, slots=True)
class ModelName:
    org: str
    strict: str  # matched first: only the org and the quantization suffix dropped
    key: str  # matched next: variant words and dates dropped too
    variants: tuple[str, ...]  # dropped variant words, as written
    dates: tuple[str, ...]  # dropped release dates
    quant: tuple[str, ...]  # the quantization suffix tokens, as written


def _tokens(base: str) -> list[str]:
    text = base.strip()
    text = re.sub(r"\.gguf$", "-GGUF", text, flags=re.IGNORECASE)
    text = re.sub(r"(?<=-)(\d)_(\d)(?=-)", r"\1.\2", text)  # Llama-3_3-70B -> Llama-3.3-70B
    text = re.sub(r"\.(?=[A-Za-z])", "-", text)  # -quantized.w4a16, .Q4_K_M
    raw = [t for t in re.split(r"[\s-]+", text) if t]
    out: list[str] = []
    for t in raw:  # GGUF types keep their underscores; elsewhere '_' separates words
        out.extend([t] if _GGUF_TYPE.match(t.lower()) else [p for p in t.split("_") if p])
    return out


def _is_quant(tok: str) -> bool:
    t = tok.lower()
    return t in QUANT_STRONG or t in QUANT_WEAK or t in QUANT_QUALIFIERS or bool(_GGUF_TYPE.match(t) or _BPW.match(t))


def _in_quant(toks: list[str]) -> list[bool]:
    """Whether each token belongs to a quantization suffix: a quantization token, or a release after
    one (`-FP4-v2`). Read left to right in one pass: a name of thousands of `-v2` is no deeper."""
    flags: list[bool] = []
    for tok in toks:
        flags.append(_is_quant(tok) or (bool(flags) and flags[-1] and bool(_RELEASE.match(tok.lower()))))
    return flags


def parse_model(name: str) -> ModelName:
    """'nvidia/Llama-3.3-70B-Instruct-FP8' -> strict 'llama-3.3-70b-instruct', key 'llama-3.3-70b',
    variants ('Instruct',), quant ('FP8',)."""
    org, _, base = name.strip().rstrip("/").rpartition("/")  # a trailing slash, as a folder is written, ends nothing
    written = _tokens(base)
    in_quant = _in_quant(written)  # a token's flag reads only the tokens before it, which no pop below moves
    strict = list(written)
    while len(strict) > 1 and in_quant[len(strict) - 1]:
        strict.pop()
    toks = list(written)
    quant: list[str] = []
    dates: list[str] = []
    i = len(toks)
    while i > 1:  # from the end: quantization tokens and dates, stepping over variant words
        tok = toks[i - 1]
        if in_quant[i - 1]:
            quant.insert(0, toks.pop(i - 1))
        elif _DATE.match(tok):
            dates.insert(0, toks.pop(i - 1))
        elif tok.lower() not in VARIANT_WORDS:
            break
        i -= 1
    variants = tuple(t for t in toks if t.lower() in VARIANT_WORDS)
    kept = [t for t in toks if t.lower() not in VARIANT_WORDS]
    if not kept:  # a name that is only suffixes: match it as written
        kept, variants, dates, quant = written, (), [], []
    return ModelName(
        org.strip().lower(),
        "-".join(_unprefixed([t.lower() for t in strict])),
        "-".join(_unprefixed([t.lower() for t in kept])),
        variants,
        tuple(dates),
        tuple(quant),
    )


def _unprefixed(tokens: list[str]) -> list[str]:
    """Meta-Llama-3.1-8B is Llama-3.1-8B."""
    return tokens[1:] if len(tokens) > 1 and tokens[0] == "meta" and tokens[1].startswith("llama") else tokens


def suffix_precision(quant: Iterable[str], precision_id: Callable[[str], str | None]) -> tuple[str | None, str | None]:
    """The precision a quantization suffix names, and a note when it names none or several.

    `precision_id` maps a GGUF type or `<N>bpw` to a catalog precision id (None if unknown)."""
    toks = list(quant)
    if not toks:
        return None, None
    written = "-" + "-".join(toks)
    strong: list[str] = []
    weak: list[str] = []
    unknown: list[str] = []
    file_format = False
    for tok in toks:
        t = tok.lower()
        if _RELEASE.match(t):
            continue  # a release of the checkpoint: no format
        if t in QUANT_STRONG:
            strong.append(QUANT_STRONG[t])
        elif t in QUANT_WEAK:
            file_format |= QUANT_WEAK[t] is None
            if QUANT_WEAK[t]:
                weak.append(QUANT_WEAK[t])  # type: ignore[arg-type]
        elif _GGUF_TYPE.match(t) or _BPW.match(t):
            pid = precision_id(t)
            strong.append(pid) if pid else unknown.append(tok)
    found = list(dict.fromkeys(strong)) or list(dict.fromkeys(weak))
    if unknown and not found:
        return None, f"{written!r} names no precision in the catalog (`llmsweep precisions` lists them)"
    if len(found) > 1:
        return None, f"{written!r} names several precisions ({', '.join(found)}): give the precision"
    if found:
        return found[0], f"{written!r} names precision {found[0]}"
    if file_format:
        return (
            None,
            f"{written!r} is a file format whose files come in many precisions: give the precision (e.g. q4_k_m)",
        )
    return None, None


class ModelIndex(NameIndex):
    """Model names: exact ids and aliases, then org prefix and the closed suffix lists dropped."""

    def __init__(self, names: dict[str, list[str]], precision_id: Callable[[str], str | None]):
        super().__init__("model", names)
        self._precision_id = precision_id
        self._strict: dict[str, list[str]] = {}
        self._keys: dict[str, list[str]] = {}
        self._orgs: dict[str, set[str]] = {}
        for mid, aliases in names.items():
            for n in [mid, *aliases]:
                parsed = parse_model(n)
                for table, key in ((self._strict, parsed.strict), (self._keys, parsed.key)):
                    ids = table.setdefault(key, [])
                    if mid not in ids:
                        ids.append(mid)
                if parsed.org:
                    self._orgs.setdefault(mid, set()).add(parsed.org)

    def resolve(self, name: str) -> ModelMatch:
        parsed = parse_model(name)
        precision, quant_note = suffix_precision(parsed.quant, self._precision_id)
        hit = self._exact(name)
        if hit is not None:  # an alias naming a variant the id does not (-Instruct of a base id): said
            lost = tuple(
                v for v in parsed.variants if v.lower() not in {w.lower() for w in parse_model(hit.id).variants}
            )
            variants = _dropped(lost, "instruct, chat and base variants share one architecture")
            return ModelMatch(hit.id, _model_note(name, hit.id, [variants, quant_note]), precision)
        strict = self._narrow(parsed, self._strict.get(parsed.strict, []))
        if len(strict) == 1:  # the name as the catalog writes it, repackaged: only the suffix said
            return ModelMatch(strict[0], _model_note(name, strict[0], [quant_note]), precision)
        cands = strict or self._narrow(parsed, self._keys.get(parsed.key, []))
        if len(cands) > 1:
            raise AmbiguousNameError("model", name, cands)
        if not cands:
            close = difflib.get_close_matches(parsed.key, list(self._keys), n=4, cutoff=0.6)
            ids = list(dict.fromkeys(m for k in close for m in self._keys[k]))
            raise self._unknown(name, ids or None)
        notes = [
            _dropped(parsed.variants, "instruct, chat and base variants share one architecture"),
            _dropped(parsed.dates, "a dated release of the same architecture"),
            quant_note,
        ]
        return ModelMatch(cands[0], _model_note(name, cands[0], notes), precision)

    def _narrow(self, parsed: ModelName, cands: list[str]) -> list[str]:
        """Several entries with one key: the name's org picks one, if it names one of them."""
        if len(cands) > 1 and parsed.org:
            return [m for m in cands if parsed.org in self._orgs.get(m, ())] or cands
        return cands


def _dropped(tokens: tuple[str, ...], why: str) -> str | None:
    if not tokens:
        return None
    return f"{' '.join(repr('-' + t) for t in tokens)} ignored: {why}"


def _model_note(name: str, mid: str, parts: list[str | None]) -> str | None:
    said = [p for p in parts if p]
    return f"model {name!r} read as {mid}: {'; '.join(said)}" if said else None
