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

import dataclasses
import functools
import time
from collections.abc import Callable
from typing import Any

import jax
import jax.numpy as jnp
from flax import nnx
from tqdm.auto import tqdm

from pe_research.config import ModelConfig, RunConfig, TrainConfig
from pe_research.data import builders, loader
from pe_research.metrics import masked_metrics
from pe_research.model import abstract_model
from pe_research.tasks import Batch, bucket, eval_batch, length_keys
from pe_research.training import hyperparameters


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


def eval_inputs(
    cfg: RunConfig, root: jax.Array, length: Any, pad_to: int, batch: Batch | None = None
) -> tuple[Batch, jax.Array]:
    """The batch that evaluation scores at `length` (sampled from the task's held-out data,
    unless a built set's `batch` is given) and its positions pos_BL; `length` may be traced."""
    k_task, k_pos = length_keys(root, length)
    if batch is None:
        batch = eval_batch(
            cfg.task, k_task, cfg.eval.batch_size, length, pad_to=pad_to, causal=cfg.model.causal
        )
    return batch, cfg.eval_sampler.sample(k_pos, batch.valid, coords_BLA=batch.coords)


def eval_key(cfg: RunConfig) -> tuple[Any, ...]:
    """What the compiled evaluation of a batch computes with, besides the batch's shapes and
    each model's packable numbers: the model, the encoding it is evaluated under (and the one
    trained, whose parameters it reads) and how the loss is reported. Runs with equal keys share
    the program (copy and reverse of one encoding do, and RoPE runs of any base)."""
    encoding = cfg.encoding
    if cfg.eval_encoding is None:  # the encoding's numbers are inputs of the program
        encoding = hyperparameters.placeholder(cfg).encoding
    return (cfg.model, encoding, cfg.eval_encoding, cfg.task.vocab_size,
            cfg.task.bytes_per_token)  # fmt: skip


@functools.lru_cache(maxsize=16)
def _metrics_program(key: tuple[Any, ...], graphdef: nnx.GraphDef):
    """jit(params_S, values_S, batch, pos_BL) -> metrics of each of S packed models on one
    batch, each model under its encoding's packable numbers `values_S` (empty: the encoding as
    built); one compile per batch width, shared by every run with this `eval_key`."""
    encoding, bytes_per_token = key[1], key[-1]

    def metrics(params: Any, values: Any, batch: Batch, pos_BL: jax.Array) -> dict[str, Any]:
        model = nnx.merge(graphdef, params)
        if values:
            model.set_encoding(dataclasses.replace(encoding, **values))
        logits_BLV = model(batch.inputs, pos_BL, batch.valid)
        return masked_metrics(
            logits_BLV, batch.targets, batch.loss_mask, bytes_per_token=bytes_per_token
        )

    return jax.jit(jax.vmap(metrics, in_axes=(0, 0, None, None)))


@functools.lru_cache(maxsize=16)
def _inputs_program(cfg: RunConfig):
    """jit(root, length, pad_to=static, batch=None) -> (batch, pos_BL) that evaluation scores."""
    return jax.jit(functools.partial(eval_inputs, cfg), static_argnames="pad_to")


def encoding_values(cfg: RunConfig, num_models: int, values_S: Any = None) -> Any:
    """The encoding numbers evaluation gives each of S models: from `values_S` (packed runs'
    hyperparameters.Values), else `cfg`'s for all; none under an evaluation encoding, which
    is evaluated as it is."""
    if cfg.eval_encoding is not None:
        return {}
    if values_S is None:
        values_S = hyperparameters.stack([hyperparameters.values(cfg)] * num_models)
    return values_S["encoding"]


def make_eval_fn(cfg: RunConfig, graphdef: nnx.GraphDef):
    """(params_S, root_key, length, pad_to, batch=None, values_S=None) -> metrics of each of S
    packed models, on `batch` (a built set's, padded to pad_to) or else a sampled one, each
    model with its packable numbers `values_S` (default: cfg's).

    Two compiled programs: the task's sampler (small, per task and width) and the model's
    metrics on a batch (per `eval_key` and width), so runs that differ only in their task or in
    packable numbers share the expensive one. All S models are scored on the same batch; the
    fit check during training and the evaluation after it share their programs for the training
    length. For byte-level text (byte_lm) the metrics include bits per byte: the loss in bits,
    as each token is one byte.
    """
    model_metrics = _metrics_program(eval_key(cfg), eval_graphdef(cfg, graphdef))
    sample = _inputs_program(cfg)

    def eval_fn(
        params_S: Any,
        root: jax.Array,
        length: jax.Array,
        pad_to: int,
        batch: Batch | None = None,
        values_S: Any = None,
    ):
        S = jax.tree.leaves(params_S)[0].shape[0]
        batch, pos_BL = sample(root, length, pad_to=pad_to, batch=batch)
        return model_metrics(params_S, encoding_values(cfg, S, values_S), batch, pos_BL)

    return eval_fn


def eval_data(cfg: RunConfig) -> dict[int, tuple[Batch, jax.Array]]:
    """Evaluation length -> (batch, pos_BL) that evaluation scores there: sampled for every
    length at once by one compiled program (or read from the built set `cfg.eval.data`, its
    positions sampled), padded to the length's bucket. The data depends only on the evaluation
    settings, so a run samples it once: its fit checks and its evaluation reuse it."""
    return _eval_data(
        dataclasses.replace(cfg, encoding=None, eval_encoding=None, train=TrainConfig(),
                            model=ModelConfig(causal=cfg.model.causal), seed=0,
                            positions=cfg.eval_sampler,
                            eval=dataclasses.replace(cfg.eval, lengths=cfg.eval_lengths))
    )  # fmt: skip


