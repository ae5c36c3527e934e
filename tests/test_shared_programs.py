"""Runs of one program shape share one compiled program; runs whose numbers differ never do."""

import dataclasses

import jax
import jax.numpy as jnp
import numpy as np
import optax

from pe_research import bench, encodings, tasks, train
from pe_research.config import EvalConfig, ModelConfig, RunConfig, TrainConfig
from pe_research.training import evaluate, program
from pe_research.training.step import make_optimizer

TINY = RunConfig(
    task=tasks.get("copy", alphabet=8),
    encoding=encodings.get("rope"),
    model=ModelConfig(num_layers=1, d_model=16, num_heads=2, mlp_dim=32),
    train=TrainConfig(steps=4, batch_size=8, train_length=4, warmup_steps=1, length_buckets=2),
    eval=EvalConfig(lengths=(4, 8), batch_size=4),
)


def test_runs_that_differ_only_in_task_share_the_compiled_step_and_evaluation():
    copy = TINY
    reverse = dataclasses.replace(TINY, task=tasks.get("reverse", alphabet=8))
    with bench.CompileCounter() as first:
        a = train.build_program(copy, [0])
    with bench.CompileCounter() as second:
        b = train.build_program(reverse, [0])
    assert a.step is b.step
    # Reverse compiles its own sampler and initialisation, small programs, and not the step.
    assert second.compiles < first.compiles
    # The shared step trains each run on its own task's batches.
    _, metrics_a = a.run(a.state)
    _, metrics_b = b.run(b.state)
    assert float(metrics_a["loss"][0]) != float(metrics_b["loss"][0])
    fn_a, fn_b = (evaluate.make_eval_fn(c, a.graphdef) for c in (copy, reverse))
    assert evaluate._metrics_program(evaluate.eval_key(copy), a.graphdef) is (
        evaluate._metrics_program(evaluate.eval_key(reverse), b.graphdef)
    )
    assert fn_a is not fn_b


def test_runs_that_differ_in_a_number_of_the_step_do_not_share_it():
    """A hyper-parameter the program holds as a constant or a shape splits the programs; a
    packable number (RoPE's base, the learning rate) is an input of the shared program."""
    interleaved = dataclasses.replace(TINY, encoding=encodings.get("rope", layout="interleaved"))
    partial = dataclasses.replace(TINY, encoding=encodings.get("rope", fraction=0.5))
    warmup = dataclasses.replace(TINY, train=dataclasses.replace(TINY.train, warmup_steps=2))
    widths = dataclasses.replace(TINY, task=tasks.get("offset", alphabet=8))
    configs = (TINY, interleaved, partial, warmup, widths)
    progs = [train.build_program(c, [0]) for c in configs]
    assert len({id(p.step) for p in progs}) == len(configs)
    assert len({program.program_key(c) for c in configs[:4]}) == 4
    # The same config again: the program compiled first.
    assert train.build_program(TINY, [1]).step is progs[0].step
    base = dataclasses.replace(TINY, encoding=encodings.get("rope", base=50.0))
    other = train.build_program(base, [0])
    assert other.step is progs[0].step  # the base is an input ...
    (_, a), (_, b) = progs[0].run(progs[0].state), other.run(other.state)
    assert float(a["loss"][0]) != float(b["loss"][0])  # ... and it reaches the numbers


def test_flat_adamw_equals_optax_adamw_in_float64():
    """The raveled optimizer against optax.adamw on the tree, both in float64."""
    cfg = TrainConfig(steps=10, warmup_steps=2, grad_clip=0.5, weight_decay=0.1)
    schedule = optax.warmup_cosine_decay_schedule(0.0, cfg.learning_rate, 2, 10, 3e-4)
    reference = optax.chain(
        optax.clip_by_global_norm(cfg.grad_clip),
        optax.adamw(
            schedule, weight_decay=0.1, mask=lambda p: jax.tree.map(lambda x: x.ndim >= 2, p)
        ),
    )
    flat = make_optimizer(cfg)
    rng = np.random.default_rng(0)
    with jax.enable_x64(True):

        def draw():
            return {"w": jnp.asarray(rng.normal(size=(3, 4))), "b": jnp.asarray(rng.normal(size=4))}

        p_ref = p_flat = draw()
        s_ref, s_flat = reference.init(p_ref), flat.init(p_flat)
        for _ in range(6):
            g = draw()
            u, s_ref = reference.update(g, s_ref, p_ref)
            p_ref = optax.apply_updates(p_ref, u)
            u, s_flat = flat.update(g, s_flat, p_flat)
            p_flat = optax.apply_updates(p_flat, u)
        for name in p_ref:
            assert p_flat[name].dtype == jnp.float64
            np.testing.assert_allclose(p_flat[name], p_ref[name], rtol=1e-14, atol=1e-15)
