"""RunConfig: JSON round trip (encodings through the registry too), labels, and the checks that
tie encoding, sampler and task."""

import dataclasses
import json

import pytest

from pe_research import encodings, positions, tasks
from pe_research.config import EvalConfig, ModelConfig, RunConfig, TrainConfig, series_label
from pe_research.encodings import DAPE, NAPE, FoPE, PaTH, PoPE, Temperature
from pe_research.encodings.bias import ALiBi


def test_round_trip_through_json_keeps_every_choice():
    cfg = RunConfig(
        task=tasks.get("offset", k=2, k_max=5),
        encoding=encodings.get("rope", base=500.0, scaling={"rope_type": "linear", "factor": 2}),
        eval_encoding=encodings.get("rope", base=500.0),
        positions=positions.get("randomized", max_pos=512),
        eval=EvalConfig(lengths=(8, 16), positions="train"),
        seed=3,
    )
    assert RunConfig.from_dict(json.loads(json.dumps(cfg.to_dict()))) == cfg
    assert hash(cfg) == hash(RunConfig.from_dict(cfg.to_dict()))


def test_hand_edited_config_gets_a_clear_error():
    d = RunConfig().to_dict()
    del d["model"]
    with pytest.raises(ValueError, match="does not match RunConfig"):
        RunConfig.from_dict(d)
    d = RunConfig().to_dict()
    d["encoding"]["name"] = "rotary"
    with pytest.raises(ValueError, match="Known encodings"):
        RunConfig.from_dict(d)


def test_series_label_names_the_sampler_and_the_eval_encoding():
    base = RunConfig(encoding=encodings.get("rope"))
    assert series_label(base) == "rope"
    randomized = dataclasses.replace(base, positions=positions.get("randomized", max_pos=64))
    assert series_label(randomized) == "rope + randomized(max_pos=64)"
    evaluated_so = dataclasses.replace(randomized, eval=EvalConfig(positions="train"))
    assert series_label(evaluated_so) == "rope + randomized(max_pos=64), eval randomized"
    scaled = dataclasses.replace(
        base, eval_encoding=encodings.get("rope", scaling={"rope_type": "linear", "factor": 4})
    )
    assert series_label(scaled) == "rope -> eval rope(scaling=linear(factor=4))"
    entmax = dataclasses.replace(
        base, encoding=encodings.get("nape"), model=ModelConfig(normalization="entmax15")
    )
    assert series_label(entmax) == "nape [entmax15]"


def test_checks_tie_encoding_sampler_and_task():
    grid = RunConfig(
        task=tasks.get("grid"),
        encoding=encodings.get("rope_nd"),
        positions=positions.get("grid"),
        train=TrainConfig(train_length=3),
        eval=EvalConfig(lengths=(3, 4)),
    )
    grid.check()
    with pytest.raises(ValueError, match="needs 2-D positions pos_BLA but the 'contiguous'"):
        dataclasses.replace(grid, positions=positions.get("contiguous")).check()
    with pytest.raises(ValueError, match="reads 2 coordinate.s. .* task 'copy' gives none"):
        dataclasses.replace(grid, task=tasks.get("copy")).check()
    with pytest.raises(ValueError, match="randomized position range smaller than the sequence"):
        RunConfig(
            positions=positions.get("randomized", max_pos=40), eval=EvalConfig(positions="train")
        ).check()
    with pytest.raises(ValueError, match="max_positions=64"):
        RunConfig(encoding=encodings.get("learned", max_positions=64)).check()


def test_every_new_encoding_is_registered_and_round_trips():
    for name, cls in [
        ("fope", FoPE),
        ("pope", PoPE),
        ("dape", DAPE),
        ("path", PaTH),
        ("temperature", Temperature),
        ("nape", NAPE),
    ]:
        enc = encodings.get(name)
        assert type(enc) is cls and encodings.from_dict(encodings.to_dict(enc)) == enc
    assert ALiBi() == DAPE().prior_encoding
