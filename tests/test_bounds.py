"""Every gather in bounds: table reads are checked, never clamped or filled silently.

Under `jax.experimental.checkify` with `index_checks`, every gather and dynamic slice of a
program fails loudly when an index is out of range, whatever its mode: "fill" (the NaN the
encodings use beyond a table) and "clip" (the silent clamp that hid a bug in the DeepMind
peer's randomized relative encoding) alike. The tests run the real evaluation path
(`evaluate.make_eval_fn`: the task's batch, the position sampler, the model with the encoding)
under those checks:

- every registered encoding (`encodings.names()`), default hyper-parameters, at every length of
  the longest shipped evaluation grid: the CPU-scale experiment config with the widest padded
  evaluation, whichever it is (a task's places, such as arithmetic's digit places, are text to
  M-RoPE; 2-D `rope_nd` runs on its own grid, `grid2d`'s sides 4-8);
- every other kind of shipped CPU-scale config (each experiment's encodings with their table
  sizes, position samplers, evaluation positions, encoder or decoder) at its longest length:
  positions and distances at a shorter length are a subset of those at the longest one, so a
  program in bounds at the longest width is in bounds at every shorter one.

To keep it to one compilation: models are shrunk to one small layer (no index depends on the
model size) with parameters drawn by numpy, evaluation batches to one row, the 1-D encodings of
the first part score one shared batch of the longest grid's task, and a corpus file the machine
may lack is replaced by the built-in one (`byte_lm` windows have the same widths and
positions). Everything is one jitted, checkified program, called once per length. The last test
shows the check can fail: a learned table shorter than the sequence (which `RunConfig.check`
refuses up front), and a clamped gather.
"""

import dataclasses

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from flax import nnx
from jax.experimental import checkify

from pe_research import encodings, positions, tasks
from pe_research.config import EvalConfig, ModelConfig, RunConfig
from pe_research.model import Transformer
from pe_research.sweeps import experiments
from pe_research.tasks import ByteLM
from pe_research.training import evaluate


def shipped_configs():
    """Every run config of every experiment, at its CPU scale."""
    return [
        cfg
        for name in experiments.names()
        for cfg in experiments.experiment_runs(experiments.load_experiment(name))
    ]


def width(cfg):
    """The padded width of the longest evaluation batch."""
    return max(evaluate.buckets(cfg).values())


def small(cfg):
    """`cfg` with one small layer, one evaluation row per length, and a corpus that exists."""
    model = ModelConfig(num_layers=1, d_model=16, num_heads=2, mlp_dim=16, causal=cfg.model.causal)
    task = cfg.task
    if isinstance(task, ByteLM):
        task = dataclasses.replace(task, corpus="builtin:pydoc_topics")
    evaluation = dataclasses.replace(cfg.eval, lengths=cfg.eval_lengths, batch_size=1)
    return dataclasses.replace(cfg, task=task, model=model, eval=evaluation)


def signature(cfg):
    """What decides which indices a run's encodings read, besides the width: the samplers,
    encoder or decoder, and the encodings that read a table (a learned encoding's label names
    the table's size); the other encodings gather nothing."""

    def table(encoding):
        return encoding.label() if encoding is not None and encoding.learned else None

    return (
        cfg.positions,
        cfg.eval_sampler,
        cfg.model.causal,
        table(cfg.encoding),
        table(cfg.eval_encoding),
    )


def cases():
    """[(config, evaluation lengths to drive, whether it scores the longest grid's shared
    batch)]: the two parts of the module docstring."""
    shipped = shipped_configs()
    longest = max((c for c in shipped if c.encoding.position_axes is None), key=width)
    grid = next(c for c in shipped if c.encoding.position_axes == 2)
    out = []
    # M-RoPE's (time, height, width) on the longest grid: text, the same index on every axis.
    text_3d = dataclasses.replace(
        longest,
        positions=positions.get("mrope"),
        eval=dataclasses.replace(longest.eval, positions="train"),
    )
    for name in encodings.names():
        encoding = encodings.get(name)
        base = {2: grid, 3: text_3d}.get(encoding.position_axes, longest)
        cfg = small(dataclasses.replace(base, encoding=encoding, eval_encoding=None))
        cfg.check()
        out.append((cfg, cfg.eval_lengths, base is longest))  # text_3d samples its own batch
    covered = {signature(c) for c, _, _ in out}
    for cfg in sorted(shipped, key=width, reverse=True):
        if signature(cfg) not in covered:
            covered.add(signature(cfg))
            out.append((small(cfg), (max(cfg.eval_lengths),), False))
    return out


