"""Every shipped experiment builds valid run configs at every scale, and says how to run it."""

from pathlib import Path

import pytest

from pe_research.sweeps import experiments, sweep

ROOT = Path(__file__).resolve().parents[1]
EXPERIMENTS = sorted(p.stem for p in (ROOT / "experiments").glob("*.py"))


def test_the_studies_of_the_issue_are_shipped():
    expected = {"default", "mcgill", "randomized", "prope", "rope_base", "context_extension"}
    assert expected | {"grid2d"} <= set(EXPERIMENTS)


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


def test_unknown_scale_names_the_presets():
    module = experiments.load_experiment(str(ROOT / "experiments" / "prope.py"))
    with pytest.raises(ValueError, match="has no scale 'tpu'; it has: cpu, gpu"):
        experiments.experiment_runs(module, "tpu")
