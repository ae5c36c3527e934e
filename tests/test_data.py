"""Frozen evaluation sets: built examples equal on-the-fly samples, versions are pinned by a
fingerprint, and a data dir holding another version says what to do."""

import dataclasses
import hashlib
import shutil

import jax
import numpy as np
import pytest
from flax import nnx

from pe_research import cli, encodings, tasks, train
from pe_research.config import EvalConfig, ModelConfig, RunConfig, TrainConfig
from pe_research.data import builders, catalog, loader
from pe_research.training import evaluate

# Two lengths in different power-of-two buckets; a config built from Python like a named one.
TINY = builders.TaskConfig(name="tiny", lengths=(3, 5), per_length=4)
TINY_MODEL = ModelConfig(num_layers=1, d_model=16, num_heads=2, mlp_dim=32)

# sha256 (first 16 hex digits) of each builder's examples of TINY, at its VERSION.
FINGERPRINTS = {
    "pe_copy": ("1.0.0", "55da29d9355168ea"),
    "pe_reverse": ("1.0.0", "47de73f3deb742cf"),
    "pe_offset": ("1.0.0", "6a5239381b032b7e"),
    "pe_duplicate": ("1.0.0", "e783160a3cdc9743"),
    "pe_count_copy": ("1.0.0", "eab628ffb3df65b2"),
    "pe_grid": ("1.0.0", "edbe82743a6e0e73"),
    "pe_addition": ("1.0.0", "a0017a06c6f7d9f4"),
    "pe_flip_flop": ("1.0.0", "d2d1024044154135"),
    "pe_selective_copy": ("1.0.0", "75d61559a552ff3d"),
    "pe_counting": ("1.0.0", "eabed70d16880f00"),
    "pe_sort": ("1.0.0", "3321d5ed57855a0f"),
    "pe_multiplication": ("1.0.0", "54ed79e54b3d3085"),
    "pe_mqar": ("1.0.0", "f1b061812059167b"),
    "pe_local_count": ("1.1.0", "6c4de5504e60abaf"),
}


@pytest.fixture(scope="module")
def data_dir(tmp_path_factory):
    root = tmp_path_factory.mktemp("tfds")
    for task in ("copy", "grid"):
        catalog.build(task, TINY, data_dir=root)
    return root


def init(cfg):
    """Graph definition and parameters, initialized in one compiled program (eager init
    compiles every op separately)."""
    graphdef = nnx.eval_shape(lambda: train.init_model(cfg, jax.random.key(0)))[0]
    return graphdef, jax.jit(lambda key: train.init_model(cfg, key)[1])(jax.random.key(0))


def fingerprint(task, config) -> str:
    h = hashlib.sha256()
    for _, example in builders.generate(task, config):
        for name in sorted(example):
            h.update(name.encode() + np.asarray(example[name]).tobytes())
    return h.hexdigest()[:16]


@pytest.mark.parametrize("task", list(builders.TASK_BUILDERS))
def test_examples_are_pinned_by_the_version(task):
    cls = builders.TASK_BUILDERS[task]
    got = (str(cls.VERSION), fingerprint(cls.task(), TINY))
    assert got == FINGERPRINTS[cls.name], (
        f"The examples of {cls.name} changed. If intended, bump its VERSION in "
        "pe_research/data/builders.py (with a RELEASE_NOTES line saying what changed), then set "
        f"FINGERPRINTS[{cls.name!r}] = {got} here."
    )


@pytest.mark.parametrize("task", ["copy", "grid"])
def test_built_examples_read_back_as_the_sampled_batches(data_dir, task):
    """Stored trimmed, read through grain and padded to the bucket: tasks.eval_batch's
    batches (the next test shows evaluate scores them identically)."""
    eval_set = loader.EvalSet(f"tfds:pe_{task}/tiny", data_dir)
    sampled = builders._eval_batches(tasks.get(task), TINY)
    for n, fresh in zip(TINY.lengths, sampled, strict=True):
        stored = eval_set.batch(n, TINY.per_length, fresh.inputs.shape[1])
        valid = np.asarray(fresh.valid)
        for name, a, b in zip(fresh._fields, fresh, stored, strict=True):
            assert (a is None) == (b is None), name
            if name == "inputs":
                # Beyond the sequence the built set holds PAD; the sampler may leave the last
                # answer token there, masked and after every scored position.
                a = np.where(valid, a, stored.inputs)
                assert (stored.inputs[~valid] == tasks.get(task).pad).all()
            if a is not None:
                np.testing.assert_array_equal(np.asarray(a), b, err_msg=name)


