"""Serving under load: one replica doing continuous batching with chunked prefill (DESIGN.md §4).

A replica serves identical requests of S_in prompt and S_out output tokens. Two ways to load it:

- **closed loop** at a concurrency C (the batch axis): C clients, each sends its next request the
  moment its last one ends (how `benchmark_serving --max-concurrency` and aiconfigurator measure);
- **open loop** at a request rate lambda (Poisson arrivals), as a capacity plan assigns traffic.

Both give the same mutually consistent figures: TTFT (mean and percentiles), the inter-token
latency users see (`tpot_s`), request latency R = TTFT + (S_out - 1) x ITL, requests/s X and
output tokens/s X x S_out, with Little's law exact by construction (C = X x R).

Ingredients (per replica; the `compute` module gives them unloaded):

    p       prefill_s: one prompt prefilled alone (compute-bound)
    t(b)    decode step with b sequences at the mean context: max(compute, memory) + tp all-reduces
            + fixed costs, linear in b except the experts an MoE batch touches (`step_s`)
    K       prefill_chunk_tokens: prompt tokens one engine iteration takes (profile)
    n_c     S_in / K: engine iterations' worth of prefill budget one prompt takes
    o       request_overhead_s: time outside the GPU before the first token (profile, fitted)
    p_it    p_mix / max(n_c, 1) + t(b): an iteration carrying one chunk of another prompt, what a
            closed loop's request waits for when it arrives in a train (train_share); p_mix blended
            with p and t(b) scaled by min(b, 1), as in p_eff
    beta    burst_share: share of closed-loop requests served in synchronised waves (profile; in
            the shipped profiles 1 for SGLang, whose scheduler runs waiting prefills before
            decoding, 0.15 for other engines, 0 in `ideal`)

docs/serving.md has the derivations in prose, the fitted values and the errors on measured data.

The engine (vLLM, SGLang, TensorRT-LLM in-flight batching) runs iterations; each iteration decodes
one token of every running request and, when prompts are waiting, adds a prefill chunk of up to K
tokens (Sarathi-Serve's chunked prefill with decode piggybacking: Agrawal et al., OSDI 2024).
Seen from a decoding request, the others' prefill work is spread over its iterations; seen from a
prompt, the others' decode steps ride in each of its chunk iterations. Assumptions: identical
requests, first-come first-served prefill, prefill time additive to the decode step (no overlap
credit), no preemption, no prefix cache, no speculative decoding, no prefill/decode
disaggregation (each would enter as a change of p, t(b) or the queue below).
"""

from __future__ import annotations

from collections.abc import Callable

import polars as pl

from llmsweep.columns import c, text
from llmsweep.estimate import compute, speculative
from llmsweep.estimate.parallel import comm_s

PERCENTILES = {"p90": 0.9, "p99": 0.99}
SATURATED = "saturated: the request rate exceeds what the replica can serve"
SLOT_WAIT = "concurrency exceeds max_batch: requests wait for a KV-cache slot"
ADMISSION_WAIT = "concurrency exceeds the engine's max_running_requests: requests queue for a slot"


def admission_slots() -> pl.Expr:
    """Requests the replica runs at once: what the KV cache holds (max_batch, at least 1), and at most
    the engine's limit per attention data-parallel rank x dp_attention (max_running_requests; 0 = none):
    vLLM's max_num_seqs 1024 on an H100, 8 ranks of 1,024 with dp_attention 8."""
    kv = pl.max_horizontal(c.max_batch, 1).cast(pl.Float64)
    limit = c.max_running_requests * c.dp_attention
    return pl.when(c.max_running_requests > 0).then(pl.min_horizontal(kv, limit)).otherwise(kv)


def step_s(b: pl.Expr) -> pl.Expr:
    """t(b): one decode step of b sequences (b may be fractional: a mean), the terms of
    compute.decode_terms at batch b: max(g x compute s/seq (compute.decode_compute_s_per_sequence),
    (weights read(b) + g x KV/seq) x s/byte) + communication(g) (all-reduces, expert all-to-alls, pp
    sends: parallel.comm_s) + b x MoE routing traffic (every group's tokens pass the MoE layers:
    compute.routing_s_per_token) + fixed costs, where
    g = b / dp_attention is the share of an attention group (= b without attention data parallelism).
    With speculative decoding the FLOPs and communication count q + k f token passes per sequence,
    the KV 1 + k f reads, the weights W(q b) + k f W(b), and the draft passes their fixed costs
    (estimate/speculative.py; every factor is 1 without it)."""
    g = b / c.dp_attention
    compute_s = g * c.spec_token_factor * c.decode_compute_s_per_sequence
    memory_s = (
        speculative.weights_read(b) + g * c.spec_kv_factor * c.decode_kv_bytes_per_sequence
    ) * c.seconds_per_byte
    tokens = g * c.spec_token_factor
    # every group's tokens pass the MoE layers (compute.routing_s_per_token): b, not g
    additive = comm_s(tokens) + b * c.spec_token_factor * c.routing_s_per_token + c.fixed_step_s + c.spec_fixed_s
    return pl.max_horizontal(compute_s, memory_s) + additive


