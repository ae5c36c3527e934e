"""Real text at the byte level: the corpus split, the pe_text builder, the byte_lm task and its
bits per byte. The corpus is Python's own help text (no download, no system package), with
bytes that are not UTF-8 appended."""

import math

import jax
import numpy as np
import pytest

from pe_research import cli, encodings, runs, tasks, train
from pe_research.config import EvalConfig, ModelConfig, RunConfig, TrainConfig
from pe_research.data import corpus as corpora
from pe_research.data import store
from pe_research.sweeps import plotting

NOT_UTF8 = b"\xff\xfe\x80 caf\xe9 \xc3\x28\n"


@pytest.fixture(scope="module")
def corpus(tmp_path_factory):
    import pydoc_data.topics

    data = pydoc_data.topics.topics["assert"].encode() + NOT_UTF8 * 40
    path = tmp_path_factory.mktemp("corpus") / "tiny.txt"
    path.write_bytes(data)
    return path


def is_substring(window, data: bytes) -> bool:
    return np.asarray(window, np.uint8).tobytes() in data


def test_split_is_a_deterministic_tail(corpus):
    data = corpus.read_bytes()
    train_bytes, validation = corpora.split_corpus(data, 0.1)
    assert train_bytes + validation == data
    assert len(validation) == round(0.1 * len(data))
    assert NOT_UTF8 in validation  # invalid UTF-8 is just bytes
    assert corpora.split_corpus(data, 0.1) == (train_bytes, validation)


def test_missing_or_empty_corpus_says_how_to_get_one(tmp_path):
    with pytest.raises(FileNotFoundError, match="does not exist.*apt-get install bible-kjv"):
        corpora.read_corpus(str(tmp_path / "absent.txt"))
    (tmp_path / "empty.txt").write_bytes(b"")
    with pytest.raises(ValueError, match="is empty.*--corpus PATH"):
        corpora.read_corpus(str(tmp_path / "empty.txt"))
    with pytest.raises(FileNotFoundError, match="apt-get install bible-kjv"):
        tasks.get("byte_lm", corpus=str(tmp_path / "absent.txt")).sample(jax.random.key(0), 2, 8)


def test_built_text_dataset_gives_back_the_split(corpus, tmp_path, monkeypatch, capsys):
    cli.main(["data", "build", "text", "--corpus", str(corpus), "--data-dir", str(tmp_path)])
    assert "tfds:pe_text/tiny: built in" in capsys.readouterr().out
    monkeypatch.setenv(store.DATA_DIR_ENV, str(tmp_path))
    for split in corpora.SPLITS:
        from_file = corpora.corpus_split(str(corpus), split, 0.1)
        from_tfds = corpora.corpus_split("tfds:pe_text/tiny", split, 0.1)
        np.testing.assert_array_equal(from_tfds, from_file)
    with pytest.raises(ValueError, match="set --validation-fraction 0.1"):
        corpora.corpus_split("tfds:pe_text/tiny", "train", 0.2)
    (tmp_path / "other.txt").write_bytes(b"another corpus entirely")
    with pytest.raises(SystemExit):
        cli.main(["data", "build", "text", "--corpus", str(tmp_path / "other.txt"),
                  "--config", "tiny", "--data-dir", str(tmp_path)])  # fmt: skip
    assert "built from another corpus; pass --overwrite" in capsys.readouterr().err


def test_byte_lm_windows_are_contiguous_text_of_their_split(corpus):
    task = tasks.get("byte_lm", corpus=str(corpus))
    train_bytes, validation = corpora.split_corpus(corpus.read_bytes(), 0.1)
    batch = jax.jit(lambda key: task.sample(key, 8, 32))(jax.random.key(0))
    inputs, targets = np.asarray(batch.inputs), np.asarray(batch.targets)
    assert inputs.shape == (8, 32) and bool(np.all(batch.loss_mask)) and bool(np.all(batch.valid))
    np.testing.assert_array_equal(targets[:, :-1], inputs[:, 1:])  # next byte
    for b in range(8):
        assert is_substring(np.append(inputs[b], targets[b, -1]), train_bytes)
    held = task.held_out()
    assert held.split == "validation"
    batch = tasks.eval_batch(held, jax.random.key(1), 4, 16, pad_to=32, causal=True)
    inputs = np.asarray(batch.inputs)
    assert np.asarray(batch.valid).sum(axis=1).tolist() == [16] * 4
    assert (inputs[:, 16:] == task.pad).all()
    for b in range(4):
        assert is_substring(inputs[b, :16], validation)
    with pytest.raises(ValueError, match="decoder task"):
        task.sample(jax.random.key(0), 2, 8, causal=False)


def test_byte_lm_trains_and_reports_bits_per_byte(corpus, tmp_path):
    """The unchanged train loop trains on the train split; evaluation scores the validation
    split and reports bits per byte, which the plots accept."""
    cfg = RunConfig(
        task=tasks.get("byte_lm", corpus=str(corpus)),
        encoding=encodings.get("alibi"),
        model=ModelConfig(num_layers=1, d_model=16, num_heads=2, mlp_dim=32),
        train=TrainConfig(steps=2, batch_size=4, train_length=16, warmup_steps=1, log_every=1),
        eval=EvalConfig(lengths=(16, 32), batch_size=4),
    )
    train.train(cfg, tmp_path / "run", progress=False)
    rows = list(runs.eval_rows([tmp_path / "run"]))
    assert [row["length"] for row in rows] == [16, 32]
    for row in rows:
        assert row["bits_per_byte"] == pytest.approx(row["loss"] / math.log(2), rel=1e-5)
        assert 0 < row["bits_per_byte"] < 12
        assert row["data"].startswith(f"{corpus} (")
        assert "validation split: the last" in row["data"]
    plotting.save(plotting.extrapolation_figure(rows, "bits_per_byte"), tmp_path / "bpb.png")
    assert (tmp_path / "bpb.png").stat().st_size > 0