@functools.lru_cache(maxsize=4)
def _eval_data(cfg: RunConfig) -> dict[int, tuple[Batch, jax.Array]]:
    widths = buckets(cfg)
    lengths_of: dict[int, list[int]] = {}
    for n, w in widths.items():
        lengths_of.setdefault(w, []).append(n)
    sets: dict[int, Batch] = {}
    if cfg.eval.data is not None:
        eval_set = loader.EvalSet(cfg.eval.data, cfg.eval.data_dir)
        sets = {
            w: jax.tree.map(lambda *xs: jnp.stack(xs), *(eval_set.batch(n, cfg.eval.batch_size, w)
                                                          for n in ns))
            for w, ns in lengths_of.items()
        }  # fmt: skip

    def sample(root: jax.Array, sets: dict[int, Batch]) -> dict[int, Any]:
        # The lengths of one width under vmap: one sampler per width, not one per length.
        out = {}
        for w, ns in lengths_of.items():
            per_length = jax.vmap(
                lambda n, batch, w=w: eval_inputs(cfg, root, n, w, batch),
                in_axes=(0, 0 if sets else None),
            )(jnp.asarray(ns, jnp.int32), sets.get(w))
            out.update({n: jax.tree.map(lambda x, i=i: x[i], per_length) for i, n in enumerate(ns)})
        return out

    return jax.jit(sample)(jax.random.key(cfg.eval.seed), sets)


def make_fit_check(cfg: RunConfig, graphdef: nnx.GraphDef, values_S: Any = None):
    """params_S -> exact match of each of S packed models (with their packable numbers
    `values_S`, default cfg's) at `cfg.fit_length`, as a host array.

    The sequences, positions and compiled program are those that `evaluate_packed` scores that
    length with, so a model the check finds fit is the model evaluation finds fit: the check is
    the fit verdict taken during training. Compiled at its first call; evaluation then reuses
    that program.
    """
    model_metrics = _metrics_program(eval_key(cfg), eval_graphdef(cfg, graphdef))
    batch, pos_BL = eval_data(cfg)[cfg.fit_length]

    def check(params_S: Any) -> Any:
        S = jax.tree.leaves(params_S)[0].shape[0]
        values = encoding_values(cfg, S, values_S)
        return jax.device_get(model_metrics(params_S, values, batch, pos_BL)["exact_match"])

    return check


def evaluate_packed(
    cfg: RunConfig,
    graphdef: nnx.GraphDef,
    params_S: Any,
    *,
    progress: bool = False,
    values_S: Any = None,
    each_length: Callable[[], None] | None = None,
) -> list[list[dict[str, Any]]]:
    """For each of S packed models (leading axis of params_S; packable numbers `values_S`,
    default cfg's), one row per evaluation length:
    token accuracy, exact match, loss, bucket and timing, and the data scored: the built set
    `cfg.eval.data` (read from cfg.eval.data_dir) or fresh samples. `each_length` is called
    before each length (the training loop refreshes its claims there)."""
    model_metrics = _metrics_program(eval_key(cfg), eval_graphdef(cfg, graphdef))
    data = cfg.task.describe_eval_data(cfg.eval.seed)
    if cfg.eval.data is not None:
        data = loader.EvalSet(cfg.eval.data, cfg.eval.data_dir).label
    S = jax.tree.leaves(params_S)[0].shape[0]
    values = encoding_values(cfg, S, values_S)
    inputs = eval_data(cfg)
    widths = buckets(cfg)
    rows_S: list[list[dict[str, Any]]] = [[] for _ in range(S)]
    for n, pad_to in tqdm(widths.items(), desc="eval", disable=not progress, leave=False):
        if each_length is not None:
            each_length()
        t0 = time.perf_counter()
        metrics = jax.device_get(model_metrics(params_S, values, *inputs[n]))
        seconds = round(time.perf_counter() - t0, 3)
        for k in range(S):
            rows_S[k].append(
                {
                    "length": n,
                    **{name: float(v[k]) for name, v in metrics.items()},
                    "num_sequences": cfg.eval.batch_size,
                    "padded_to": pad_to,
                    "seconds": seconds,
                    "data": data,
                }
            )
    # One program per width (shared with other runs), and the data's for all lengths at once.
    compiles = len(set(widths.values())) + 1
    for rows in rows_S:
        for row in rows:
            row["compiles"] = compiles
    return rows_S


def evaluate(
    cfg: RunConfig, graphdef: nnx.GraphDef, params: Any, *, progress: bool = False
) -> list[dict[str, Any]]:
    """One row per evaluation length for a single model (see evaluate_packed)."""
    params_S = jax.tree.map(lambda x: x[None], params)
    return evaluate_packed(cfg, graphdef, params_S, progress=progress)[0]


def make_select_check(cfg: RunConfig, graphdef: nnx.GraphDef, values_S: Any = None):
    """params_S -> exact match of each of S packed models on the held-out sequences of
    `cfg.select_lengths`, averaged over those lengths, as a host array (train.select_best). The
    sequences and compiled programs are evaluation's (one per length bucket)."""
    model_metrics = _metrics_program(eval_key(cfg), eval_graphdef(cfg, graphdef))
    data = eval_data(cfg)
    chosen = [data[n] for n in cfg.select_lengths]

    def check(params_S: Any) -> Any:
        S = jax.tree.leaves(params_S)[0].shape[0]
        values = encoding_values(cfg, S, values_S)
        scores = [model_metrics(params_S, values, *batch)["exact_match"] for batch in chosen]
        return jax.device_get(sum(scores) / len(scores))

    return check
