"""Analysis of a trained run: attention maps, and which rotary frequencies the model uses.

The parameters come from the run's final checkpoint; a run directory without checkpoints (written
before they existed) is trained again in memory from its config.json by `retrain` (the same seed
and program as training), which reports how far its logged metrics are from the run's
metrics.jsonl (zero when reproduced exactly). Attention is then
recomputed layer by layer from the model's parameters and the encoding's hooks, on the first
evaluation sequence at the training length and at 4x, and checked against the model's own
attention output. For rotary models, frequency usage follows Barbero et al. (2025), "Round and
Round We Go! What makes Rotary Positional Encodings useful?": the mean norm of q and of k in each
rotated pair of components, per head.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
from flax import nnx
from matplotlib.figure import Figure

from pe_research import runs, tasks
from pe_research.config import RunConfig
from pe_research.essay.probe import rotation_pairs
from pe_research.model import Transformer
from pe_research.training import evaluate

MULTIPLES = (1, 4)  # attention maps at the training length and at 4x


def finished_config(run_dir: Path) -> RunConfig:
    """The config of a finished run; ValueError if `run_dir` holds no finished run."""
    run_dir = Path(run_dir)
    if not runs.is_done(run_dir):
        raise ValueError(
            f"{run_dir} has no {runs.DONE} file: it is not a finished run (still training, "
            "interrupted, or not a run directory). Finish it with `pe-research train --out "
            f"{run_dir} ...` (or rerun its sweep), then analyze it."
        )
    return runs.load_config(run_dir)


def trained_model(run_dir: Path, cfg: RunConfig) -> tuple[nnx.GraphDef, Any, str]:
    """(graphdef, params, where the parameters came from) of a finished run: its final
    checkpoint, or else a retraining."""
    from pe_research import train
    from pe_research.training import checkpoints

    cfg = dataclasses.replace(cfg, eval_encoding=None)
    steps = checkpoints.steps(run_dir)
    if not steps:
        graphdef, params, diff = retrain(run_dir, cfg)
        return (
            graphdef,
            params,
            (
                "retrained in memory from config.json (the run has no checkpoints; same seed and "
                "program); largest difference from the run's logged training metrics: "
                + ", ".join(f"{m} {v:.2g}" for m, v in diff.items())
            ),
        )
    keys = train.keys_from_seed(cfg.seed)
    graphdef, state = train.init_state(cfg, keys)
    params = checkpoints.load_params(
        run_dir, state, {"data": keys.data, "positions": keys.positions}
    )
    return graphdef, params, f"the run's checkpoint at step {steps[-1]}"


def retrain(run_dir: Path, cfg: RunConfig) -> tuple[nnx.GraphDef, Any, dict[str, float]]:
    """Train `cfg` again in memory with train.train_group's program; returns (graphdef, params,
    the largest difference of each logged metric against the run's metrics.jsonl)."""
    from pe_research import train

    prog = train.build_program(cfg, [cfg.seed])
    state = prog.state
    recorded = {r["step"]: r for r in runs.read_jsonl(Path(run_dir) / runs.METRICS)}
    diff: dict[str, float] = {}
    for i in range(1, cfg.train.steps + 1):
        state, metrics = prog.step(state, prog.data_keys, prog.pos_keys)
        if i in recorded:
            for name, value in jax.device_get(metrics).items():
                if name in recorded[i]:
                    d = abs(float(value[0]) - recorded[i][name])
                    diff[name] = max(diff.get(name, 0.0), d)
    return prog.graphdef, jax.tree.map(lambda x: x[0], state.params), diff