def model_shape(cfg):
    """(graphdef, abstract parameters) of `cfg`'s model, computing nothing."""
    return nnx.split(
        nnx.eval_shape(
            lambda: Transformer(cfg.model, cfg.encoding, cfg.task.vocab_size, rngs=nnx.Rngs(0))
        )
    )


def parameters(abstract, rng):
    """Parameters of these shapes, packed K=1, drawn by numpy: no value decides an index
    (CoPE's counts depend on them, and it clamps them by design), and numpy compiles nothing."""
    return jax.tree.map(
        lambda a: (0.1 * rng.standard_normal((1, *a.shape))).astype(a.dtype), abstract
    )


def checked_program(runs):
    """One jitted, checkified program: each run's model evaluated at lengths_C[c]. Runs marked
    as sharing the longest grid score one batch of its task (sampled once; positions are sampled
    per run)."""
    rng = np.random.default_rng(0)
    configs = [cfg for cfg, _, _ in runs]
    shapes = [model_shape(c) for c in configs]
    evals = [
        (evaluate.make_eval_fn(c, g), width(c)) for c, (g, _) in zip(configs, shapes, strict=True)
    ]
    params_C = [parameters(abstract, rng) for _, abstract in shapes]
    shared = next((cfg for cfg, _, share in runs if share), None)

    def program(params_C, key, lengths_C):
        batch = None
        if shared is not None:
            c = next(c for c, (_, _, share) in enumerate(runs) if share)
            k_task, _ = tasks.length_keys(key, lengths_C[c])
            batch = tasks.eval_batch(
                shared.task,
                k_task,
                1,
                lengths_C[c],
                pad_to=width(shared),
                causal=shared.model.causal,
            )
        return [
            eval_fn(params_K, key, lengths_C[c], pad_to=pad_to, batch=batch if share else None)
            for c, ((eval_fn, pad_to), params_K, (_, _, share)) in enumerate(
                zip(evals, params_C, runs, strict=True)
            )
        ]

    checked = jax.jit(checkify.checkify(program, errors=checkify.index_checks))
    return lambda key, lengths_C: checked(params_C, key, lengths_C)


def test_every_encoding_and_shipped_config_reads_in_bounds_at_every_length():
    runs = cases()
    assert {c.encoding.name for c, _, _ in runs} == set(encodings.names())
    longest = max(len(lengths) for _, lengths, _ in runs)
    assert longest == 8  # the 8x grids (1x, 2x, ..., 8x the training length)
    program = checked_program(runs)
    for k in range(longest):
        lengths_C = jnp.array([lengths[min(k, len(lengths) - 1)] for _, lengths, _ in runs])
        error, metrics = program(jax.random.key(k), lengths_C)
        error.throw()  # names the gather, the index and the table size if one is out of range
        for (cfg, _, _), m in zip(runs, metrics, strict=True):
            assert jnp.isfinite(m["loss"]).all(), cfg.encoding.label()


def test_the_check_catches_an_out_of_range_table_read():
    short = RunConfig(
        encoding=encodings.get("learned", max_positions=8),
        model=ModelConfig(num_layers=1, d_model=16, num_heads=2, mlp_dim=16),
        eval=EvalConfig(lengths=(6,), batch_size=1),
    )
    with pytest.raises(ValueError, match="max_positions=8"):
        short.check()  # refused up front; evaluated anyway, the table read must fail loudly
    program = checked_program([(short, (6,), False)])
    error, _ = program(jax.random.key(0), jnp.array([6]))
    # The learned table of the packed model is (K=1, 8 rows, d_model 16); the batch needs row 8.
    message = r"out-of-bounds indexing for array of shape \(1, 8, 16\): index 8 is out of bounds"
    with pytest.raises(checkify.JaxRuntimeError, match=message):
        error.throw()

    # A gather that clamps (mode="clip") reads a wrong row without any NaN: caught all the same.
    def clamped(table_P, pos_L):
        return jnp.take(table_P, pos_L, mode="clip")

    clamped = jax.jit(checkify.checkify(clamped, errors=checkify.index_checks))
    error, rows = clamped(jnp.arange(8.0), jnp.arange(10))
    assert float(rows[-1]) == 7.0  # silently the last row
    with pytest.raises(checkify.JaxRuntimeError, match="out-of-bounds indexing"):
        error.throw()
