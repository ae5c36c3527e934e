"""Per-length evaluation on length buckets: at most one compile per power-of-two width.

Every length n of the grid is scored on `eval.batch_size` sequences of exactly n data symbols,
drawn from a key that depends only on the evaluation seed and n (never the training seed), so
every encoding and every seed is scored on identical sequences. Sequences are padded to the
next power of two and masked, so lengths that share a bucket share one compiled program.

Exact match is computed under teacher forcing. For these tasks it equals greedy-decoding exact
match: if every answer token is predicted correctly given the true prefix, greedy decoding
reproduces that prefix step by step, and the first wrong greedy token is a teacher-forced error.
"""

from __future__ import annotations

import time
from typing import Any

import jax
import jax.numpy as jnp
from flax import nnx
from tqdm.auto import tqdm

from pe_research.config import RunConfig
from pe_research.data import builders, loader
from pe_research.model import abstract_model
from pe_research.tasks import Batch, bucket, eval_batch, length_keys


def check_run(cfg: RunConfig) -> None:
    """`cfg.check()`, and that the built evaluation set it names (if any) holds exactly what the
    run evaluates; ValueError names what does not fit."""
    cfg.check()
    if cfg.eval.data is not None:
        builders.check_run(cfg)


def buckets(cfg: RunConfig) -> dict[int, int]:
    """Evaluation length -> padded width."""
    return {n: bucket(cfg.task.seq_len(n, cfg.model.causal)) for n in cfg.eval_lengths}


def eval_graphdef(cfg: RunConfig, graphdef: nnx.GraphDef) -> nnx.GraphDef:
    """The model to evaluate: the trained one, or the same parameters under `cfg.eval_encoding`
    (for example RoPE with a context-extension scaling applied without retraining)."""
    if cfg.eval_encoding is None:
        return graphdef

    def build(encoding):
        return abstract_model(cfg.model, encoding, cfg.task.vocab_size)

    new_graphdef, new_params = build(cfg.eval_encoding)
    _, old_params = build(cfg.encoding)
    if jax.tree.structure(new_params) != jax.tree.structure(old_params):
        raise ValueError(
            f"eval_encoding {cfg.eval_encoding.label()!r} has different parameters from the "
            f"training encoding {cfg.encoding.label()!r}; evaluate with an encoding of the "
            "same kind (for example the same RoPE with a scaling)."
        )
    return new_graphdef


def make_eval_fn(cfg: RunConfig, graphdef: nnx.GraphDef):
    """jit(params_K, root_key, length, pad_to=static, batch=None) -> metrics of each of K
    packed models, on `batch` (a built set's, padded to pad_to) or else a sampled one.

    Compiles once per `pad_to`; all K models are scored on the same batch. For byte-level text
    (byte_lm) the metrics include bits per byte: the loss in bits, as each token is one byte.
    """
    task, sampler, causal = cfg.task, cfg.eval_sampler, cfg.model.causal
    batch_size = cfg.eval.batch_size
    graphdef = eval_graphdef(cfg, graphdef)

    def metrics(params: Any, batch, pos_BL: jax.Array) -> dict[str, jax.Array]:
        logits_BLV = nnx.merge(graphdef, params)(batch.inputs, pos_BL, batch.valid)
        mask_BL = batch.loss_mask
        correct_BL = jnp.argmax(logits_BLV, axis=-1) == batch.targets
        nll_BL = -jnp.take_along_axis(
            jax.nn.log_softmax(logits_BLV), batch.targets[..., None], axis=-1
        )[..., 0]
        count = jnp.maximum(mask_BL.sum(), 1)
        out = {
            "token_accuracy": (correct_BL & mask_BL).sum() / count,
            "exact_match": jnp.mean(jnp.all(correct_BL | ~mask_BL, axis=1)),
            "loss": jnp.where(mask_BL, nll_BL, 0.0).sum() / count,
        }
        if task.bytes_per_token:
            out["bits_per_byte"] = out["loss"] / jnp.log(2.0) / task.bytes_per_token
        return out

    def eval_fn(
        params_K: Any, root: jax.Array, length: jax.Array, pad_to: int, batch: Batch | None = None
    ):
        k_task, k_pos = length_keys(root, length)
        if batch is None:
            batch = eval_batch(task, k_task, batch_size, length, pad_to=pad_to, causal=causal)
        pos_BL = sampler.sample(k_pos, batch.valid, coords_BLA=batch.coords)
        return jax.vmap(metrics, in_axes=(0, None, None))(params_K, batch, pos_BL)

    return jax.jit(eval_fn, static_argnames="pad_to")


def evaluate_packed(
    cfg: RunConfig, graphdef: nnx.GraphDef, params_K: Any, *, progress: bool = False
) -> list[list[dict[str, Any]]]:
    """For each of K packed models (leading axis of params_K), one row per evaluation length:
    token accuracy, exact match, loss, bucket and timing, and the data scored: the built set
    `cfg.eval.data` (read from cfg.eval.data_dir) or fresh samples."""
    eval_fn = make_eval_fn(cfg, graphdef)
    eval_set = None
    if cfg.eval.data is not None:
        eval_set = loader.EvalSet(cfg.eval.data, cfg.eval.data_dir)
    data = cfg.task.describe_eval_data(cfg.eval.seed) if eval_set is None else eval_set.label
    K = jax.tree.leaves(params_K)[0].shape[0]
    root = jax.random.key(cfg.eval.seed)
    widths = buckets(cfg)
    rows_K: list[list[dict[str, Any]]] = [[] for _ in range(K)]
    for n, pad_to in tqdm(widths.items(), desc="eval", disable=not progress, leave=False):
        t0 = time.perf_counter()
        batch = None if eval_set is None else eval_set.batch(n, cfg.eval.batch_size, pad_to)
        metrics = eval_fn(params_K, root, jnp.int32(n), pad_to=pad_to, batch=batch)
        metrics = jax.device_get(metrics)
        seconds = round(time.perf_counter() - t0, 3)
        for k in range(K):
            rows_K[k].append(
                {
                    "length": n,
                    **{name: float(v[k]) for name, v in metrics.items()},
                    "num_sequences": cfg.eval.batch_size,
                    "padded_to": pad_to,
                    "seconds": seconds,
                    "data": data,
                }
            )
    compiles = len(set(widths.values()))  # jit caches one program per width
    for rows in rows_K:
        for row in rows:
            row["compiles"] = compiles
    return rows_K


def evaluate(
    cfg: RunConfig, graphdef: nnx.GraphDef, params: Any, *, progress: bool = False
) -> list[dict[str, Any]]:
    """One row per evaluation length for a single model (see evaluate_packed)."""
    params_K = jax.tree.map(lambda x: x[None], params)
    return evaluate_packed(cfg, graphdef, params_K, progress=progress)[0]