def evaluation_sequence(cfg: RunConfig, length: int) -> dict[str, jax.Array]:
    """The first sequence of the evaluation batch at `length` (the data evaluate.py scores), cut
    to its real tokens: tokens_1L, pos_1L (or pos_1LA), valid_1L, targets_1L, loss_mask_1L."""
    causal = cfg.model.causal
    k_task, k_pos = jax.random.split(jax.random.fold_in(jax.random.key(cfg.eval.seed), length))
    pad_to = tasks.bucket(cfg.task.seq_len(length, causal))
    # One compiled program instead of an eager compile per operation.
    sample = jax.jit(cfg.task.sample, static_argnums=(1, 2), static_argnames=_STATIC)
    batch = sample(
        k_task, cfg.eval.batch_size, length, min_length=length, pad_to=pad_to, causal=causal
    )
    pos = cfg.eval_sampler.sample(k_pos, batch.valid, coords_BLA=batch.coords)
    valid_L = np.asarray(batch.valid[0])
    n = int(valid_L.sum())
    width = n if valid_L[:n].all() else len(valid_L)  # real tokens first: drop the padding
    return {
        "tokens": batch.inputs[:1, :width],
        "pos": pos[:1, :width],
        "valid": batch.valid[:1, :width],
        "targets": batch.targets[:1, :width],
        "loss_mask": batch.loss_mask[:1, :width],
    }


_STATIC = ("min_length", "pad_to", "causal")


def _values(params: nnx.Dict) -> dict[str, jax.Array]:
    return {name: value[...] for name, value in params.items()}


def attention_layers(model: Transformer, tokens_BL, pos_BL, valid_BL) -> dict[str, Any]:
    """The model's forward pass with every layer's attention exposed: per layer probs_BHLM and
    q, k before the encoding's rotation; `max_mismatch` compares the recomputed attention output
    with the model's own Attention module. Jittable."""
    enc = model.encoding
    x_BLD = jnp.take(model.embed_VD[...], tokens_BL, axis=0)
    x_BLD = enc.embed(_values(model.pe), x_BLD, pos_BL)
    layers, mismatch = [], jnp.zeros((), jnp.float32)
    for block in model.blocks:
        attn = block.attn
        h_BLD = block.norm_attn(x_BLD)
        pe = _values(attn.pe)
        qkv_3BLHK = jnp.einsum("BLD,DTHK->TBLHK", h_BLD, attn.w_qkv_D3HK[...])
        q_BLHK, k_BMHK, v_BMHK = qkv_3BLHK[0], qkv_3BLHK[1], qkv_3BLHK[2]
        q_rot, k_rot = enc.rotate(pe, q_BLHK, k_BMHK, pos_BL, pos_BL)
        logits_BHLM = jnp.einsum("BLHK,BMHK->BHLM", q_rot, k_rot) * q_BLHK.shape[-1] ** -0.5
        logits_BHLM = logits_BHLM + enc.bias(pe, q_rot, k_rot, pos_BL, pos_BL)
        B, L = tokens_BL.shape
        allowed_BLM = jnp.broadcast_to(valid_BL[:, None, :], (B, L, L))
        if attn.causal:
            allowed_BLM = allowed_BLM & jnp.tril(jnp.ones((L, L), bool))[None]
        logits_BHLM = jnp.where(allowed_BLM[:, None], logits_BHLM, jnp.finfo(jnp.float32).min)
        probs_BHLM = jax.nn.softmax(logits_BHLM, axis=-1)
        out_BLHK = jnp.einsum("BHLM,BMHK->BLHK", probs_BHLM, v_BMHK)
        out_BLD = jnp.einsum("BLHK,HKD->BLD", out_BLHK, attn.w_out_HKD[...])
        reference_BLD = attn(h_BLD, pos_BL, valid_BL)
        mismatch = jnp.maximum(mismatch, jnp.abs(out_BLD - reference_BLD).max())
        layers.append({"probs": probs_BHLM, "q": q_BLHK, "k": k_BMHK, "params": pe})
        x_BLD = x_BLD + reference_BLD
        x_BLD = x_BLD + block.mlp(block.norm_mlp(x_BLD))
    logits_BLV = jnp.einsum("BLD,DV->BLV", model.norm_out(x_BLD), model.w_head_DV[...])
    return {"layers": layers, "logits": logits_BLV, "max_mismatch": mismatch}


