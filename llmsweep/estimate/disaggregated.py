"""Disaggregated serving: a replica is a prefill pool of x workers and a decode pool of y workers,
the prompt's KV cache moving from one to the other (NVIDIA Dynamo, llm-d, SGLang PD; DESIGN.md §4).

A row's layout columns (gpu, tp, pp, ep, dp_attention) are the decode worker's; the prefill
worker's layout is prefill_tp, prefill_pp, prefill_ep and prefill_dp_attention on the same GPU,
its terms joined as prefill_* columns (`pair`). A request:

1. waits for a prefill worker and is prefilled alone there, in p = prefill_first_token_s (the
   prefill worker's compute-bound prefill; no decode rides in its iterations); a worker with
   attention data parallelism prefills one prompt per attention group at a time, so the pool
   serves x = prefill_workers x prefill_dp_attention prompts at once (prefill_servers);
2. has its prompt's KV cache moved to a decode worker: tau = kv_transfer_s, the prompt's KV bytes
   over the link between the pools (NVLink when both pools sit in one scale-up domain, else the
   NICs; each of the prefill worker's GPUs sends its shard over its own link, and each of the
   decode worker's GPUs receives its shard over its own link, so the busier side sets the time);
3. decodes there: its first decode step returns the first token and k = (S_out - 1) / E more steps
   follow, each t_d(b) at the decode worker's batch b with no prefill interleaved.

So TTFT = overheads + prefill wait + p + tau + t_d(b), TPOT = t_d(b) / E, R = TTFT + k t_d(b); the
overheads are request_overhead_s (as aggregated) and handoff_overhead_s (the hand-off between the
pools beyond the KV transfer: router bootstrap, prefill dispatch, transfer setup; profile).

Queueing. The prefill pool is x servers of deterministic service time p. In the closed loop (C
clients) mean-value analysis with Schweitzer's approximation as for the aggregated mode, the x
servers by Seidmann's approximation (one server of service time p / x plus a delay of
p (x - 1) / x; Seidmann, Schweitzer and Shalev-Oren, 1987): the prefill residence is
T_p = p (x - 1) / x + (p / x) R / (R - a), with a = max(n - x, 0) p / x, the others beyond the
x - 1 other servers, in place of Seidmann's (n - 1) p / x, which makes a request wait when every
client has a server (n <= x); R is then held at the prefill pool's throughput bound, R >= n p / x,
which Seidmann's a reaches as prefill becomes the bottleneck and this a alone falls below. Against
a simulated closed loop of x deterministic servers and exponential think times (p = 1 s), the mean
wait at 16 clients on 4 servers, 3 s think time, is 0.50 s against 0.38 s simulated (Seidmann's
a: 0.85 s); at 16 clients, 0.4 s think time, 2.60 s both (2.70 s); at 8 on 8, 0 (0.24 s). The
decode pool is y workers among which
a router balances the sequences: a decoding request shares its worker with its share of the others,
b = max(1, (1 + (n - 1) D / R) / y) (= C / y when prefill takes no time: 16 clients on 2 workers
decode 8 each), D = (1 + k) t_d(b) its time in decode. On each roofline piece t_d = A + B b this is
D = c1 R / (R - c2), c1 = (1 + k)(A + B / y), c2 = (1 + k) B (n - 1) / y, and at b = 1,
D = (1 + k)(A + B); D is the larger (the fixed point of a max is the max of the fixed points).
R = overhead + tau + T_p + D has one root above max(a, c2), found on every row at once by Newton's
method from the largest root of the equation with one term alone (_newton_step says why it converges).
In the open loop (Poisson arrivals at lambda) the prefill pool is M/D/x with the Allen-Cunneen
approximation: W = P_wait p / (2 x (1 - rho)), rho = lambda p / x, P_wait = rho^(sqrt(2 (x + 1)) - 1)
(Sakasegawa's M/M/x approximation, exact at x = 1, where W is Pollaczek-Khinchine's
rho p / (2 (1 - rho))), and b = max(1, (1 + lambda D) / y) by PASTA:
D = (1 + k)(A + B / y) / (1 - (1 + k) lambda B / y). Requests/s are bounded by the slower pool (the
queueing does it: rho < 1, decode denominators > 0); Little's law is exact: requests/s = C / R.
Percentiles take the prefill wait's exponential tail (load._quantile_wait) with P_wait as its busy
share (in the closed loop at the utilisation an arrival sees, (n - 1) / n rho, rho = X p / x), at
most the prompts ahead of a request: none when n <= x, else ceil((n - x) / x) p.

Memory: a prefill worker holds its weights, one prompt's KV cache and its workspace; a decode
worker its weights and the KV cache of the ceil(C / y) sequences it may hold; both must fit, and
decode admission is bounded by the decode workers' KV capacity (n = min(C, y x slots)).
"""