def first_token_s() -> pl.Expr:
    """p: GPU time to a request's first token when it runs alone: its prefill, or for an empty prompt
    the one forward pass (a decode step at batch 1) that produces the first token."""
    return pl.when(c.input_tokens > 0).then(c.prefill_s).otherwise(step_s(pl.lit(1.0)))


def mixed_first_token_s(decoding: pl.Expr) -> pl.Expr:
    """p_mix + fixed costs: what a prompt adds to an iteration `decoding` sequences decode in (each
    verifying draft_tokens + 1 tokens whose experts the prompt shares; compute.mixed_prefill_s), plus
    the pass's fixed costs once more: an iteration that carries a prompt runs eagerly, where
    decode-only steps replay CUDA graphs (TensorRT-LLM and SGLang capture decode batches only;
    vLLM's piecewise graphs leave attention out), so it pays its kernel launches again. Charged per
    prompt: an upper bound when several short prompts share one iteration. An empty prompt has no
    prefill: its first token is one more sequence in the step the others decode in, which grows by
    t(decoding) - t(decoding - 1) (alone, loaded_prompt_s keeps p = t(1))."""
    mixed = compute.mixed_prefill_s(decoding * (c.draft_tokens + 1)) + c.fixed_step_s
    joined = step_s(decoding) - step_s(decoding - 1)
    return pl.when(c.input_tokens > 0).then(mixed).otherwise(joined)


def loaded_prompt_s(p: pl.Expr, others: pl.Expr) -> pl.Expr:
    """What a prompt adds to the iterations it rides in when `others` sequences decode: p_mix when at
    least one does (mixed_first_token_s), p alone, linearly in between (as the riders of _riders)."""
    return p + pl.min_horizontal(others, 1.0) * (mixed_first_token_s(1 + others) - p)


def prefill_chunks() -> pl.Expr:
    """n_c = n / K: the share of engine iterations one prompt's prefill fills, n = the prompt tokens
    it computes (all S_in without a prefix cache). Fractional: prompts shorter than K share an
    iteration (and the decode step riding in it) with other prompts."""
    return c.prefill_new_tokens / c.prefill_chunk_tokens


def _riders(others: pl.Expr) -> pl.Expr:
    """Time the other requests' decode steps add to one iteration: t(others) when at least one other
    request decodes, scaled down linearly to 0 as the mean number of others falls to 0 (so a lone
    request's prefill runs alone, as at C = 1)."""
    return pl.min_horizontal(others, 1.0) * step_s(pl.max_horizontal(others, 1.0))


def _quantile_wait(mean_wait: pl.Expr, busy: pl.Expr, q: float) -> pl.Expr:
    """q-quantile of a waiting time that is 0 with probability 1 - busy and otherwise exponential with
    mean E[W] / busy: P(W > w) = busy x exp(-w busy / E[W]), so w_q = E[W] / busy x ln(busy / (1 - q))
    when busy > 1 - q, else 0. Exact for M/M/1; the usual exponential (Kingman heavy-traffic) tail
    approximation for M/G/1."""
    tail = mean_wait / busy * (busy / (1 - q)).log()
    return pl.when(busy > 1 - q).then(tail).otherwise(0.0)


# -- closed loop: C clients ----------------------------------------------------------------------------------------
def step_coefficients() -> dict[str, pl.Expr]:
    """Per (layout, lengths): t(b) = max(F0 + F1 b, M0 + M1 b) on the compute and the memory roof,
    F0 = collective latencies + fixed costs (the draft passes' too), F1 = (FLOPs/seq x s/FLOP +
    communication per token) x q' / dp + routing x q', M1 = (KV/seq x s/byte x kv' + communication
    per token x q') / dp + routing x q', dp = dp_attention (each attention group carries its share of
    the sequences; every group's tokens pass the MoE layers, compute.routing_s_per_token), q' and kv' the
    speculative factors (1 without it); M0 adds the weights read, per row: see closed_loop. k, the
    decode steps after the first token, is (S_out - 1) / E with E tokens per step."""
    comm = c.comm_s_per_token * c.spec_token_factor
    routing = c.routing_s_per_token * c.spec_token_factor  # per sequence of the whole batch, not of a group
    k = (c.output_tokens - 1).clip(lower_bound=0).cast(pl.Float64) / c.tokens_per_step
    return {
        "step_fixed_s": c.comm_fixed_s + c.fixed_step_s + c.spec_fixed_s,
        "step_compute_s_per_seq": (c.decode_compute_s_per_sequence * c.spec_token_factor + comm) / c.dp_attention
        + routing,
        "step_memory_s_per_seq": (c.decode_kv_bytes_per_sequence * c.seconds_per_byte * c.spec_kv_factor + comm)
        / c.dp_attention
        + routing,
        "first_token_s": first_token_s(),
        "prefill_chunks": prefill_chunks(),
        "decode_steps": k,
        "half_inv_decode_steps": pl.when(k > 0).then(0.5 / k).otherwise(0.0),
        "prefill_bound_decoders": pl.when(c.input_tokens > 0).then(k / prefill_chunks()).otherwise(float("inf")),
    }


