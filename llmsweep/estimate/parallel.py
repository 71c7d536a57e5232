"""Parallel layouts: which link each collective crosses, what it costs, and the rules a layout
must satisfy (DESIGN.md §4, "Beyond one server").

Placement. A replica's gpus = tp x dp_attention x pp GPUs are numbered with tp innermost, then the
attention data-parallel groups, then the pipeline stages (how vLLM, SGLang and TensorRT-LLM rank
them). Three tiers of link join them:

    scale-up    NVLink / Infinity Fabric among the GPUs of one scale-up domain (scale_up_domain_gpus:
                8 on HGX and MI3xx platforms, 72 on GB200/GB300 NVL72); per-GPU bandwidth
                scale_up_bandwidth_bytes_per_s
    pcie        PCIe among the GPUs of one server when they have no scale-up link (or the group is
                larger than the NVLink bridge joins, as on H100 NVL pairs)
    scale-out   the NICs between servers or NVLink domains (scale_out_bandwidth_bytes_per_s per GPU,
                e.g. one ConnectX-7 400 Gb/s NIC per GPU = 50 GB/s)

A "network unit" is the GPUs that reach one another without the NICs: max(scale-up domain, server).
A group of n contiguous GPUs communicates over the scale-up link when n fits the domain, over PCIe
when it fits the server, else over the network. Each collective is costed on the slowest link its
group crosses, with that link's latency (profile: allreduce_latency_s inside a unit,
network_latency_s across units); the experts' all-to-all splits its traffic by destination.
"""

from __future__ import annotations

import polars as pl

from llmsweep.columns import c, text

SCALE_UP, PCIE, SCALE_OUT = "scale-up", "pcie", "scale-out"


# -- links ----------------------------------------------------------------------------------------


def network_unit_gpus() -> pl.Expr:
    """GPUs that reach one another without the scale-out network: the scale-up domain (when the GPU
    has a scale-up link) or the server, whichever is larger (GB200 NVL72: 72; HGX H100: 8)."""
    domain = pl.when(c.scale_up_bandwidth_bytes_per_s.is_not_null()).then(c.scale_up_domain_gpus).otherwise(1)
    return pl.max_horizontal(domain, c.gpus_per_node)


def link_kind(n: pl.Expr) -> pl.Expr:
    """The link a group of n contiguous GPUs communicates over (null for one GPU): scale-up when the
    n GPUs share a scale-up domain, pcie when they share a server, else scale-out."""
    up = c.scale_up_bandwidth_bytes_per_s.is_not_null() & (n <= c.scale_up_domain_gpus)
    return (
        pl.when(n <= 1)
        .then(text(None))
        .when(up)
        .then(text(SCALE_UP))
        .when(n <= c.gpus_per_node)
        .then(text(PCIE))
        .otherwise(text(SCALE_OUT))
    )


def link_bandwidth(kind: pl.Expr) -> pl.Expr:
    """Per-GPU, per-direction bandwidth of a link kind [bytes/s]; null where the catalog has none."""
    return (
        pl.when(kind == SCALE_UP)
        .then(c.scale_up_bandwidth_bytes_per_s)
        .when(kind == PCIE)
        .then(c.pcie_bandwidth_bytes_per_s)
        .when(kind == SCALE_OUT)
        .then(c.scale_out_bandwidth_bytes_per_s)
    )


def link_latency(kind: pl.Expr) -> pl.Expr:
    """alpha of one collective on a link kind [s]: network_latency_s across network units, else
    allreduce_latency_s (profile)."""
    return pl.when(kind == SCALE_OUT).then(c.network_latency_s).otherwise(c.allreduce_latency_s)


def inside_unit_kind(n: pl.Expr) -> pl.Expr:
    """The link between GPUs of a group of n that are in one network unit: that of min(n, U)
    contiguous GPUs (scale-up inside the domain, else PCIe)."""
    return link_kind(pl.min_horizontal(n, c.network_unit_gpus))


def servers_per_replica() -> pl.Expr:
    """Servers one replica spans: ceil(gpus / gpus_per_node)."""
    return (c.gpus / c.gpus_per_node).ceil().cast(pl.Int64)


def tp_link() -> pl.Expr:
    """Link of the tensor-parallel all-reduces: that of the tp contiguous GPUs."""
    return link_kind(c.tp)


def expert_group_gpus() -> pl.Expr:
    """GPUs the experts of one stage are spread over: tp x dp_attention."""
    return c.tp * c.dp_attention