from __future__ import annotations

import polars as pl

from llmsweep.columns import POOL_COLUMNS, c, text
from llmsweep.estimate import compute, load, parallel, speculative
from llmsweep.estimate.memory import kv_sequence_bytes, target_kv_gpu_bytes
from llmsweep.estimate.parallel import SCALE_OUT, SCALE_UP

AGGREGATED, DISAGGREGATED = "aggregated", "disaggregated"
MODES = (AGGREGATED, DISAGGREGATED)
NO_KV_LINK = (
    "the pools span servers and the GPU has no known scale-out network bandwidth to move the KV cache "
    "(scale_out_gbps_per_direction)"
)
_NEWTON = 8  # Newton steps from the left: quadratic convergence, below 1e-12 of R in every case tested
# The prefill worker's terms a disaggregated row takes (prefill_ prefixed where the decode worker has its own).
PREFILL_TERMS = {
    "prefill_s": "prefill_s",
    "prefill_flops": "prefill_flops",
    "prefill_tokens_per_s": "prefill_tokens_per_s",
    "prefill_arithmetic_intensity": "prefill_arithmetic_intensity",
    "first_token_s": "prefill_first_token_s",
    "worker_gpus": "prefill_worker_gpus",
    "_kv_shard": "prefill_kv_shard_bytes",
    "layout_reason": "prefill_layout_reason",
    "usable_memory_bytes": "prefill_usable_memory_bytes",
    "_prefill_memory": "prefill_memory_per_gpu_bytes",
    "tp": "prefill_tp",
    "pp": "prefill_pp",
    "ep": "prefill_ep",
    "dp_attention": "prefill_dp_attention",
}
# Columns that only a disaggregated row has (null in an aggregated one).
DISAGGREGATED_ONLY = (
    *POOL_COLUMNS,
    "prefill_worker_gpus",
    "kv_transfer_bytes",
    "kv_link",
    "kv_transfer_s",
    "prefill_memory_per_gpu_bytes",
    "prefill_utilization",
)


def prefill_worker_memory() -> pl.Expr:
    """Memory of a prefill worker's GPU: weights + overhead + one prompt's KV cache (its shard) +
    the workspace of one chunk of it (the prompt leaves for the decode pool once prefilled)."""
    kv = target_kv_gpu_bytes(c.input_tokens)
    chunk = pl.min_horizontal(c.prefill_new_tokens, c.prefill_chunk_tokens) * c.activation_bytes_per_token
    return c.weight_bytes + c.overhead_bytes + kv + chunk + c.logits_bytes_per_sequence