def train_share(n: pl.Expr) -> pl.Expr:
    """(n - 1) / n: the share of a closed loop's n requests (of one attention group) that re-arrive
    while the request ahead of them in the train is being prefilled. Identical requests of a closed
    loop whose prompts ride in decode steps (vLLM, TensorRT-LLM in-flight batching) leave the first
    wave as a train, prefilled in consecutive iterations; each ends one iteration after the one ahead
    of it, so its next prompt arrives during the iteration that carries that one's prompt and waits
    for all of it (the first of the train arrives in a decode step). 0 for one request, 7/8 for 8."""
    return (n - 1) / n


def _solve_at(lf: pl.LazyFrame, b: str, out: str, final: bool = False) -> pl.LazyFrame:
    """Steps 1-4 of closed_loop for a given number of other requests decoding (column `b`): the b
    that R and D imply (column `out`), and with `final` also _R, _D, _peff, _step, _share, _pl, _own
    and _pit. Uses the per-row columns _m (n - 1), _mg, _pi, _chunk and _M0. Staged so that each
    quantity is computed once, and written with the cheapest polars operations (this runs on every
    row of a sweep, three times)."""
    m, k, bb = pl.col("_m"), c.decode_steps, pl.col(b)
    f0, f1, m1 = c.step_fixed_s, c.step_compute_s_per_seq, c.step_memory_s_per_seq
    x = 1 + bb
    lf = lf.with_columns(_cr=f0 + f1 * x, _mr=pl.col("_M0") + m1 * x, _share=pl.min_horizontal(bb, 1.0))
    on_memory = (pl.col("_mr") >= pl.col("_cr")).cast(pl.Float64)
    lf = lf.with_columns(_slope=f1 + (m1 - f1) * on_memory, _step=pl.max_horizontal("_cr", "_mr"))  # t(1 + b)
    slope, step, share = pl.col("_slope"), pl.col("_step"), pl.col("_share")
    # a prompt in an iteration others decode in adds p_mix, the weight read being the step's; alone, p
    lf = lf.with_columns(_pl=loaded_prompt_s(c.first_token_s, bb))
    lf = lf.with_columns(
        _c1=k * (step - slope * bb),  # k (A + B): the decode phase at zero load
        # others' prefill stalls the step; the attention groups prefill side by side: / dp_attention
        _cc=m * (pl.col("_pl") / c.dp_attention + k * slope),
        # its share of the prefill server: p_mix + n_c t(b), the t(b) riding in its chunks (prompts
        # shorter than K share an iteration, and its step, with others)
        _peff=pl.col("_pl") + c.prefill_chunks * share * (step - slope),
        # its own first token comes when the iteration carrying its last chunk ends: a whole step
        # t(b) even when it fills only n_c < 1 of it, (1 - n_c) t(b) beyond its share of the server
        _own=(1 - c.prefill_chunks).clip(lower_bound=0.0) * share * (step - slope),
        # the iteration carrying one chunk of another prompt, with the others' decode step in it
        _pit=pl.col("_pl") * pl.col("_chunk") + share * (step - slope),
    )
    peff, c1, cc = pl.col("_peff"), pl.col("_c1"), pl.col("_cc")
    lf = lf.with_columns(
        _a=pl.col("_mg") * peff,
        _q=c1 * (1 + share * c.half_inv_decode_steps),  # D + s
        # in a train the request waits for the previous one's iteration, then its own service
        _w=peff + pl.col("_pi") * pl.col("_pit"),
    )
    a, q, w = pl.col("_a"), pl.col("_q"), pl.col("_w")
    half = (a + cc + peff + q) / 2
    train = (w + cc + c1) / 2
    lf = lf.with_columns(
        _R=pl.max_horizontal(
            half + pl.max_horizontal(half * half - (a * cc + peff * cc + q * a), 0.0).sqrt(),
            train + pl.max_horizontal(train * train - w * cc, 0.0).sqrt(),
        )
    )
    lf = lf.with_columns(_D=c1 * pl.col("_R") / pl.max_horizontal(pl.col("_R") - cc, 1e-300))
    lf = lf.with_columns(**{out: m * pl.col("_D") / pl.col("_R")})
    scratch = ["_cr", "_mr", "_slope", "_c1", "_cc", "_a", "_q", "_w"]
    return lf.drop(scratch if final else [*scratch, "_R", "_D", "_peff", "_step", "_share", "_pl", "_own", "_pit"])


def _wave_prompts() -> pl.Expr:
    """r: prompts one prefill chunk completes, K / S_new with S_new the prompt tokens each computes
    (S_in without a prefix cache, as in prefill_chunks), at least 1 (a prompt longer than K takes several
    chunks and completes alone)."""
    return (c.prefill_chunk_tokens / pl.max_horizontal(c.prefill_new_tokens, 1)).clip(lower_bound=1.0)


