"""Every shipped experiment builds valid run configs at every scale and says how to run it; the CPU
presets of the addition and contextual-task experiments train a few steps."""

import dataclasses
import random
import re
from pathlib import Path

import jax
import numpy as np
import pytest

from pe_research import train
from pe_research.config import series_label, task_label
from pe_research.sweeps import experiments, sweep

ROOT = Path(__file__).resolve().parents[1]
EXPERIMENTS = experiments.names()


def test_the_studies_of_the_issue_are_shipped():
    expected = {"default", "mcgill", "randomized", "prope", "rope_base", "context_extension"}
    assert expected | {"grid2d"} <= set(EXPERIMENTS)


def test_a_module_beside_the_experiments_without_runs_is_not_an_experiment():
    assert (ROOT / "experiments" / "mcgill_paper_numbers.py").exists()
    assert "mcgill_paper_numbers" not in EXPERIMENTS
    with pytest.raises(ValueError, match="must define runs"):
        experiments.load_experiment(str(ROOT / "experiments" / "mcgill_paper_numbers.py"))


@pytest.mark.parametrize("name", EXPERIMENTS)
def test_runs_are_valid_at_every_scale(name):
    module = experiments.load_experiment(str(ROOT / "experiments" / f"{name}.py"))
    assert f"pe-research sweep {name}" in module.__doc__
    assert "RESULT_PLACEHOLDER" not in module.__doc__, "fill the docstring from a real run"
    for scale in getattr(module, "SCALES", {None: None}):
        configs = experiments.experiment_runs(module, scale)
        for cfg in configs:
            cfg.check()
        dirs = [sweep.run_dir_for(Path("out"), c) for c in configs]
        assert len(set(dirs)) == len(dirs), "two runs of the experiment share a directory"


@pytest.mark.parametrize("name", EXPERIMENTS)
def test_docstring_is_short_and_undated(name):
    """Results live on generated pages and history in git log: the docstring says what and how."""
    doc = experiments.load_experiment(str(ROOT / "experiments" / f"{name}.py")).__doc__
    assert len(doc.splitlines()) <= 20, f"experiments/{name}.py: docstring over 20 lines"
    assert not re.search(r"20\d\d-\d\d-\d\d", doc), f"experiments/{name}.py: a date"
    assert f"docs/results/{name}/summary.md" in doc, f"experiments/{name}.py: link its page"


def test_unknown_scale_names_the_presets():
    module = experiments.load_experiment(str(ROOT / "experiments" / "prope.py"))
    with pytest.raises(ValueError, match="has no scale 'tpu'; it has: cpu, gpu"):
        experiments.experiment_runs(module, "tpu")


def test_tasks_keeps_only_those_tasks_in_the_whole_sweeps_directories():
    module = experiments.load_experiment(str(ROOT / "experiments" / "mcgill.py"))
    every = experiments.experiment_runs(module)
    some = experiments.experiment_runs(module, tasks=["copy", "reverse"])
    assert {c.task.name for c in some} == {"copy", "reverse"}
    assert some == [c for c in every if c.task.name != "count_copy"]
    with pytest.raises(ValueError, match="no runs of task.s. add; its tasks are: copy, count_"):
        experiments.experiment_runs(module, tasks=["copy", "add"])


@pytest.mark.parametrize(
    "name", ["mcgill", "randomized", "lm", "prope", "addition", "addition_hints"]
)
def test_paper_vs_here_reads_the_rows_of_its_own_runs(name):
    """Each reproduction's "paper vs here" section finds its runs among rows labelled as a sweep
    labels them, and reports every compared number (none left "not run")."""
    module = experiments.load_experiment(str(ROOT / "experiments" / f"{name}.py"))
    rng = random.Random(0)
    rows = [
        {
            "task": task_label(cfg.task),
            "encoding": series_label(cfg),
            "seed": cfg.seed,
            "train_length": cfg.train.train_length,
            "length": n,
            "run": f"run{i}",
            "token_accuracy": rng.random(),
            "exact_match": rng.random(),
            "bits_per_byte": 2 + rng.random(),
            "fit": True,
        }  # fmt: skip
        for i, cfg in enumerate(experiments.experiment_runs(module))
        for n in cfg.eval_lengths
    ]
    text = module.paper_vs_here(rows)
    assert "not run" not in text and "no pair fit" not in text
    assert len(text.splitlines()) > 5
    if name == "mcgill":  # the reciprocal ranks need every task, and rank only the paper's five
        assert "Mean reciprocal rank over (task, seed) queries of copy, count_copy" in text
        assert "| t5 | 0.78 |" in text  # the paper's, recomputed on these three tasks
        partial = module.paper_vs_here([r for r in rows if r["task"].startswith("count_copy")])
        assert "| count_copy(alphabet=100, prefix=2, separator=4) | nope " in partial
        assert "reciprocal rank" not in partial


@pytest.mark.parametrize("name", ["addition", "contextual_tasks"])
def test_experiment_configs_train_a_few_steps(name):
    """Every task, encoding and position sampler of the experiment's CPU preset trains three
    steps in at least one config (one seed; the configs that add none are skipped), the model cut
    to one layer and the batch to 8 sequences in one length bucket to keep the compile time
    down: the loss is finite and changes."""
    module = experiments.load_experiment(str(ROOT / "experiments" / f"{name}.py"))
    configs = experiments.experiment_runs(module, "cpu")
    seen: set = set()
    for cfg in configs:
        parts = {("task", cfg.task), ("encoding", cfg.encoding), ("positions", cfg.positions)}
        if parts <= seen:
            continue
        seen |= parts
        cfg = dataclasses.replace(
            cfg,
            model=dataclasses.replace(cfg.model, num_layers=1),
            train=dataclasses.replace(cfg.train, batch_size=8, length_buckets=1),
        )
        cfg.check()
        keys = train.keys_from_seed(cfg.seed)
        graphdef, state = train.init_state(cfg, keys)
        step = train.make_train_step(cfg, graphdef)
        losses = []
        for i in range(3):
            state, metrics = step(state, jax.random.fold_in(keys.data, i), keys.positions)
            losses.append(float(metrics["loss"]))
        assert np.isfinite(losses).all() and losses[0] != losses[-1], (parts, losses)
    every = {(k, getattr(c, k)) for c in configs for k in ("task", "encoding", "positions")}
    assert seen == every