def pair(
    decode: pl.LazyFrame, prefill: pl.LazyFrame, keys: list[str], workers: pl.LazyFrame | None = None
) -> pl.LazyFrame:
    """Disaggregated rows: every decode option (layout x lengths, estimated up to the length terms)
    with every prefill option of the same GPU, engine, model, precision, lengths and serving
    settings (`keys`), and every (prefill_workers, decode_workers) of `workers` (None: the decode
    rows carry their own). The decode option keeps its own layout; the prefill option's terms
    replace the prompt's (PREFILL_TERMS)."""
    side = prefill.with_columns(
        _prefill_memory=prefill_worker_memory(), _kv_shard=target_kv_gpu_bytes(c.input_tokens)
    ).select(*keys, *(pl.col(k).alias(v) for k, v in PREFILL_TERMS.items()))
    own = () if workers is None else ("prefill_workers", "decode_workers")
    frame = decode.drop(*PREFILL_TERMS.values(), *own, strict=False).join(
        side, on=keys, how="inner", maintain_order="left_right"
    )
    if workers is not None:
        frame = frame.join(workers, how="cross", maintain_order="left_right")
    return (
        frame.with_columns(
            mode=text(DISAGGREGATED),
            prefill_pool_gpus=c.prefill_workers * c.prefill_worker_gpus,
            decode_pool_gpus=c.decode_workers * c.worker_gpus,
            first_token_s=c.prefill_first_token_s,
        )
        .with_columns(
            gpus=c.prefill_pool_gpus + c.decode_pool_gpus,
            kv_transfer_bytes=kv_sequence_bytes(c.input_tokens),
            decode_kv_shard_bytes=target_kv_gpu_bytes(c.input_tokens),
        )
        .with_columns(kv_link=kv_link())
        .with_columns(
            servers_per_replica=parallel.servers_per_replica(),
            kv_transfer_s=kv_transfer_s(),
            layout_reason=pool_reason(),
        )
    )


def prefill_side(rows: pl.LazyFrame) -> pl.LazyFrame:
    """Rows whose prefill_tp, prefill_pp, prefill_ep and prefill_dp_attention give their prefill
    worker's layout, as that worker's own configuration (no speculative decoding: it only prefills)."""
    layout = {n: pl.col(f"prefill_{n}") for n in ("tp", "pp", "ep", "dp_attention")}
    return rows.with_columns(**layout, speculative=text("none"), draft_tokens=pl.lit(0, pl.Int64))


def kv_link() -> pl.Expr:
    """The link between the pools: scale-up when the whole replica fits one scale-up domain (an NVL72
    rack, or both pools in one HGX server), else the NICs."""
    inside = c.scale_up_bandwidth_bytes_per_s.is_not_null() & (c.gpus <= c.scale_up_domain_gpus)
    return pl.when(inside).then(text(SCALE_UP)).otherwise(text(SCALE_OUT))


def kv_transfer_s() -> pl.Expr:
    """tau = max(busiest sender's shard, busiest receiver's shard) / (per-GPU link bandwidth x
    kv_transfer_efficiency) + the link's latency [s]. Every GPU moves its own shard of the prompt's
    cache over its own link (NVLink port or NIC) and the shards move at once, so the transfer ends
    when the GPU with the most bytes on either side has moved them: each of the prefill worker's GPUs
    sends prefill_kv_shard_bytes and each of the decode worker's GPUs receives decode_kv_shard_bytes,
    both memory.target_kv_gpu_bytes at input_tokens under that worker's own layout (attention KV
    split over its KV heads, a recurrent state over tp; the target's cache only: the prefill worker
    runs no draft). The GPUs of one type share a per-GPU link bandwidth, so one bandwidth serves
    both sides.

    DeepSeek-R1, 8,192 tokens of a 16-bit latent (70,272 bytes per token, replicated on every tp rank
    on both sides: one full shard each), on a 50 GB/s NIC at efficiency 1: 575,668,224 / 50e9 =
    11.5 ms. Llama-3.1-8B, 4,096 tokens of 131,072 bytes = 536,870,912 bytes from a tp 8 prefill
    worker (8 KV heads: 67,108,864 bytes per sender, 1.34 ms) to a tp 1 decode worker, whose one GPU
    receives all of it: 536,870,912 / 50e9 = 10.7 ms."""
    bandwidth = (
        pl.when(c.kv_link == SCALE_UP)
        .then(c.scale_up_bandwidth_bytes_per_s)
        .otherwise(c.scale_out_bandwidth_bytes_per_s)
    )
    latency = pl.when(c.kv_link == SCALE_UP).then(c.allreduce_latency_s).otherwise(c.network_latency_s)
    busiest = pl.max_horizontal(c.prefill_kv_shard_bytes, c.decode_kv_shard_bytes)
    moved = busiest / (bandwidth * c.kv_transfer_efficiency)
    return pl.when(c.input_tokens > 0).then(moved + latency).otherwise(0.0)