# q n or j / r that is a whole number up to rounding (1 - 0.1 / 0.2 = 0.5000000000000001) must not
# round up to the next prompt or chunk
_EPS = 1e-9


def _wave_quantile(unit: pl.Expr, n: pl.Expr, r: pl.Expr, q: pl.Expr) -> pl.Expr:
    """The q-quantile of (TTFT less the fixed parts) in a synchronised wave of n prompts, r per
    chunk, each chunk taking r x `unit`: the q-quantile prompt is j = ceil(q n), and it completes
    with chunk ceil(j / r), at r ceil(j / r) x unit, the last (partial) chunk ending at n x unit."""
    j = (q * n - _EPS).ceil().clip(lower_bound=1.0)
    return unit * pl.min_horizontal(n, r * (j / r - _EPS).ceil())


def _tail_share(share: pl.Expr, q: float) -> pl.Expr:
    """The quantile a mixture component with weight `share` must reach alone to carry the mixture's
    tail above q: 1 - (1 - q) / share (null when the component is too small to reach it)."""
    return pl.when(share > 1 - q).then(1 - (1 - q) / share)


def closed_loop(frame: pl.LazyFrame, concurrency: pl.Expr | None = None) -> pl.LazyFrame:
    """The operating point at concurrency C (default: the `batch` column). Needs the columns of
    step_coefficients. Adds decode_step_s, decode_batch, tpot_s, ttft_s, ttft_wait_s, ttft_p90_s,
    ttft_p99_s, request_latency_s, requests_per_s_per_replica, output_tokens_per_s,
    decode_tokens_per_s_per_seq, prefill_fraction and load_note.

    Derivation. Let n = min(C, slots) requests hold a slot (the rest wait for one; slots =
    admission_slots: the KV cache's max_batch, capped by the engine's max_running_requests), k =
    S_out - 1, and let a request spend TTFT in prefill and D = k ITL decoding, R = TTFT + D, X = n / R.

    1. Others decoding while a request decodes: b = (n - 1) D / R (each other request decodes a
       share D / R of its time); the decode batch is 1 + b.
    2. Others' prefill takes a share u = (n - 1) p_mix / (R dp_attention) of the replica's time (X (n-1)/n
       prompts per second, the attention groups prefilling theirs in the same iterations; each adds
       p_mix = mixed_first_token_s, not p: the step it rides in reads the weights anyway, and
       prompts packed into one token budget share that read) and the iterations carry it on top of
       the decode step:
       ITL = t(1 + b) / (1 - u). With t(1 + b) = A + B (1 + b) on the roof in force and b = (n-1) D/R
       this is linear in D: D = c1 R / (R - c), c1 = k (A + B), c = (n - 1)(p_mix / dp_attention + k B).
       (p_mix is blended with p by min(b, 1): alone, a prompt has no step to share.)
    3. A prompt's own service: p_eff = p_mix + n_c t(b) (its share of the prefill server: the
       others' decode steps ride in its chunk iterations); it first waits half an iteration,
       ITL / 2, for the running one, and its first token comes when the iteration carrying its last
       chunk ends, a whole step even when it fills n_c < 1 of it: s = ITL / 2 + (1 - n_c) t(b)
       (0 alone).
    4. Waiting behind other prompts: the prefill queue is first-come first-served with n customers
       in a closed loop. Mean-value analysis with Schweitzer's approximation (an arriving request
       sees (n - 1) / n of the mean queue, Q = X T_q; Lazowska et al., Quantitative System
       Performance, 1984, ch. 6) gives T_q = p_eff R / (R - a), a = (n_g - 1) p_eff, where n_g =
       n / dp_attention: each attention data-parallel group prefills its own requests' prompts, so
       a request queues behind its group's others only (n_g = n without attention DP).
       R = T_q + s + D is then a quadratic: (R - a)(R - c) = p_eff (R - c) + c1 (1 + 1/(2k)) (R - a),
       larger root. It tends to R = p_eff + s + D when prompts rarely meet and to n p_eff when prefill
       is the bottleneck (the asymptotic bound of operational analysis).
       Mean-value analysis takes arrivals to see the queue at a random moment; a closed loop of
       identical requests does not. Its first wave leaves prefill as a train, one prompt an
       iteration, and a request ends one iteration after the one ahead of it, so its next prompt
       arrives while that one's is being prefilled and waits for the whole iteration, p_it = p_mix /
       max(n_c, 1) + t(b) (a chunk of it and the others' decode step), instead of half an
       iteration: all but the first of the n_g in a train (train_share; the first's half iteration
       is left out). At the train's root R - D = w = p_eff + (n_g - 1) / n_g x p_it (TTFT = w plus
       the rest of its own iteration, as below), and (R - w)(R - c) = c1 R, larger root. A request
       waits the longer of the two, so R is the larger root: the train where the queue ahead of a
       prompt is shorter than one iteration (a few clients, or short prompts), the queue where it is
       longer. An empty prompt has no prefill iteration to wait for: no train.
    5. p_eff and the roof depend on b, and b on R and D: b is the root of the decreasing function
       (n - 1) D(b) / R(b) - b on [0, n - 1]. Start from b0 = min(n - 1, k / n_c) (prefill-bound, a
       prompt finishes every 1 / n_c iterations and stays k iterations: k / n_c decode), map it
       once, solve at the geometric mean of b0 and its image, and once more at the geometric mean of
       that b and its image (three quadratic solves, no per-row loop: this runs on every row of a
       sweep; the third keeps TPOT monotone in the hardware's speed deep in the prefill-bound
       regime). Against the exact root, R is within 1.5 % and TTFT within 10 % on the catalog's rows
       where TTFT < 2 s (0.01 % and 0.1 % at the C = 8 case of tests/test_load.py), but not on every
       row: tests/test_load.py's toy replica with dp_attention 4 at 256 clients gets TTFT 0.70 s
       against the exact 0.84 s (R within 0.2 %); deep in the prefill-bound regime (TTFT of tens of
       seconds) TTFT may be off by up to 80 %.
    6. The first token also waits request_overhead_s (server, tokeniser; a think time outside the
       GPU). A share beta = burst_share of requests is instead served in synchronised waves: the n
       prompts arrive together, are prefilled back to back, r = max(1, K / S_new) per chunk (S_new
       the prompt tokens computed: S_in without a prefix cache), while decoding waits, and then
       decode together at t(n) and end together (a closed loop's first wave, whose clustering
       identical requests keep in part: docs/serving.md step 6; and every wave of an engine that
       runs waiting prefills before decoding, as SGLang does by default, since identical requests
       that start together stay in step). In a wave prompt j completes with its chunk, so the mean
       TTFT is Q_w = p (n + min(r, n)) / 2 (exact when r divides n), every request takes
       R_w = n p + k t(n), and D_w = R_w - Q_w. TTFT and R are the
       beta-weighted means of the two modes, and ITL = (R - TTFT) / k. An empty prompt's first
       token is one batched step for the whole wave (n p becomes t(n)); with S_out = 1 there is no
       decode phase to keep requests in step and the steady mode applies alone, and no interval
       between tokens: tpot_s is then the decode step at the operating point, t(1 + b).
    7. More clients than slots (C > n): the n in service complete X = n / R_n per second, so by
       Little R = C / X and each request waits R - R_n for a slot before its prefill.

    Then TTFT = R - D, tpot_s = ITL = D / k, requests/s = C / R, output tokens/s = X S_out and
    tokens/s per user = S_out / R = output tokens/s / C: Little's law holds exactly; the share of
    each attention group's time on prompts, prefill_fraction = (C / R) ((1 - beta) p_l + beta u) /
    dp_attention, with p_l what a prompt adds in the steady mode (p_mix riding in decode steps, p
    alone) and u its share of a wave's chunk. At C = 1:
    b = u = s = a = c = 0, so TTFT = p (+ overhead), ITL = t(1), R = TTFT + k t(1): the single-stream
    figures. Percentiles: waiting is 0 with probability 1 - rho (rho = (n_g - 1) p_eff / R, the prefill
    queue's busy share an arrival sees) and exponential otherwise (see _quantile_wait), at most the
    n_g - 1 prompts of its group ahead of it, (n_g - 1) p_eff (first come, first served), and at least
    the train's (every request but the first waits p_it: p_eff + p_it + the rest of its own
    iteration, p_it scaled by min(n_g - 1, 1) below two requests a group); in a wave,
    prompt j = ceil(q n) completes with chunk ceil(j / r), at min(n, r ceil(j / r)) p
    (_wave_quantile). Each mode is taken at the quantile it must reach alone to carry the mixture's
    tail (_tail_share) and the larger is used, a lower bound that is exact when one mode has all the
    weight; the slot wait and overhead are added as constants.
    """
    conc = (c.batch if concurrency is None else concurrency).cast(pl.Float64)
    slots = admission_slots()
    n = pl.min_horizontal(conc, slots)
    lf = frame.with_columns(
        _m=n - 1,
        # others in the request's own attention group's prefill queue (prefill_servers)
        _mg=(n / c.dp_attention - 1).clip(lower_bound=0.0),
        # the share of them that arrive in a train behind another's prompt (none without prompts),
        # and a chunk's share of one
        _pi=pl.when(c.input_tokens > 0).then(train_share(pl.max_horizontal(n / c.dp_attention, 1.0))).otherwise(0.0),
        _chunk=1 / pl.max_horizontal(c.prefill_chunks, 1.0),
        # weights read per step at the batch admitted, n (MoE: the experts it touches; every model: its
        # tokens' embedding rows), not at the concurrency, whose excess waits for a slot + fixed costs
        _M0=c.step_fixed_s + speculative.weights_read(n) * c.seconds_per_byte,
        _b0=pl.min_horizontal(n - 1, c.prefill_bound_decoders),
    )
    lf = _solve_at(lf, "_b0", "_b1")
    lf = lf.with_columns(_b=(pl.col("_b0") * pl.col("_b1")).sqrt())  # between b0 and its image
    lf = _solve_at(lf, "_b", "_b3")
    lf = lf.with_columns(_b=(pl.col("_b") * pl.col("_b3")).sqrt())
    lf = _solve_at(lf, "_b", "_b2", final=True)
    m, k, p, peff = pl.col("_m"), c.decode_steps, c.first_token_s, pl.col("_peff")
    d = pl.col("_D")
    # no token follows the first at S_out = 1: the interval shown is the decode step at the operating
    # point, t(1 + b), what a next token would take (as the disaggregated t_d), with no prompt's stall
    lf = lf.with_columns(_itl=pl.when(k > 0).then(d / k).otherwise(pl.col("_step")))
    itl = pl.col("_itl")
    # s: half the running iteration on arrival, and the rest of the one its first token ends in
    half = pl.col("_share") * itl / 2
    lf = lf.with_columns(_s=half + pl.col("_own"), _tq=pl.col("_R") - d - half)
    t_q, s = pl.col("_tq"), pl.col("_s")
    # the synchronised-wave mode (step 6): all n prompts prefill back to back, then decode together.
    # Without a decode phase (S_out = 1) nothing keeps requests in step: the steady mode alone. An
    # empty prompt's first token is one batched step for the whole wave: `unit` = t(n) / n.
    beta = pl.when(k > 0).then(c.burst_share).otherwise(0.0)
    # each attention group prefills its share n_g = n / dp_attention of the wave's prompts
    n_g = pl.col("_mg") + 1
    lf = lf.with_columns(_r=pl.min_horizontal(_wave_prompts(), n_g), _tn=step_s(m + 1))
    n, r, t_n = m + 1, pl.col("_r"), pl.col("_tn")
    lf = lf.with_columns(_unit=pl.when(c.input_tokens > 0).then(p).otherwise(t_n / n_g))
    unit = pl.col("_unit")
    q_w = unit * (n_g + r) / 2  # mean TTFT in a wave (exact when r divides n_g)
    lf = lf.with_columns(
        _ttftn=c.request_overhead_s + beta * q_w + (1 - beta) * (s + t_q),
        _dn=beta * (k * t_n + n_g * unit - q_w) + (1 - beta) * d,
    )
    lf = lf.with_columns(_rn=pl.col("_ttftn") + pl.col("_dn"))
    r_n = pl.col("_rn")
    itl = pl.when(k > 0).then(pl.col("_dn") / k).otherwise(pl.col("_itl"))
    lf = lf.with_columns(_slot=r_n * (conc / n - 1))
    slot = pl.col("_slot")
    # the prompts ahead of an arrival, a = (n_g - 1) p_eff, and the busy share they make, a / R
    queue, r_op = pl.col("_mg") * peff, pl.col("_R")
    # E[W] / busy = T_q of step 4 at the operating point (in a train too: its wait is not a queue's)
    lf = lf.with_columns(_wait=peff * r_op / pl.max_horizontal(r_op - queue, 1e-300), _lnb=(queue / r_op).log())
    wait, ln_busy = pl.col("_wait"), pl.col("_lnb")
    # in a train every request but the first waits one whole iteration carrying another's prompt
    train_q = pl.col("_own") + peff + pl.col("_mg").clip(upper_bound=1.0) * pl.col("_pit")

    def quantile(q: float) -> pl.Expr:
        """Each mode's quantile at the share of the tail it must carry alone; the larger is a lower
        bound on the mixture's q-quantile (exact when one mode has all the weight)."""
        q_s, q_wave = _tail_share(1 - beta, q), _tail_share(beta, q)
        # no more than the n_g - 1 prompts ahead of it: the wait's tail is capped at a = (n_g - 1) p_eff
        queued = s + peff + pl.min_horizontal(wait * pl.max_horizontal(ln_busy - (1 - q_s).log(), 0.0), queue)
        spread = pl.when(q_s.is_not_null()).then(pl.max_horizontal(queued, train_q))
        wave = pl.when(q_wave.is_not_null()).then(_wave_quantile(unit, n_g, r, q_wave))
        return c.request_overhead_s + slot + pl.max_horizontal(spread, wave)

    out = (
        lf.with_columns(
            decode_step_s=compute.decode_step_s(),
            tpot_s=itl / c.tokens_per_step,
            # the decode batch the solution implies: 1 + (n - 1) D / R spread, n in a wave
            decode_batch=(1 - beta) * (1 + pl.col("_b2")) + beta * n,
            ttft_s=pl.col("_ttftn") + slot,
            request_latency_s=r_n + slot,
            **{f"ttft_{name}_s": quantile(q) for name, q in PERCENTILES.items()},
            load_note=pl.when(conc <= n)
            .then(text(None))
            .when(slots < pl.max_horizontal(c.max_batch, 1))
            .then(text(ADMISSION_WAIT))
            .otherwise(text(SLOT_WAIT)),
        )
        .with_columns(
            ttft_wait_s=c.ttft_s - p,
            requests_per_s_per_replica=conc / c.request_latency_s,
            decode_tokens_per_s_per_seq=c.output_tokens / c.request_latency_s,
            # each attention group's share of time on prompts: its requests/s x what a prompt
            # adds, p_mix in the steady mode, u in a wave
            prefill_fraction=conc
            / c.request_latency_s
            * ((1 - beta) * pl.col("_pl") + beta * pl.col("_unit"))
            / c.dp_attention,
        )
        .with_columns(output_tokens_per_s=c.decode_tokens_per_s_per_seq * conc)
    )
    return out.drop(
        "_m",
        "_mg",
        "_M0",
        "_b0",
        "_b1",
        "_b2",
        "_b3",
        "_b",
        "_R",
        "_D",
        "_peff",
        "_pl",
        "_own",
        "_pit",
        "_pi",
        "_chunk",
        "_step",
        "_share",
        "_itl",
        "_s",
        "_tq",
        "_r",
        "_tn",
        "_unit",
        "_ttftn",
        "_dn",
        "_rn",
        "_slot",
        "_wait",
        "_lnb",
    )