def dispatches_experts() -> pl.Expr:
    """True where the MoE layers send tokens to their experts' GPUs (dispatch and combine
    all-to-alls): expert parallelism across attention data-parallel groups, whose GPUs hold
    different tokens. Expert parallelism inside the tensor-parallel group (dp_attention 1) needs
    none: after attention every GPU of the group holds every token, each runs the tokens routed
    to its own experts, and the MLP's all-reduce sums their outputs. vLLM 0.33's FusedMoE uses
    all-to-all kernels only with data, context or sequence parallelism
    (FusedMoEParallelConfig.use_all2all_kernels); SGLang 0.5.23's DeepSeek MoE without a DeepEP
    backend ends in post_experts_all_reduce (DeepseekV2MoE.forward_normal); TensorRT-LLM without
    attention DP all-reduces too (not checked in its source)."""
    return (c.ep > 1) & (c.dp_attention > 1)


def gathers_experts() -> pl.Expr:
    """True where the MoE layers gather every attention group's tokens instead of dispatching them:
    attention data parallelism without expert parallelism (the experts tensor-split over all tp x
    dp_attention GPUs: SGLang's --enable-dp-attention without --enable-ep-moe)."""
    return (c.ep == 1) & (c.dp_attention > 1) & (c.experts > 0)


def expert_link() -> pl.Expr:
    """Link of the experts' communication (null where there is none beyond the tp all-reduces):
    that of the tp x dp_attention GPUs of a stage."""
    return pl.when(dispatches_experts() | gathers_experts()).then(link_kind(expert_group_gpus()))


def pp_network_boundaries() -> pl.Expr:
    """Stage boundaries that cross the network: the replica spans ceil(gpus / U) network units
    (U = network_unit_gpus), so ceil(gpus / U) - 1 boundaries cross, at most pp - 1 (every one
    when a stage is itself larger than a unit). tp 8 x pp 2 on HGX H100 (U = 8): 1 of 1."""
    units = (c.worker_gpus / c.network_unit_gpus).ceil()
    return pl.min_horizontal(units - 1, c.pp - 1).cast(pl.Float64)


def pp_link() -> pl.Expr:
    """Slowest link a pipeline stage boundary crosses (null at pp = 1)."""
    return (
        pl.when(c.pp <= 1)
        .then(text(None))
        .when(pp_network_boundaries() > 0)
        .then(text(SCALE_OUT))
        .otherwise(c.pp_inside_link)
    )


# -- costs: each a fixed part per forward pass and a part per token of an attention group ---------


def allreduce_fixed_s() -> pl.Expr:
    """Latency part of one forward pass's tensor-parallel communication: one all-reduce after each
    row-parallel sublayer (tp_allreduces: 2 L, after attention and after the MLP), 2 L x alpha(tp link).
    Zero when tp = 1."""
    return pl.when(c.tp > 1).then(c.tp_allreduces * link_latency(c.tp_link)).otherwise(0.0)


def allreduce_s_per_token() -> pl.Expr:
    """Bandwidth part per token: a ring all-reduce moves 2 (tp - 1) / tp of the message (d x
    activation bytes per token) over the per-direction link, tp_allreduces times a pass (2 L). A tp
    group larger than a network unit runs its ring through the NICs: costed at their bandwidth (the
    slowest link it crosses)."""
    per_token = c.tp_allreduces * 2 * (c.tp - 1) / c.tp * c.hidden_size * c.activation_bytes_per_element
    return pl.when(c.tp > 1).then(per_token / c.link_bandwidth_bytes_per_s).otherwise(0.0)


def expert_traffic() -> tuple[pl.Expr, pl.Expr]:
    """(share of a token's dispatched hidden states sent to another GPU of the same network unit,
    share sent across the network). The ep ranks are spread evenly over the n = tp x dp_attention
    GPUs, min(n, U) of them in each unit: a destination is on the own GPU with probability 1 / ep,
    in the unit with min(n, U) / n, so inside = min(n, U) / n - 1 / ep, across = 1 - min(n, U) / n.
    ep 16 over two HGX servers (n = 16, U = 8): 7/16 over NVLink, 8/16 over the NICs."""
    n = expert_group_gpus()
    local = pl.min_horizontal(n, c.network_unit_gpus) / n
    return (local - 1 / c.ep).clip(lower_bound=0.0), 1 - local