def pool_reason() -> pl.Expr:
    """The decode worker's layout reason, else the prefill worker's, else no link for the KV cache."""
    no_link = (c.kv_link == SCALE_OUT) & c.scale_out_bandwidth_bytes_per_s.is_null()
    return (
        pl.when(c.layout_reason.is_not_null())
        .then(c.layout_reason)
        .when(c.prefill_layout_reason.is_not_null())
        .then(pl.concat_str(pl.lit("prefill worker: "), c.prefill_layout_reason.cast(pl.String)).cast(pl.Categorical))
        .when(no_link)
        .then(text(NO_KV_LINK))
        .otherwise(text(None))
    )


def prefill_fits() -> pl.Expr:
    """The prefill worker's GPU holds its weights, one prompt and its workspace."""
    return c.prefill_memory_per_gpu_bytes <= c.prefill_usable_memory_bytes


def prefill_servers() -> pl.Expr:
    """x: prompts the prefill pool works on at once: prefill_workers x prefill_dp_attention (each
    attention data-parallel group of a worker prefills its own prompt; the experts they share are
    spread over all the worker's GPUs, so with every group busy each prompt takes p)."""
    return (c.prefill_workers * c.prefill_dp_attention).cast(pl.Float64)


def _roofs(b: pl.Expr) -> list[tuple[pl.Expr, pl.Expr]]:
    """The decode step's two roofline pieces t_d = A + B b per worker (the closed loop's step
    coefficients), the weights read taken at b sequences."""
    weights = speculative.weights_read(b) * c.seconds_per_byte
    return [
        (c.step_fixed_s, c.step_compute_s_per_seq),
        (c.step_fixed_s + weights, c.step_memory_s_per_seq),
    ]


def _busy_share(rho: pl.Expr, x: pl.Expr) -> pl.Expr:
    """P(wait) at x servers of utilisation rho: rho^(sqrt(2 (x + 1)) - 1) (Sakasegawa 1977; = rho at x = 1)."""
    return rho.clip(0.0, 1.0).pow((2 * (x + 1)).sqrt() - 1)


def _single_term_root(e: pl.Expr, k: pl.Expr, s: pl.Expr) -> pl.Expr:
    """The larger root of R - e = k R / (R - s): R^2 - (e + s + k) R + e s = 0."""
    half = (e + s + k) / 2
    return half + (half * half - e * s).clip(lower_bound=0.0).sqrt()


def _decode_s(r: pl.Expr) -> pl.Expr:
    """D(R) = max(c1 R / (R - c2) on each roof, D at b = 1): the time in decode at latency R."""
    shared = (pl.col(f"_c1{i}") * r / (r - pl.col(f"_c2{i}")) for i in "ab")
    return pl.max_horizontal(*shared, pl.col("_one"))


def _newton_step(r: pl.Expr, e: pl.Expr) -> pl.Expr:
    """One Newton step on h(R) = R - e - px R / (R - a) - D(R). h is increasing and concave above
    its poles (each term is convex and decreasing, and so is their max), so from a point left of the
    root every step stays left of it and moves right: the iteration converges without a bracket."""
    px, a = pl.col("_px"), pl.col("_a")
    h = r - e - px * r / (r - a) - _decode_s(r)
    slope = 1 + px * a / (r - a).pow(2) + _decode_slope(r)
    return r - h / slope


def _decode_slope(r: pl.Expr) -> pl.Expr:
    """-dD/dR of the term in force in _decode_s: c1 c2 / (R - c2)^2 (0 at b = 1)."""
    terms = [
        (
            pl.col(f"_c1{i}") * r / (r - pl.col(f"_c2{i}")),
            pl.col(f"_c1{i}") * pl.col(f"_c2{i}") / (r - pl.col(f"_c2{i}")).pow(2),
        )
        for i in "ab"
    ]
    (da, sa), (db, sb) = terms
    return pl.when((da >= db) & (da >= pl.col("_one"))).then(sa).when(db >= pl.col("_one")).then(sb).otherwise(0.0)