# -- open loop: Poisson arrivals at lambda ---------------------------------------------------------------------------
def open_loop(frame: pl.LazyFrame, rate: pl.Expr, refinements: int = 3) -> pl.LazyFrame:
    """The operating point at lambda = `rate` requests/s per replica (Poisson arrivals). Adds the same
    columns as closed_loop, plus `offered_requests_per_s` (lambda), `concurrency` (lambda x R, by
    Little) and `saturated`.

    Derivation. By PASTA an arriving or decoding request sees the time averages:
    1. Others decoding: lambda D (Little on the decode phase); decode batch b = 1 + lambda D.
    2. Others' prefill share: u = lambda p_mix / dp_attention (what each adds to an iteration others
       decode in, at the last refinement's batch; blended with p by min(lambda D, 1),
       loaded_prompt_s); ITL = t(b) / (1 - u), D = (S_out - 1) ITL. With t(b) = A + B b on each
       roofline piece (compute, memory) the fixed point is explicit:
       D = k (A + B) / (1 - u - k lambda B), k = S_out - 1, valid while the denominator is
       positive (the replica's decode capacity); the max over the two pieces is the fixed point of
       the max. MoE weight reads depend on b: `refinements` passes re-read them at the last b.
    3. Prompt service p_eff = p_mix + n_c t(lambda D) (decode steps riding in its chunks; p blended in
       by min(lambda D, 1)) and s = ITL / 2 for the iteration running on arrival + (1 - n_c) t(lambda D)
       for the rest of the one its first token ends in.
    4. The prefill queue is M/D/1 per attention group (each of the dp_attention groups prefills its
       own share lambda / dp_attention of the prompts): rho = lambda p_eff / dp_attention and
       Pollaczek-Khinchine's mean wait with a
       deterministic service time, W = rho p_eff / (2 (1 - rho)) (Kleinrock, Queueing Systems I,
       1975, eq. 5.105). TTFT = o + p_eff + s + W (o = request_overhead_s); percentiles from the
       exponential tail of W (_quantile_wait). No burst: Poisson arrivals carry their own bunching.
    5. R = TTFT + D, concurrency = lambda R, X = lambda, output tokens/s = lambda S_out.
    Saturated (all latency columns null, `saturated` true with a reason in load_note) when
    rho >= 1, the decode fixed point does not exist, or the implied concurrency exceeds max_batch.
    """
    lam = rate.cast(pl.Float64)
    k = c.decode_steps
    # the groups' prompts stall the steps side by side, each adding p_mix to an iteration others decode in
    lf = frame.with_columns(_p=first_token_s()).with_columns(_lam=lam, _k=k, _nc=prefill_chunks(), _bw=pl.lit(1.0))
    for _ in range(refinements):
        lf = _open_decode(lf.with_columns(_u=lam * loaded_prompt_s(pl.col("_p"), pl.col("_bw") - 1) / c.dp_attention))
    lam, k, d = pl.col("_lam"), pl.col("_k"), pl.col("_D")
    others = lam * d
    lf = lf.with_columns(
        _b=1 + others,
        # the decode phase's own interval, D / k, so that R = TTFT + (S_out - 1) TPOT holds exactly
        # (step_s at the final batch differs from it by the last refinement's change in weight reads)
        # (S_out = 1: no decode phase, the step at the operating point, as closed_loop)
        _itl=pl.when(k > 0).then(d / k).otherwise(step_s(1 + others)),
        _peff=loaded_prompt_s(pl.col("_p"), others) + pl.col("_nc") * _riders(others),
    ).with_columns(
        # half the running iteration on arrival, and the rest of the one its first token ends in:
        # a whole step even when the prompt fills n_c < 1 of it
        _s=pl.min_horizontal(lam * d, 1.0) * pl.col("_itl") / 2
        + (1 - pl.col("_nc")).clip(lower_bound=0.0) * _riders(others),
        _rho=lam * pl.col("_peff") / c.dp_attention,  # each attention group's own M/D/1 queue
    )
    rho, peff = pl.col("_rho"), pl.col("_peff")
    wait = rho * peff / (2 * (1 - rho))
    first = c.request_overhead_s + pl.col("_s")
    ttft = first + peff + wait
    latency = ttft + d
    saturated = (~pl.col("_ok")) | (rho >= 1) | (lam * latency > admission_slots())
    ok = ~saturated
    lf = lf.with_columns(
        saturated=saturated,
        load_note=pl.when(saturated).then(text(SATURATED)).otherwise(text(None)),
        offered_requests_per_s=lam,
        decode_step_s=pl.when(ok).then(step_s(pl.col("_b"))),
        decode_batch=pl.when(ok).then(pl.col("_b")),
        tpot_s=pl.when(ok).then(pl.col("_itl") / c.tokens_per_step),
        ttft_s=pl.when(ok).then(ttft),
        ttft_wait_s=pl.when(ok).then(ttft - pl.col("_p")),
        request_latency_s=pl.when(ok).then(latency),
        concurrency=pl.when(ok).then(lam * latency),
        prefill_fraction=pl.when(ok).then(pl.col("_u")),
        **{
            f"ttft_{name}_s": pl.when(ok).then(first + peff + _quantile_wait(wait, rho, q))
            for name, q in PERCENTILES.items()
        },
    ).with_columns(
        requests_per_s_per_replica=pl.when(ok).then(lam),
        output_tokens_per_s=pl.when(ok).then(lam * c.output_tokens),
        decode_tokens_per_s_per_seq=pl.when(ok).then(c.output_tokens / c.request_latency_s),
    )
    return lf.drop("_p", "_lam", "_k", "_u", "_nc", "_bw", "_D", "_ok", "_b", "_itl", "_peff", "_s", "_rho")


