"""Best-checkpoint selection (train.select_best): the best validation check is kept, ties to
the earlier, evaluation scores it, and a resumed run selects as an uninterrupted one."""

import dataclasses

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from pe_research import encodings, runs, tasks, train
from pe_research.config import EvalConfig, ModelConfig, RunConfig, TrainConfig
from pe_research.essay import analysis
from pe_research.training import checkpoints, selection

BASE = RunConfig(
    task=tasks.get("copy"),
    encoding=encodings.get("rope"),
    model=ModelConfig(num_layers=1, d_model=16, num_heads=2, mlp_dim=32),
    train=TrainConfig(steps=40, batch_size=8, train_length=4, log_every=10, select_best=True,
                      select_every=10),
    eval=EvalConfig(lengths=(2, 3, 4, 8), batch_size=8),
)  # fmt: skip


def test_the_best_check_of_each_model_is_kept_and_ties_keep_the_earlier():
    # Two packed models whose validation curves are known: model 0 peaks at step 20 (and ties
    # it at 40), model 1 improves to the end.
    curve = {10: [0.1, 0.0], 20: [0.5, 0.2], 30: [0.3, 0.4], 40: [0.5, 0.6]}
    step = {"now": 0}
    chosen = selection.Selection(BASE, lambda params_S: curve[step["now"]], None)
    chosen.best = selection.initial({"w": jnp.zeros((2, 3))})
    for s in (10, 20, 30, 40):
        step["now"] = s
        params_S = {"w": jnp.full((2, 3), float(s))}  # each step's parameters say their step
        scores, best_step, best_score = chosen.update(s, params_S)
        np.testing.assert_allclose(scores, curve[s])
    assert list(best_step) == [20, 40] and list(best_score) == pytest.approx([0.5, 0.6])
    np.testing.assert_array_equal(chosen.best["params"]["w"][:, 0], [20.0, 40.0])
    assert [chosen.due(s) for s in (5, 10, 35, 40)] == [False, True, False, True]


def test_a_run_is_evaluated_at_its_best_check_and_resumes_selecting_the_same(tmp_path, monkeypatch):
    whole = tmp_path / "whole"
    train.train(BASE, whole, progress=False, checkpoint_every=10)
    checks = runs.read_jsonl(whole / runs.SELECT)
    assert [c["step"] for c in checks] == [10, 20, 30, 40]
    best = max(checks, key=lambda c: (c["exact_match"], -c["step"]))
    evaluated = runs.read_jsonl(whole / runs.EVAL)
    assert {r["selected_step"] for r in evaluated} == {best["step"]}
    assert checks[-1]["best_step"] == best["step"]
    # The analyses load the parameters the run was evaluated with: the best check's, which the
    # checkpoint of that step holds as its own.
    _, loaded, source = analysis.trained_model(whole, BASE)
    assert f"step {best['step']}" in source
    keys = train.keys_from_seed(BASE.seed)
    _, like = train.init_state(BASE, keys)
    carried = (like, selection.initial_one(like.params))
    at_best, _ = checkpoints.restore(whole, best["step"], carried, {"data": keys.data,
                                     "positions": keys.positions})  # fmt: skip
    for a, b in zip(jax.tree.leaves(loaded), jax.tree.leaves(at_best.params), strict=True):
        np.testing.assert_array_equal(a, b)

    class Interrupted(Exception):
        pass

    save = checkpoints.save

    def save_then_stop(mgr, step, state, keys):
        save(mgr, step, state, keys)
        if step == 20:
            mgr.wait_until_finished()
            raise Interrupted

    resumed = tmp_path / "resumed"
    monkeypatch.setattr(checkpoints, "save", save_then_stop)
    with pytest.raises(Interrupted):
        train.train(BASE, resumed, progress=False, checkpoint_every=10)
    monkeypatch.setattr(checkpoints, "save", save)
    train.train(BASE, resumed, progress=False, checkpoint_every=10)
    assert runs.read_jsonl(resumed / runs.SELECT) == checks

    def results(run):
        return [{k: v for k, v in r.items() if k not in ("seconds", "compiles")}
                for r in runs.read_jsonl(run / runs.EVAL)]  # fmt: skip

    assert results(resumed) == results(whole)


@pytest.mark.parametrize(
    "changes, message",
    [
        ({"stop_when_fit": True}, "choose one"),
        ({"select_lengths": (8,)}, r"select_lengths \[8\] must be evaluation lengths"),
        ({"select_lengths": (5,)}, r"select_lengths \[5\] must be evaluation lengths"),
    ],
)
def test_selection_without_in_distribution_validation_lengths_is_refused(changes, message):
    cfg = dataclasses.replace(BASE, train=dataclasses.replace(BASE.train, **changes))
    with pytest.raises(ValueError, match=message):
        cfg.check()
    no_short = dataclasses.replace(BASE, eval=EvalConfig(lengths=(8, 16)))
    with pytest.raises(ValueError, match="needs validation lengths at or below the training"):
        no_short.check()