def attention_summary(probs_HLM: np.ndarray) -> dict[str, list[float]]:
    """Per head: mean attended distance |l - m| in tokens and mean entropy (nats) over queries."""
    L, M = probs_HLM.shape[1:]
    dist_LM = np.abs(np.arange(L)[:, None] - np.arange(M)[None, :])
    distance_H = (probs_HLM * dist_LM[None]).sum(-1).mean(-1)
    entropy_H = -(probs_HLM * np.log(np.maximum(probs_HLM, 1e-30))).sum(-1).mean(-1)
    return {"mean_distance": distance_H.tolist(), "entropy": entropy_H.tolist()}


def frequency_usage(
    q_LHK: np.ndarray, k_LHK: np.ndarray, pairs: list[dict[str, Any]]
) -> dict[str, Any]:
    """Mean norm over tokens of each rotated pair of q and of k, per head, pairs from the highest
    frequency to the lowest (with their position axis for n-D encodings); components that never
    rotate are one band each, after them."""
    K = q_LHK.shape[-1]
    in_pairs = {c for p in pairs for c in p["components"]}
    bands = [p["components"] for p in pairs] + [[c] for c in range(K) if c not in in_pairs]
    omegas = [p["omega"] for p in pairs] + [0.0] * (len(bands) - len(pairs))
    n_d = any(p["axis"] > 0 for p in pairs)
    labels = [f"{p['omega']:.2g}" + (f" ax{p['axis']}" if n_d else "") for p in pairs]
    labels += ["-"] * (len(bands) - len(pairs))

    def usage(x_LHK: np.ndarray) -> np.ndarray:
        return np.stack([np.linalg.norm(x_LHK[..., b], axis=-1).mean(0) for b in bands], axis=-1)

    return {
        "omega": omegas,
        "labels": labels,
        "bands": bands,
        "q": usage(q_LHK),
        "k": usage(k_LHK),
    }


# -- figures -------------------------------------------------------------------------------------


def attention_figure(probs_LHQM: list[np.ndarray], title: str) -> Figure:
    """Rows: layers; columns: heads; each panel one head's attention (query x key)."""
    layers, heads = len(probs_LHQM), probs_LHQM[0].shape[0]
    fig = Figure(figsize=(2.6 * heads, 2.5 * layers))
    axes = fig.subplots(layers, heads, squeeze=False)
    for layer, probs_HQM in enumerate(probs_LHQM):
        for h in range(heads):
            ax = axes[layer][h]
            ax.imshow(probs_HQM[h], cmap="magma", vmin=0.0, vmax=1.0, interpolation="nearest")
            ax.set_title(f"layer {layer} head {h}", fontsize=8)
            ax.set_xlabel("key", fontsize=7)
            ax.set_ylabel("query", fontsize=7)
            ax.tick_params(labelsize=6)
    fig.suptitle(title, fontsize=9)
    fig.tight_layout()
    return fig


def frequency_figure(usage_by_layer: list[dict[str, Any]], title: str) -> Figure:
    """Heads x frequency bands (highest first), the mean norm of q and of k in each band."""
    layers = len(usage_by_layer)
    fig = Figure(figsize=(9.0, 2.4 * layers + 0.6))
    axes = fig.subplots(layers, 2, squeeze=False)
    for layer, usage in enumerate(usage_by_layer):
        ticks = usage["labels"]
        for j, which in enumerate(("q", "k")):
            ax = axes[layer][j]
            image = ax.imshow(usage[which], cmap="viridis", aspect="auto")
            fig.colorbar(image, ax=ax, shrink=0.85)
            ax.set_title(f"layer {layer}: mean |{which}| per band", fontsize=8)
            ax.set_xticks(range(len(ticks)), ticks, rotation=90, fontsize=6)
            ax.set_xlabel("angle per position w (high to low; -: not rotated)", fontsize=7)
            ax.set_yticks(range(usage[which].shape[0]))
            ax.set_ylabel("head", fontsize=7)
    fig.suptitle(title, fontsize=9)
    fig.tight_layout()
    return fig


# -- the command ---------------------------------------------------------------------------------


