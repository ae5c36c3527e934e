"""Learning-rate schedules: linear warm-up, then cosine, linear or constant, against their formulas;
bad options name the flag."""

import numpy as np
import pytest

from pe_research.config import TrainConfig
from pe_research.training.step import make_schedule


@pytest.mark.parametrize("kind", ["cosine", "linear", "constant"])
def test_schedules_warm_up_then_follow_their_formula(kind):
    cfg = TrainConfig(steps=200, warmup_steps=20, learning_rate=2.0, lr_schedule=kind)
    cfg.check()
    f = make_schedule(cfg)
    for t in (0, 7, 20, 21, 90, 150, 199, 200):
        if t < 20:
            want = 2.0 * t / 20
        elif kind == "linear":
            want = 2.0 * (200 - t) / 180
        elif kind == "constant":
            want = 2.0
        else:
            want = 0.2 + 0.9 * (1 + np.cos(np.pi * (t - 20) / 180))
        assert abs(float(f(t)) - want) < 1e-5, (kind, t, float(f(t)), want)


def test_bad_schedule_options_name_the_flag():
    with pytest.raises(ValueError, match="--train.lr-schedule to one of cosine, linear, constant"):
        TrainConfig(lr_schedule="poly").check()
    with pytest.raises(ValueError, match="--train.adam-b2"):
        TrainConfig(adam_b2=1.0).check()
