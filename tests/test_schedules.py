"""Learning-rate schedules: linear warm-up, then cosine, linear or constant, against their formulas;
bad options name the flag; which parameters take weight decay."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from pe_research import encodings, tasks
from pe_research.config import ModelConfig, RunConfig, TrainConfig
from pe_research.training.step import init_model, make_optimizer, make_schedule


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


def test_weight_decay_can_spare_the_encodings_matrices():
    """decay_encoding=False: no decay on T5's table (Hugging Face's Trainer exempts parameters
    named *bias*), while the other matrices keep theirs and vectors never take any."""
    moved = {}
    for decay in (True, False):
        train = TrainConfig(decay_encoding=decay, weight_decay=0.5, warmup_steps=0)
        cfg = RunConfig(task=tasks.get("count_copy"), encoding=encodings.get("t5", shared=True),
                        model=ModelConfig(num_layers=1), train=train)  # fmt: skip
        _, params = init_model(cfg, jax.random.key(0))
        optimizer = make_optimizer(train)
        zero = jax.tree.map(jnp.zeros_like, params)  # no gradient: the update is decay alone
        update, _ = optimizer.update(zero, optimizer.init(params), params)
        moved[decay] = {
            "table": float(jnp.abs(update["pe"]["table_NH"][...]).max()),
            "embed": float(jnp.abs(update["embed_VD"][...]).max()),
            "norm": float(jnp.abs(update["norm_out"]["scale"][...]).max()),
        }
    assert moved[True]["table"] > 0 and moved[False]["table"] == 0
    assert moved[True]["embed"] == moved[False]["embed"] > 0
    assert moved[True]["norm"] == moved[False]["norm"] == 0
