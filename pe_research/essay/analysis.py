"""Analysis of a trained run: attention maps, and which rotary frequencies the model uses.

The parameters come from the run's final checkpoint; a run directory without checkpoints (written
before they existed) is trained again in memory from its config.json by `retrain` (the same seed
and program as training), which reports how far its logged metrics are from the run's
metrics.jsonl (zero when reproduced exactly). The model then runs with `capture_attention` on
and every layer sows its attention probabilities and its q, k (pe_research.model), on the first
sequence that evaluation scores at the training length and at 4x (the task's held-out data). For
rotary models, frequency usage follows Barbero et al. (2025), "Round and Round We Go! What makes
Rotary Positional Encodings useful?": the mean norm of q and of k in each rotated pair of
components, per head.
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

from pe_research import model, runs, tasks, training
from pe_research.config import RunConfig
from pe_research.essay.probe import rotation_pairs
from pe_research.metrics import masked_metrics
from pe_research.training import checkpoints, evaluate

ANALYSIS_MULTIPLES = (1, 4)  # attention maps at the training length and at 4x


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
    """(graphdef, params, where the parameters came from) of a finished run: those it was
    evaluated with, from its final checkpoint (the best check it carries, with
    train.select_best), or else a retraining."""
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
    keys = training.keys_from_seed(cfg.seed)
    graphdef, state = training.init_state(cfg, keys)
    params, step = checkpoints.load_params(
        run_dir, state, {"data": keys.data, "positions": keys.positions}, cfg.train.select_best
    )
    if cfg.train.select_best:
        return graphdef, params, f"the run's best check (step {step}), as it was evaluated"
    return graphdef, params, f"the run's checkpoint at step {step}"


def retrain(run_dir: Path, cfg: RunConfig) -> tuple[nnx.GraphDef, Any, dict[str, float]]:
    """Train `cfg` again in memory with training.train_group's program; returns (graphdef, params,
    the largest difference of each logged metric against the run's metrics.jsonl)."""
    prog = training.build_program(cfg, [cfg.seed])
    state = prog.state
    recorded = {r["step"]: r for r in runs.read_jsonl(Path(run_dir) / runs.METRICS)}
    diff: dict[str, float] = {}
    for i in range(1, cfg.train.steps + 1):
        state, metrics = prog.run(state)
        if i in recorded:
            for name, value in jax.device_get(metrics).items():
                if name in recorded[i]:
                    d = abs(float(value[0]) - recorded[i][name])
                    diff[name] = max(diff.get(name, 0.0), d)
    return prog.graphdef, jax.tree.map(lambda x: x[0], state.params), diff


def evaluation_sequence(cfg: RunConfig, length: int) -> dict[str, jax.Array]:
    """The first sequence that evaluation scores at `length` (evaluate.make_eval_fn's held-out
    batch and positions), cut to its real tokens: tokens, pos, valid, targets, loss_mask, each
    [1, L] (pos [1, L, A] for n-D positions)."""
    pad_to = tasks.bucket(cfg.task.seq_len(length, cfg.model.causal))
    # Jitted with a traced length, as evaluation samples it; one compile, not one per operation.
    sample = jax.jit(evaluate.eval_inputs, static_argnums=(0, 3))
    batch, pos = sample(cfg, jax.random.key(cfg.eval.seed), jnp.int32(length), pad_to)
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


def attention_layers(transformer: model.Transformer, tokens_BL, pos_BL, valid_BL) -> dict[str, Any]:
    """The model's logits and, per layer, what it sows with `capture_attention` on: probs_BHLM,
    q and k before the encoding's rotation, and the layer's encoding parameters. Jittable."""
    transformer.set_attributes(capture_attention=True)
    try:
        logits_BLV, sown = nnx.capture(transformer, nnx.Intermediate)(tokens_BL, pos_BL, valid_BL)
    finally:
        transformer.set_attributes(capture_attention=False)
    sown = nnx.to_pure_dict(sown)
    layers = []
    for i, block in enumerate(transformer.blocks):
        # Each value is a tuple with one entry per call; the model was called once.
        (probs_BHLM,), (q_BLHK,), (k_BMHK,) = (
            sown["blocks"][i]["attn"][name] for name in (model.PROBS, model.QUERIES, model.KEYS)
        )
        params = {name: value[...] for name, value in block.attn.pe.items()}
        layers.append({"probs": probs_BHLM, "q": q_BLHK, "k": k_BMHK, "params": params})
    return {"layers": layers, "logits": logits_BLV}


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
    for multiple in ANALYSIS_MULTIPLES:
        length = multiple * n
        seq = evaluation_sequence(cfg, length)
        fwd = forward(params, seq["tokens"], seq["pos"], seq["valid"])
        scores = masked_metrics(fwd["logits"], seq["targets"], seq["loss_mask"])
        accuracy = float(scores["token_accuracy"])
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
            + "."
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
                    rotation_pairs(
                        enc.for_layer(i, cfg.model.num_layers), layer["params"], cfg.model.dims()
                    ),
                )
                for i, layer in enumerate(fwd["layers"])
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