def _open_decode(lf: pl.LazyFrame) -> pl.LazyFrame:
    """Step 2 of open_loop: the decode-phase fixed point D, with MoE weight reads taken at batch `_bw`."""
    lam, k, u, bw = pl.col("_lam"), pl.col("_k"), pl.col("_u"), pl.col("_bw")
    pieces = [  # the closed loop's step coefficients (per sequence: an attention group's share)
        (c.step_fixed_s, c.step_compute_s_per_seq),  # compute roof: A, B
        (c.step_fixed_s + speculative.weights_read(bw) * c.seconds_per_byte, c.step_memory_s_per_seq),  # memory roof
    ]
    ds, oks = [], []
    for a_i, b_i in pieces:
        denom = 1 - u - k * lam * b_i
        oks.append(denom > 0)
        ds.append(pl.when(denom > 0).then(k * (a_i + b_i) / denom).otherwise(0.0))
    return lf.with_columns(_D=pl.max_horizontal(*ds), _ok=oks[0] & oks[1] & (u < 1)).with_columns(
        _bw=1 + pl.col("_lam") * pl.col("_D")
    )


def max_rate(
    frame: pl.DataFrame,
    accept: Callable[[pl.LazyFrame], pl.Expr] | None = None,
    iterations: int = 40,
    loop: Callable[[pl.LazyFrame, pl.Expr], pl.LazyFrame] | None = None,
    servers: pl.Series | None = None,
) -> pl.Series:
    """Per row, the largest rate lambda at which open_loop is not saturated and `accept` (an
    expression on open_loop's columns, e.g. an SLO check) holds: the replica's capacity. A bisection
    on all rows at once between 0 and servers / p (the prefill queue alone saturates there; servers =
    1 here, a disaggregated replica's prefill workers with `loop` = disaggregated.open_loop); TTFT,
    TPOT and saturation rise with lambda, so the accepted rates form an interval from 0."""
    loop = open_loop if loop is None else loop
    # aggregated, a prompt adds at least p_mix with every expert already read (many decoding): rho >=
    # lambda p_mix / groups; a disaggregated prefill pool prefills each prompt alone, in p
    p_min = mixed_first_token_s(pl.lit(1e9)) if servers is None else first_token_s()
    p, groups = frame.lazy().select(p_min, c.dp_attention.cast(pl.Float64)).collect().get_columns()
    lo = pl.Series("lo", [0.0] * frame.height)
    hi = ((groups if servers is None else servers) / p).fill_nan(None).fill_null(0.0).alias("hi")
    for _ in range(iterations):
        mid = (lo + hi) / 2
        trial = loop(frame.lazy(), pl.lit(mid))
        ok = ~pl.col("saturated")
        if accept is not None:
            ok = ok & accept(trial).fill_null(False)
        good = trial.select(ok).collect().to_series()
        lo = pl.select(pl.when(good).then(mid).otherwise(lo)).to_series()
        hi = pl.select(pl.when(good).then(hi).otherwise(mid)).to_series()
    return lo.alias("capacity_requests_per_s")


def quantile_name(percentile: str) -> str:
    """The TTFT column for an SLO percentile: 'mean' -> ttft_s, 'p90' -> ttft_p90_s."""
    return "ttft_s" if percentile == "mean" else f"ttft_{percentile}_s"