def alltoall_fixed_s() -> pl.Expr:
    """Latency part of one forward pass's expert communication: a dispatch and a combine all-to-all
    per MoE layer (or, gathering, an all-gather and a reduce-scatter), 2 x L_moe x alpha (the
    network's alpha when any destination is across it). Zero without attention data parallelism
    (experts split or placed within the tp group use its all-reduces: dispatches_experts)."""
    return pl.when(c.expert_link.is_not_null()).then(2 * c.moe_layers * link_latency(c.expert_link)).otherwise(0.0)


def alltoall_s_per_token() -> pl.Expr:
    """Bandwidth part per token of an attention group: dispatch sends the token's hidden state
    (d_moe x activation bytes; d_moe = moe_width: d, or the latent Nemotron-3 routes) to its k experts
    and combine brings the results back; the group's tp GPUs share the sending, each through its own
    links:
    2 x L_moe x k x d_moe x bytes / tp x (inside / inside-unit link + across / NIC)
    (= ... x (ep - 1) / ep / link inside one unit; DeepSeek-V3 report §3.2: dispatch/combine over
    NVLink within a node and InfiniBand across nodes)."""
    volume = 2 * c.moe_layers * c.experts_per_token * c.moe_width * c.activation_bytes_per_element / c.tp
    inside, across = expert_traffic()
    over_network = pl.when(across > 0).then(across / c.scale_out_bandwidth_bytes_per_s).otherwise(0.0)
    inside_s = pl.when(inside > 0).then(inside / c.expert_link_bandwidth_bytes_per_s).otherwise(0.0)
    dispatch = volume * (inside_s + over_network)
    gather = gather_s_per_token()
    return pl.when(dispatches_experts()).then(dispatch).when(gathers_experts()).then(gather).otherwise(0.0)


def gather_s_per_token() -> pl.Expr:
    """Bandwidth part per token of a group when the MoE layers gather (gathers_experts): every GPU of
    the n = tp x dp_attention receives every group's tokens before the experts (all-gather) and
    returns the partial sums after them (reduce-scatter), each (n - 1) / n of the dp_attention
    groups' tokens, over the slowest link of the n GPUs:
    2 x L_moe x (n - 1) / n x dp_attention x d_moe x bytes / link (d_moe: moe_width)."""
    n = expert_group_gpus()
    per_token = 2 * c.moe_layers * (n - 1) / n * c.dp_attention * c.moe_width * c.activation_bytes_per_element
    return per_token / link_bandwidth(c.expert_link)


def pp_fixed_s() -> pl.Expr:
    """Latency part of one forward pass's pipeline sends: one send per stage boundary, each alpha of
    its link: n_net x network_latency_s + (pp - 1 - n_net) x allreduce_latency_s."""
    net = pp_network_boundaries()
    return net * c.network_latency_s + (c.pp - 1 - net) * c.allreduce_latency_s


def pp_s_per_token() -> pl.Expr:
    """Bandwidth part per token: each boundary sends one hidden state (d x activation bytes) per
    token: d x bytes x (n_net / NIC + (pp - 1 - n_net) / inside-unit link). A link of unknown
    bandwidth inside a server (consumer cards' PCIe) costs latency only: the message is small."""
    net = pp_network_boundaries()
    message = c.hidden_size * c.activation_bytes_per_element
    inside = pl.when(c.pp - 1 - net > 0).then((c.pp - 1 - net) / c.pp_link_bandwidth_bytes_per_s).otherwise(0.0)
    across = pl.when(net > 0).then(net / c.scale_out_bandwidth_bytes_per_s).otherwise(0.0)
    return (message * (inside.fill_null(0.0) + across)).fill_null(0.0)


def comm_fixed_s() -> pl.Expr:
    """Latency part of one forward pass's communication: all-reduces + all-to-alls + pp sends."""
    return c.allreduce_fixed_s + c.alltoall_fixed_s + c.pp_fixed_s


def comm_s_per_token() -> pl.Expr:
    """Bandwidth part per token of an attention group: all-reduces + all-to-alls + pp sends."""
    return c.allreduce_s_per_token + c.alltoall_s_per_token + c.pp_s_per_token


def comm_s(tokens: pl.Expr) -> pl.Expr:
    """Communication of one forward pass over `tokens` tokens of an attention group [s]."""
    return c.comm_fixed_s + tokens * c.comm_s_per_token