def closed_loop(frame: pl.LazyFrame) -> pl.LazyFrame:
    """The operating point at concurrency C = `batch` (module docstring): adds the columns that
    load.closed_loop adds, and prefill_utilization."""
    conc = c.batch.cast(pl.Float64)
    x, y = prefill_servers(), c.decode_workers.cast(pl.Float64)
    slots = load.admission_slots() * y
    n = pl.min_horizontal(conc, slots)
    p, k1 = c.first_token_s, 1 + c.decode_steps
    lf = frame.with_columns(
        # the queue ahead of an arrival: the others beyond the x - 1 other servers (0 when n <= x)
        _n=n,
        _a=(n - x).clip(lower_bound=0.0) * p / x,
        _e=c.request_overhead_s + c.handoff_overhead_s + c.kv_transfer_s + p * (x - 1) / x,
    )
    n, e = pl.col("_n"), pl.col("_e")
    roofs = _roofs(pl.max_horizontal(n / y, 1.0))
    c1 = [k1 * (ai + bi / y) for ai, bi in roofs]
    c2 = [k1 * bi * (n - 1) / y for _, bi in roofs]
    alone = pl.max_horizontal(*(k1 * (ai + bi) for ai, bi in roofs))  # D at b = 1
    px = p / x
    lf = lf.with_columns(_px=px, _c1a=c1[0], _c1b=c1[1], _c2a=c2[0], _c2b=c2[1], _one=alone)
    terms = [("_px", "_a"), ("_c1a", "_c2a"), ("_c1b", "_c2b")]
    # start left of the root: the largest root of R - e = one term alone (the others only add)
    lf = lf.with_columns(
        _R=pl.max_horizontal(*(_single_term_root(e, pl.col(k), pl.col(s)) for k, s in terms), e + pl.col("_one"))
    )
    for _ in range(_NEWTON):
        lf = lf.with_columns(_R=_newton_step(pl.col("_R"), e))
    # and no faster than the prefill pool serves the n: X <= x / p, R >= n p / x
    lf = lf.with_columns(_R=pl.max_horizontal("_R", n * px))
    r = pl.col("_R")
    lf = lf.with_columns(_D=_decode_s(r)).with_columns(_td=pl.col("_D") / k1)
    r, d, t_d = pl.col("_R"), pl.col("_D"), pl.col("_td")
    # R = e + p / x + wait + D: the wait is what the prefill residence adds to p, px a / (R - a) at the
    # root, and what the bound adds where it binds
    lf = lf.with_columns(_wait=r - e - px - d, _rho=n / r * px, _slot=r * (conc / n - 1))
    wait, rho, slot = pl.col("_wait"), pl.col("_rho"), pl.col("_slot")
    # an arrival sees the others' share of the pool's time, (n - 1) / n of its utilisation (as
    # load.closed_loop's (n - 1) p_eff / R), and waits for no more than the prompts ahead of it: the
    # n - 1 others leave a worker free when n <= x, else ceil((n - x) / x) services of p
    busy = _busy_share((n - 1) / n * rho, x)
    longest = ((n - x) / x).ceil().clip(lower_bound=0.0) * p
    first = c.request_overhead_s + c.handoff_overhead_s + c.kv_transfer_s + t_d + p
    out = lf.with_columns(
        decode_step_s=compute.decode_step_s(),
        tpot_s=t_d / c.tokens_per_step,
        decode_batch=pl.max_horizontal((1 + (n - 1) * d / r) / y, 1.0),
        ttft_s=first + wait + slot,
        request_latency_s=r + slot,
        **{
            f"ttft_{name}_s": first + slot + pl.min_horizontal(load._quantile_wait(wait, busy, q), longest)
            for name, q in load.PERCENTILES.items()
        },
        load_note=pl.when(conc <= n).then(text(None)).otherwise(text(load.SLOT_WAIT)),
        prefill_utilization=rho,
    ).with_columns(
        ttft_wait_s=c.ttft_s - p,
        requests_per_s_per_replica=conc / c.request_latency_s,
        decode_tokens_per_s_per_seq=c.output_tokens / c.request_latency_s,
        prefill_fraction=c.prefill_pool_gpus / c.gpus,
    )
    out = out.with_columns(output_tokens_per_s=c.decode_tokens_per_s_per_seq * conc)
    return out.drop(
        "_n",
        "_a",
        "_e",
        "_c1a",
        "_c1b",
        "_c2a",
        "_c2b",
        "_one",
        "_px",
        "_R",
        "_D",
        "_td",
        "_wait",
        "_rho",
        "_slot",
    )


