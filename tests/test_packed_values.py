"""Runs that differ only in numbers (seed, learning rate, optimizer settings, RoPE's base and
p) train as one vmapped program with each run's numbers; runs that differ in a shape never do."""

import dataclasses

import jax
import numpy as np
import pytest

from pe_research import encodings, runs, tasks, train
from pe_research.config import EvalConfig, ModelConfig, RunConfig, TrainConfig
from pe_research.sweeps import grouping, sweep
from pe_research.training import checkpoints, hyperparameters, loop, program

TIMING = {"tokens_per_s", "elapsed_s", "compile_s", "seconds", "packed_runs"}
TINY = RunConfig(
    task=tasks.get("copy", alphabet=8),
    encoding=encodings.get("rope"),
    model=ModelConfig(num_layers=1, d_model=16, num_heads=2, mlp_dim=32),
    train=TrainConfig(steps=4, batch_size=8, train_length=4, warmup_steps=1, log_every=2),
    eval=EvalConfig(lengths=(4, 8), batch_size=8),
)


def vary(cfg, seed=0, encoding=None, **train_changes):
    return dataclasses.replace(
        cfg,
        seed=seed,
        encoding=encoding or cfg.encoding,
        train=dataclasses.replace(cfg.train, **train_changes),
    )


PACK = [
    vary(TINY),
    vary(TINY, learning_rate=1e-2, weight_decay=0.1),
    vary(TINY, seed=1, grad_clip=0.1, encoding=encodings.get("rope", base=500.0)),
    vary(TINY, encoding=encodings.get("rope", p=0.5)),
]


def rows(path):
    return [{k: v for k, v in r.items() if k not in TIMING} for r in runs.read_jsonl(path)]


def numbers(run_dir):
    return [r["loss"] for r in rows(run_dir / runs.METRICS)] + [
        r["token_accuracy"] for r in rows(run_dir / runs.EVAL)
    ]


def test_packed_numbers_equal_each_run_trained_alone(tmp_path):
    assert len(sweep.group_by_seed(PACK)) == 1  # the sweep packs them
    dirs = [tmp_path / f"packed{i}" for i in range(len(PACK))]
    _, params_S = train.train_group(PACK, dirs, progress=False)
    order = sorted(range(len(PACK)), key=lambda i: loop._model_id(PACK[i]))
    for i, cfg in enumerate(PACK):
        _, params = train.train(cfg, tmp_path / f"alone{i}", progress=False)
        np.testing.assert_allclose(
            numbers(dirs[i]), numbers(tmp_path / f"alone{i}"), rtol=1e-5, atol=1e-6
        )
        k = order.index(i)
        for a, b in zip(jax.tree.leaves(params_S), jax.tree.leaves(params), strict=True):
            np.testing.assert_allclose(a[k], b, rtol=1e-5, atol=1e-6)
        assert runs.load_config(dirs[i]) == cfg
    # Their numbers really differ: each model trained with its own values.
    assert len({tuple(numbers(d)) for d in dirs}) == len(PACK)


def test_grouping_splits_on_every_shape_difference():
    model, tr = TINY.model, TINY.train
    apart = [
        dataclasses.replace(TINY, model=dataclasses.replace(model, d_model=32)),
        dataclasses.replace(TINY, model=dataclasses.replace(model, num_layers=2)),
        dataclasses.replace(TINY, model=dataclasses.replace(model, mlp_dim=64)),
        dataclasses.replace(TINY, task=tasks.get("copy", alphabet=4)),  # vocabulary
        dataclasses.replace(TINY, train=dataclasses.replace(tr, train_length=8)),
        dataclasses.replace(TINY, train=dataclasses.replace(tr, length_buckets=2)),
        dataclasses.replace(TINY, train=dataclasses.replace(tr, steps=6, log_every=2)),
        dataclasses.replace(TINY, encoding=encodings.get("rope", layout="interleaved")),
        dataclasses.replace(TINY, encoding=encodings.get("rope", fraction=0.5)),
        dataclasses.replace(TINY, encoding=encodings.get("alibi")),
        dataclasses.replace(TINY, task=tasks.get("reverse", alphabet=8)),
    ]
    groups = sweep.group_by_seed([*PACK, *apart])
    assert groups == [list(range(len(PACK)))] + [[len(PACK) + i] for i in range(len(apart))]
    # A scaled RoPE reads its base in Python: runs that differ in it train apart.
    scaled = encodings.get("rope", scaling={"rope_type": "linear", "factor": 2.0})
    assert scaled.packable_fields() == ()
    other = dataclasses.replace(scaled, base=500.0)
    assert len(sweep.group_by_seed([vary(TINY, encoding=scaled), vary(TINY, encoding=other)])) == 2
    # The sweep names what keeps a group apart from the nearest other group.
    reasons = sweep.split_reasons([*PACK, *apart], groups)
    assert any("model.d_model" in line for line in reasons)
    assert any("encoding.layout" in line for line in reasons)
    # Different kinds of task or encoding are named by their name, not by each other's options.
    offset = dataclasses.replace(TINY, task=tasks.get("offset"))
    assert hyperparameters.differences(TINY, offset) == ["task.name"]
    assert hyperparameters.differences(TINY, vary(TINY, encoding=encodings.get("alibi"))) == [
        "encoding.name"
    ]