def analyze(run_dir: Path, out_dir: Path | None = None) -> tuple[str, list[Path]]:
    """Attention maps at 1x and 4x the training length and, for rotary models, frequency usage;
    figures and summary.txt in OUT_DIR (default RUN_DIR/analysis). Returns (summary, paths)."""
    run_dir = Path(run_dir)
    cfg = finished_config(run_dir)
    out_dir = Path(out_dir) if out_dir is not None else run_dir / "analysis"
    out_dir.mkdir(parents=True, exist_ok=True)
    graphdef, params, source = trained_model(run_dir, cfg)
    model_graphdef = evaluate.eval_graphdef(cfg, graphdef)
    enc = nnx.merge(model_graphdef, params).encoding

    @jax.jit
    def forward(params: Any, tokens_BL, pos_BL, valid_BL) -> dict[str, Any]:
        return attention_layers(nnx.merge(model_graphdef, params), tokens_BL, pos_BL, valid_BL)

    recorded = {r["length"]: r for r in runs.read_jsonl(run_dir / runs.EVAL)}
    n = cfg.train.train_length
    lines = [
        f"Analysis of {run_dir}: task {cfg.task.name}, encoding {enc.label()}, seed {cfg.seed}.",
        f"Parameters: {source}.",
    ]
    paths: list[Path] = []
    usage_1x = None
    for multiple in MULTIPLES:
        length = multiple * n
        seq = evaluation_sequence(cfg, length)
        fwd = forward(params, seq["tokens"], seq["pos"], seq["valid"])
        correct = (jnp.argmax(fwd["logits"], -1) == seq["targets"]) & seq["loss_mask"]
        accuracy = float(correct.sum() / jnp.maximum(seq["loss_mask"].sum(), 1))
        probs = [np.asarray(layer["probs"][0]) for layer in fwd["layers"]]
        stem = f"attention_{multiple}x"
        fig = attention_figure(
            probs, f"{run_dir.name}: {enc.label()}, length {length} ({multiple}x training)"
        )
        paths.append(out_dir / f"{stem}.png")
        fig.savefig(paths[-1], dpi=110)
        recorded_acc = recorded.get(length, {}).get("token_accuracy")
        lines.append(
            f"\nLength {length} ({multiple}x), first evaluation sequence ({probs[0].shape[-1]} "
            f"tokens): token accuracy {accuracy:.3f}"
            + (f" (whole evaluation batch: {recorded_acc:.3f})" if recorded_acc is not None else "")
            + f"; recomputed attention matches the model to {float(fwd['max_mismatch']):.1g}."
        )
        for layer, probs_HLM in enumerate(probs):
            s = attention_summary(probs_HLM)
            per_head = ", ".join(
                f"h{h} {d:.1f} tok / {e:.2f} nats"
                for h, (d, e) in enumerate(zip(s["mean_distance"], s["entropy"], strict=True))
            )
            lines.append(f"  layer {layer}: mean attended distance / entropy: {per_head}")
        if multiple == 1:
            usage_1x = [
                frequency_usage(
                    np.asarray(layer["q"][0]),
                    np.asarray(layer["k"][0]),
                    rotation_pairs(enc, layer["params"], cfg.model.dims()),
                )
                for layer in fwd["layers"]
            ]
    if usage_1x is not None and any(len(u["bands"]) and u["omega"][0] > 0 for u in usage_1x):
        fig = frequency_figure(usage_1x, f"{run_dir.name}: {enc.label()}, frequency usage at {n}")
        paths.append(out_dir / "frequency_usage.png")
        fig.savefig(paths[-1], dpi=110)
        lines.append("\nFrequency usage (Barbero et al. 2025), mean |q| per rotated pair:")
        for layer, u in enumerate(usage_1x):
            top = np.argmax(u["q"], axis=-1)
            lines.append(
                f"  layer {layer}: band with the largest |q| per head: "
                + ", ".join(f"h{h} w={u['labels'][b]}" for h, b in enumerate(top))
            )
    else:
        lines.append("\nFrequency usage: not applicable (the encoding rotates no q, k pair).")
    summary = "\n".join(lines) + "\n"
    paths.append(out_dir / "summary.txt")
    runs.write_atomic(paths[-1], summary)
    return summary, paths