def open_loop(frame: pl.LazyFrame, rate: pl.Expr, refinements: int = 3) -> pl.LazyFrame:
    """The operating point at lambda = `rate` requests/s per replica (module docstring): adds the
    columns load.open_loop adds, and prefill_utilization."""
    lam = rate.cast(pl.Float64)
    x, y = prefill_servers(), c.decode_workers.cast(pl.Float64)
    p, k1 = c.first_token_s, 1 + c.decode_steps
    lf = frame.with_columns(_lam=lam, _rho=lam * p / x, _bw=pl.lit(1.0))
    lam, rho = pl.col("_lam"), pl.col("_rho")
    for _ in range(refinements):
        ds, oks = [], []
        for ai, bi in _roofs(pl.col("_bw")):
            denom = 1 - k1 * lam * bi / y
            oks.append(denom > 0)
            ds.append(pl.when(denom > 0).then(k1 * (ai + bi / y) / denom).otherwise(0.0))
            ds.append(k1 * (ai + bi))  # b = 1
        lf = lf.with_columns(_D=pl.max_horizontal(*ds), _ok=oks[0] & oks[1]).with_columns(
            _bw=pl.max_horizontal((1 + lam * pl.col("_D")) / y, 1.0)
        )
    d = pl.col("_D")
    busy = _busy_share(rho, x)
    wait = busy * p / (2 * x * (1 - rho))
    t_d = d / k1
    first = c.request_overhead_s + c.handoff_overhead_s + p + c.kv_transfer_s + t_d
    latency = first + wait + d - t_d
    saturated = (~pl.col("_ok")) | (rho >= 1) | (lam * d / y > load.admission_slots())
    ok = ~saturated
    lf = lf.with_columns(
        saturated=saturated,
        load_note=pl.when(saturated).then(text(load.SATURATED)).otherwise(text(None)),
        offered_requests_per_s=lam,
        decode_step_s=pl.when(ok).then(load.step_s(pl.col("_bw"))),
        decode_batch=pl.when(ok).then(pl.col("_bw")),
        tpot_s=pl.when(ok).then(t_d / c.tokens_per_step),
        ttft_s=pl.when(ok).then(first + wait),
        ttft_wait_s=pl.when(ok).then(first + wait - p),
        request_latency_s=pl.when(ok).then(latency),
        concurrency=pl.when(ok).then(lam * latency),
        prefill_fraction=pl.when(ok).then(c.prefill_pool_gpus / c.gpus),
        prefill_utilization=pl.when(ok).then(rho),
        **{
            f"ttft_{name}_s": pl.when(ok).then(first + load._quantile_wait(wait, busy, q))
            for name, q in load.PERCENTILES.items()
        },
    ).with_columns(
        requests_per_s_per_replica=pl.when(ok).then(lam),
        output_tokens_per_s=pl.when(ok).then(lam * c.output_tokens),
        decode_tokens_per_s_per_seq=pl.when(ok).then(c.output_tokens / c.request_latency_s),
    )
    return lf.drop("_lam", "_rho", "_bw", "_D", "_ok")


def row_reason() -> pl.Expr:
    """parallel.row_reason for the decode worker, else a prefill worker whose GPU cannot hold a prompt."""
    return (
        pl.when(parallel.row_reason().is_not_null())
        .then(parallel.row_reason())
        .when(~prefill_fits())
        .then(
            text("does not fit: a prefill worker cannot hold its weights and one prompt (prefill_memory_per_gpu_bytes)")
        )
    )
