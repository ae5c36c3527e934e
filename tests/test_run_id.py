"""Run ids (runs.run_id): what names a run in a sweep's folder and its results table."""

import dataclasses

from pe_research import encodings, runs, tasks
from pe_research.config import ModelConfig, RunConfig, TrainConfig
from pe_research.tasks import Copy

BASE = RunConfig(task=tasks.get("copy"), encoding=encodings.get("rope"))


@dataclasses.dataclass(frozen=True)
class CopyWithANewOption(Copy):
    new_option: int = 7


@dataclasses.dataclass(frozen=True)
class ModelWithANewOption(ModelConfig):
    new_option: str = "off"


def test_a_new_option_at_its_default_leaves_the_run_id_unchanged():
    before = runs.run_id(BASE)
    assert runs.run_id(dataclasses.replace(BASE, task=CopyWithANewOption())) == before
    assert runs.run_id(dataclasses.replace(BASE, model=ModelWithANewOption())) == before
    # Set away from its default, the option does tell the run apart.
    assert runs.run_id(dataclasses.replace(BASE, task=CopyWithANewOption(new_option=8))) != before
    assert runs.run_id(dataclasses.replace(BASE, model=ModelWithANewOption(new_option="on"))) != (
        before
    )


def test_run_ids_name_the_run_and_tell_configs_apart():
    assert runs.run_id(BASE).startswith("copy/rope/seed0-")
    others = [
        dataclasses.replace(BASE, seed=1),
        dataclasses.replace(BASE, encoding=encodings.get("rope", base=500.0)),
        dataclasses.replace(BASE, train=TrainConfig(steps=501)),
        dataclasses.replace(BASE, task=tasks.get("copy", alphabet=8)),
    ]
    ids = {runs.run_id(cfg) for cfg in [BASE, *others]}
    assert len(ids) == 5
    # A field set to its default value explicitly is the default.
    assert runs.run_id(dataclasses.replace(BASE, train=TrainConfig(steps=500))) == runs.run_id(BASE)
    # The id depends on the config alone, not on the object.
    assert runs.run_id(RunConfig.from_dict(BASE.to_dict())) == runs.run_id(BASE)
