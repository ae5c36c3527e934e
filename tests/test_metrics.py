"""The metrics table and `masked_metrics`: known answers on a hand-made batch, padding ignored,
and every reader (results.csv, plots, summaries, training rows) takes its names from the table."""

import math
import typing

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from pe_research import metrics, results, runs
from pe_research.config import EvalConfig, RunConfig, TrainConfig
from pe_research.sweeps import plotting, summary
from pe_research.tasks import Batch
from pe_research.training import step

# Logits are log-probabilities, so each scored token's NLL is exactly ln 2 or ln 4.
HALF_FIRST, HALF_SECOND, HALF_THIRD = (np.log(p) for p in np.eye(3) * 0.25 + 0.25)
PAD = np.array([9.0, -9.0, 0.0])  # predicts 0, wrong for the padded targets below
LOGITS_BLV = jnp.array(
    [
        [HALF_FIRST, HALF_SECOND, PAD],  # both scored tokens right: nll ln 2, ln 2
        [HALF_FIRST, HALF_THIRD, PAD],  # first wrong (nll ln 4), second right (nll ln 2)
    ],
    jnp.float32,
)
TARGETS_BL = jnp.array([[0, 1, 2], [1, 2, 2]])
MASK_BL = jnp.array([[True, True, False], [True, True, False]])


def test_known_answers():
    out = metrics.masked_metrics(LOGITS_BLV, TARGETS_BL, MASK_BL)
    assert set(out) == {"loss", "token_accuracy", "exact_match"}, "bits per byte without bytes"
    np.testing.assert_allclose(out["loss"], 5 * math.log(2) / 4, rtol=1e-6)
    assert float(out["token_accuracy"]) == 0.75
    assert float(out["exact_match"]) == 0.5
    for bytes_per_token, bits in ((1, 1.25), (2, 0.625)):
        out = metrics.masked_metrics(
            LOGITS_BLV, TARGETS_BL, MASK_BL, bytes_per_token=bytes_per_token
        )
        np.testing.assert_allclose(out["bits_per_byte"], bits, rtol=1e-6)


def test_padding_is_ignored_even_when_not_finite():
    expected = metrics.masked_metrics(LOGITS_BLV, TARGETS_BL, MASK_BL)
    pad_BL = ~MASK_BL
    noisy_BLV = jnp.where(pad_BL[..., None], jnp.array([jnp.nan, jnp.inf, 0.0]), LOGITS_BLV)
    out = metrics.masked_metrics(noisy_BLV, jnp.where(pad_BL, 0, TARGETS_BL), MASK_BL)
    for name, value in expected.items():
        assert float(out[name]) == float(value), name
    # A float mask (1 = scored) means the same as a bool one.
    out = metrics.masked_metrics(LOGITS_BLV, TARGETS_BL, MASK_BL.astype(jnp.float32))
    assert {k: float(v) for k, v in out.items()} == {k: float(v) for k, v in expected.items()}


def test_nothing_scored_is_zero_loss_and_every_sequence_matches():
    out = metrics.masked_metrics(LOGITS_BLV, TARGETS_BL, jnp.zeros_like(MASK_BL))
    assert float(out["loss"]) == 0.0 and float(out["token_accuracy"]) == 0.0
    assert float(out["exact_match"]) == 1.0


def test_jitted_equals_eager():
    eager = metrics.masked_metrics(LOGITS_BLV, TARGETS_BL, MASK_BL, bytes_per_token=1)
    fn = jax.jit(metrics.masked_metrics, static_argnames="bytes_per_token")
    jitted = fn(LOGITS_BLV, TARGETS_BL, MASK_BL, bytes_per_token=1)
    for name in eager:
        np.testing.assert_allclose(jitted[name], eager[name], rtol=1e-6, err_msg=name)


def test_training_logs_the_table_names_from_the_same_function():
    batch = Batch(
        inputs=TARGETS_BL,
        targets=TARGETS_BL,
        loss_mask=MASK_BL,
        valid=jnp.ones_like(MASK_BL),
    )
    loss, logged = step.loss_and_metrics(LOGITS_BLV, batch)
    assert set(logged) == set(step.TRAIN_METRICS) <= set(metrics.METRICS)
    expected = metrics.masked_metrics(LOGITS_BLV, TARGETS_BL, MASK_BL)
    assert float(loss) == float(expected["loss"])
    for name in step.TRAIN_METRICS:
        assert float(logged[name]) == float(expected[name]), name


def test_table_names_the_choices_the_cli_offers():
    assert typing.get_args(metrics.MetricName) == metrics.plotted(), (
        "MetricName (the CLI's choices) must list the plotted metrics of METRICS, in order"
    )
    assert metrics.DEFAULT_METRIC in metrics.plotted()
    assert list(metrics.METRICS) == ["token_accuracy", "exact_match", "loss", "bits_per_byte"]
    for name, metric in metrics.METRICS.items():
        assert metric.name == name and metric.label
    with pytest.raises(ValueError, match="Unknown metric 'loss'; choose one of token_accuracy"):
        metrics.get("loss", plot=True)


def test_csv_columns_and_failed_rows_cover_every_metric(tmp_path):
    names = list(metrics.METRICS)
    start = results.CSV_COLUMNS.index(names[0])
    assert list(results.CSV_COLUMNS[start : start + len(names)]) == names
    cfg = RunConfig(train=TrainConfig(train_length=4), eval=EvalConfig(lengths=(4, 8)))
    run = runs.prepare(tmp_path / "run", cfg)
    runs.mark_failed(run, step=3, reason="loss became nan")
    rows = list(runs.failed_rows([run]))
    assert [r["length"] for r in rows] == [4, 8]
    for row in rows:
        assert {name: row[name] for name in names} == dict.fromkeys(names)


def rows_of(metric, values):
    return [
        {"run": "r", "task": "copy", "encoding": "rope", "seed": 0, "train_length": 4}
        | {"length": n, metric: v}
        for n, v in zip((4, 8), values, strict=True)
    ]


@pytest.mark.parametrize("name", metrics.plotted())
def test_plots_take_label_and_scale_from_the_table(name):
    metric = metrics.METRICS[name]
    fig = plotting.extrapolation_figure(rows_of(name, [0.2, 3.5]), name)
    ax = fig.axes[0]
    assert ax.get_ylabel() == metric.label
    assert (ax.get_ylim() == (-0.02, 1.02)) == metric.bounded
    heat = plotting.heatmap_figure(rows_of(name, [0.2, 3.5]), name)
    assert heat.axes[-1].get_ylabel().startswith(metric.label)  # the colorbar


def test_summaries_say_which_way_is_better_and_reject_unknown_metrics():
    rows = rows_of("bits_per_byte", [2.0, 3.0])
    assert summary.generalization_table(rows, "bits_per_byte").startswith(
        "bits_per_byte (lower is better): mean over seeds"
    )
    assert "bits_per_byte by evaluation length" in summary.per_length_tables(rows)
    assert "token_accuracy" not in summary.per_length_tables(rows), "a metric no row carries"
    with pytest.raises(ValueError, match="Unknown metric 'acc'; choose one of"):
        summary.summary_table(rows, "acc")