def test_train_group_refuses_runs_that_differ_in_a_shape(tmp_path):
    other = dataclasses.replace(TINY, model=dataclasses.replace(TINY.model, d_model=32))
    with pytest.raises(ValueError, match="model.d_model"):
        train.train_group([TINY, other], [tmp_path / "a", tmp_path / "b"], progress=False)


def test_interrupted_packed_multistep_windows_resume_bit_identically(tmp_path, monkeypatch):
    cfgs = [
        vary(TINY, steps=12, steps_per_dispatch=2, learning_rate=lr, seed=s)
        for lr, s in ((3e-3, 0), (1e-2, 0), (3e-3, 1))
    ]
    reference = [tmp_path / f"reference{i}" for i in range(3)]
    _, params_ref = train.train_group(cfgs, reference, progress=False, checkpoint_every=4)

    class Killed(Exception):
        pass

    calls = {"n": 0}
    run = program.Program.run

    def run_then_die(self, state, active_S=None):
        calls["n"] += 1
        out = run(self, state, active_S)
        if calls["n"] == 5:  # steps 9-10 dispatched after the checkpoint of step 8
            raise Killed
        return out

    dirs = [tmp_path / f"run{i}" for i in range(3)]
    monkeypatch.setattr(program.Program, "run", run_then_die)
    with pytest.raises(Killed):
        train.train_group(cfgs, dirs, progress=False, checkpoint_every=4)
    monkeypatch.setattr(program.Program, "run", run)
    assert [max(checkpoints.steps(d)) for d in dirs] == [8, 8, 8]
    _, params = train.train_group(cfgs, dirs, progress=False, checkpoint_every=4)
    for a, b in zip(dirs, reference, strict=True):
        assert rows(a / runs.METRICS) == rows(b / runs.METRICS)
        assert rows(a / runs.EVAL) == rows(b / runs.EVAL)
    for a, b in zip(jax.tree.leaves(params), jax.tree.leaves(params_ref), strict=True):
        np.testing.assert_array_equal(a, b)


def test_values_are_inputs_of_one_program():
    a, b = (train.build_program(c, [0], [hyperparameters.values(c)]) for c in PACK[:2])
    assert a.step is b.step  # the learning rate is an input, not a constant
    assert program.program_key(PACK[0]) == program.program_key(PACK[2])
    assert float(b.values["train"]["learning_rate"][0]) == pytest.approx(1e-2)


def test_a_sweep_compiles_its_next_groups_ahead_with_the_same_results(tmp_path, monkeypatch):
    cfgs = [TINY, dataclasses.replace(TINY, model=dataclasses.replace(TINY.model, d_model=32))]
    compiled, compile_group = [], train.compile_group

    def recorded(group, every):
        compiled.append(group)
        compile_group(group, every)

    monkeypatch.setattr(train, "compile_group", recorded)
    monkeypatch.setattr(grouping, "COMPILE_AHEAD", True)
    ahead = sweep.run_sweep(cfgs, tmp_path / "ahead", progress=False)
    assert compiled == [[cfgs[1]]]  # the second group, while the first trained
    monkeypatch.setattr(grouping, "COMPILE_AHEAD", False)
    plain = sweep.run_sweep(cfgs, tmp_path / "plain", progress=False)
    assert compiled == [[cfgs[1]]]
    for a, b in zip(ahead.dirs, plain.dirs, strict=True):
        assert rows(a / runs.METRICS) == rows(b / runs.METRICS)
        assert rows(a / runs.EVAL) == rows(b / runs.EVAL)


def test_two_hosts_shards_partition_the_grid_and_never_split_a_pack():
    grid = [vary(TINY, seed=s, learning_rate=lr) for s in (0, 1) for lr in (1e-3, 3e-3)]
    grid += [dataclasses.replace(c, task=tasks.get("reverse", alphabet=8)) for c in grid]
    groups = sweep.group_by_seed(grid)
    assert [len(g) for g in groups] == [4, 4]  # each task's 2 seeds x 2 rates: one program
    shards = [sweep.shard_of(groups, i, 2) for i in range(2)]
    runs_of = [sorted(i for g in shard for i in g) for shard in shards]
    assert sorted(runs_of[0] + runs_of[1]) == list(range(len(grid)))  # disjoint and complete
    for group in groups:  # a pack lies in one shard whole
        assert sum(group in shard for shard in shards) == 1


def test_steps_per_dispatch_defaults_to_one_on_cpu_and_to_the_common_interval_elsewhere(
    monkeypatch,
):
    cfg = vary(TINY, steps=600, log_every=50, stop_when_fit=True, fit_check_every=100)
    assert cfg.train.steps_per_dispatch == 0  # the default: chosen per backend
    assert program.resolve_steps_per_dispatch(cfg, 100).train.steps_per_dispatch == 1  # CPU
    monkeypatch.setattr(program.jax, "default_backend", lambda: "gpu")
    assert program.resolve_steps_per_dispatch(cfg, 100).train.steps_per_dispatch == 50
    assert program.resolve_steps_per_dispatch(cfg, 20).train.steps_per_dispatch == 10
    long = vary(TINY, steps=4000, log_every=400)
    assert program.resolve_steps_per_dispatch(long, 800).train.steps_per_dispatch == 100
    fixed = vary(TINY, steps_per_dispatch=2)
    assert program.resolve_steps_per_dispatch(fixed, 4) == fixed