def test_evaluating_from_the_built_set_gives_the_same_numbers_and_records_it(data_dir):
    cfg = RunConfig(
        task=tasks.get("copy"),
        encoding=encodings.get("rope"),
        model=TINY_MODEL,
        train=TrainConfig(train_length=3),
        eval=EvalConfig(lengths=(5,), batch_size=4),
    )
    built = dataclasses.replace(
        cfg, eval=dataclasses.replace(cfg.eval, data="tfds:pe_copy/tiny", data_dir=str(data_dir))
    )
    built.check()
    graphdef, params = init(cfg)
    [fresh_row] = evaluate.evaluate(cfg, graphdef, params)
    [built_row] = evaluate.evaluate(built, graphdef, params)
    assert built_row["data"] == "tfds:pe_copy/tiny:1.0.0"
    assert fresh_row["data"] == "sampled on the fly (eval seed 20240101)"
    for metric in ("token_accuracy", "exact_match", "loss"):
        assert fresh_row[metric] == pytest.approx(built_row[metric], abs=1e-6)
    assert fresh_row["padded_to"] == built_row["padded_to"] == 16
    # One program for the one bucket and one that reads the data and samples its positions.
    assert built_row["compiles"] == fresh_row["compiles"] == 2
    assert built.to_dict()["eval"]["data"] == "tfds:pe_copy/tiny"
    assert "data" not in cfg.identity()["eval"]  # unset: not part of the run id


def test_a_run_that_does_not_fit_the_built_set_is_refused(data_dir):
    cfg = RunConfig(
        task=tasks.get("copy"),
        encoding=encodings.get("rope"),
        model=TINY_MODEL,
        train=TrainConfig(train_length=3),
        eval=EvalConfig(
            lengths=(3, 5), batch_size=4, data="tfds:pe_copy/tiny", data_dir=str(data_dir)
        ),
    )

    def refused(match, **changes):
        with pytest.raises(ValueError, match=match):
            evaluate.check_run(dataclasses.replace(cfg, **changes))

    refused("holds copy but this run's task is reverse", task=tasks.get("reverse"))
    refused(
        "holds copy but this run's task is copy\\(alphabet=8\\)", task=tasks.get("copy", alphabet=8)
    )
    refused("decoder sequences but the model is an encoder: use the config tiny-encoder",
            model=dataclasses.replace(TINY_MODEL, causal=False))  # fmt: skip
    refused("has lengths \\[3, 5\\], not \\[4\\]", eval=dataclasses.replace(cfg.eval, lengths=(4,)))
    refused("lower --eval.batch-size", eval=dataclasses.replace(cfg.eval, batch_size=5))
    refused(
        "seed 20240101, but this run asks for seed 1", eval=dataclasses.replace(cfg.eval, seed=1)
    )
    refused("not a built dataset name", eval=dataclasses.replace(cfg.eval, data="copy/L16"))
    refused("pe_text is a corpus", eval=dataclasses.replace(cfg.eval, data="tfds:pe_text/kjv"))
    with pytest.raises(FileNotFoundError, match="build it with `pe-research data build copy"):
        evaluate.check_run(
            dataclasses.replace(cfg, eval=dataclasses.replace(cfg.eval, data="tfds:pe_copy/L8"))
        )


def test_a_data_dir_holding_another_version_says_to_rebuild(data_dir, tmp_path):
    shutil.copytree(
        data_dir / "pe_copy" / "tiny" / "1.0.0", tmp_path / "pe_copy" / "tiny" / "0.9.0"
    )
    with pytest.raises(ValueError) as error:
        loader.EvalSet("tfds:pe_copy/tiny", tmp_path)
    message = str(error.value)
    assert "holds version 0.9.0 of tfds:pe_copy/tiny" in message
    assert "generates version 1.0.0" in message
    assert "Rebuild with `pe-research data build copy --config tiny" in message


def test_cli_lists_reads_and_names_the_configs(data_dir, capsys):
    cli.main(["data", "list", "--data-dir", str(data_dir)])
    listing = capsys.readouterr().out
    assert "tfds:pe_copy/CONFIG (1.0.0): L8 L8-encoder L16" in listing
    assert "tfds:pe_text/CONFIG (1.0.0): kjv pydoc_topics" in listing
    cli.main(["data", "read", "tfds:pe_grid/tiny", "--data-dir", str(data_dir)])
    assert "'examples': 8" in capsys.readouterr().out
    with pytest.raises(SystemExit):
        cli.main(["data", "build", "copy", "--config", "L7", "--data-dir", str(data_dir)])
    assert "has no config 'L7'; it has: L8, L8-encoder, L16" in capsys.readouterr().err