def expert_placement() -> pl.Expr:
    """Busiest expert-parallel rank's experts over the mean: ceil(E / ep) x ep / E (1 when ep divides
    E). Engines place experts unevenly when it does not (vLLM gives the first E mod ep ranks one
    more; SGLang/TensorRT-LLM add redundant expert slots): DeepSeek-R1 (256 experts) on ep 12 holds
    22 on the busiest rank, 22 x 12 / 256 = 1.03."""
    e = c.experts.cast(pl.Float64)
    return pl.when((c.ep > 1) & (c.experts > 0)).then((e / c.ep).ceil() * c.ep / e).otherwise(1.0)


# -- rules ----------------------------------------------------------------------------------------


def layout_reason() -> pl.Expr:
    """Why a (GPU, model, layout) combination cannot run at all, or null.

    Rules as the engines enforce them (vLLM, SGLang, TensorRT-LLM): tp divides the attention heads
    (engines run other GPU counts with attention data parallelism: tp x dp_attention); tp and the
    KV heads divide one another (else heads cannot be split or replicated evenly); pp <= layers;
    ep and dp_attention only for MoE models, ep dividing tp x dp_attention and at most the routed
    experts (an ep that does not divide them places one more expert on some ranks); a link with a
    known bandwidth for every collective, including the scale-out network for a layout across
    servers or NVLink domains; a published rate for the compute dtype. Before all of them, an engine
    on a platform it does not run on (MLX off Apple silicon, TensorRT-LLM off NVIDIA: `platform_reason`,
    one per GPU and engine). Messages are literals (the
    numbers are in the row).
    """
    spans_network = c.worker_gpus > c.network_unit_gpus
    rules = [
        ((c.attention_heads % c.tp != 0) & (c.experts == 0), "tp does not divide the model's attention heads"),
        (
            c.attention_heads % c.tp != 0,
            "tp does not divide the model's attention heads (for MoE models engines run such GPU counts "
            "attention data-parallel: set dp_attention with a tp that divides the heads, e.g. tp 1)",
        ),
        ((c.kv_heads % c.tp != 0) & (c.tp % c.kv_heads != 0), "tp and the model's KV heads do not divide one another"),
        (c.pp > c.layers, "pp exceeds the model's layers"),
        (
            ((c.ep > 1) | (c.dp_attention > 1)) & (c.experts == 0),
            "ep and dp_attention apply to MoE models; a dense model's data parallelism is more replicas",
        ),
        (
            (c.tp * c.dp_attention) % c.ep != 0,
            "ep does not divide tp x dp_attention (the experts of a stage are spread over those GPUs)",
        ),
        ((c.ep > 1) & (c.ep > c.experts), "ep exceeds the model's routed experts"),
        (
            spans_network & c.scale_out_bandwidth_bytes_per_s.is_null(),
            "the layout spans servers (more GPUs than one server or NVLink domain) and the GPU has no known "
            "scale-out network bandwidth (scale_out_gbps_per_direction)",
        ),
        ((c.tp > 1) & c.link_bandwidth_bytes_per_s.is_null(), "no known interconnect bandwidth for tp > 1"),
        (
            dispatches_experts() & c.expert_link_bandwidth_bytes_per_s.is_null() & (expert_traffic()[0] > 0),
            "no known interconnect bandwidth for the experts' all-to-all (ep > 1 with dp_attention > 1)",
        ),
        (
            gathers_experts() & link_bandwidth(c.expert_link).is_null(),
            "no known interconnect bandwidth for the experts' gather over the dp_attention groups",
        ),
        (c.peak_flops_per_s.is_null(), "no published peak rate for the compute dtype or any wider one"),
    ]
    expr = text(None)
    for condition, message in reversed(rules):
        expr = pl.when(condition).then(text(message)).otherwise(expr)
    # first, an engine on a platform it does not run on (grid.gpu_table, from catalog/engines.ENGINE_PLATFORMS)
    return pl.when(c.platform_reason.is_not_null()).then(c.platform_reason).otherwise(expr)


def row_reason() -> pl.Expr:
    """The layout's reason, else a context longer than the model's, else memory that does not fit."""
    return (
        pl.when(c.layout_reason.is_not_null())
        .then(c.layout_reason)
        .when(c.context_tokens > c.max_context_tokens)
        .then(text("context_tokens exceeds the model's maximum context"))
        .otherwise(memory_reason())
    )


MEMORY_REASON = "does not fit: memory_per_gpu_bytes exceeds usable_memory_bytes"


def memory_reason() -> pl.Expr:
    """The row does not fit (memory_per_gpu_bytes and usable_memory_bytes say by how much)."""
    return pl.when(c.memory_per_gpu_bytes > c.usable_memory_bytes).then(text(MEMORY_REASON))
