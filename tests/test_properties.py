"""The essay's properties on cases with known answers, the demonstrations, and the command."""

import dataclasses
import json

import numpy as np
import pytest

from pe_research import cli, encodings
from pe_research.encodings import Dims, Encoding
from pe_research.encodings.absolute import Binary, Integer, NormalizedInteger, Sinusoidal
from pe_research.encodings.rotary import RoPE, RoPEND, XPos
from pe_research.essay.demonstrations import dog_sentence, precision_study
from pe_research.essay.probe import Probe
from pe_research.essay.properties import (
    consistency,
    linear_relation,
    longer_sequences,
    n_dimensional,
    norm_preservation,
    shift_invariance,
    sinusoidal_shift_matrix,
    uniqueness,
    wavelengths,
)
from pe_research.essay.report import markdown_table, measure, parse_encoding

SMALL = Dims(d_model=8, num_heads=1, head_dim=8)


@pytest.mark.parametrize("layout", ["interleaved", "halves"])
def test_sinusoidal_shift_is_the_essays_rotation(layout):
    # d_model 8: every frequency turns enough over 0..255 for M_k to be identifiable.
    probe = Probe.of(Sinusoidal(layout=layout), SMALL)
    m = linear_relation(probe, 255, shifts=(1, 5))
    assert max(m["residual"].values()) < 1e-5
    assert max(m["rotation_residual"].values()) < 1e-5
    assert max(m["rotation_distance"].values()) < 1e-3


def test_sinusoidal_rotation_fits_at_full_width_even_where_the_fit_is_not_unique():
    m = linear_relation(Probe.of(Sinusoidal()), 255, shifts=(1,))
    assert m["rotation_residual"][1] < 1e-5 and m["residual"][1] < 1e-5


def test_shift_matrix_is_a_rotation():
    M = sinusoidal_shift_matrix(8, 3, base=10000.0, layout="interleaved")
    np.testing.assert_allclose(M @ M.T, np.eye(8), atol=1e-12)


def test_binary_is_not_linear_in_position():
    assert linear_relation(Probe.of(Binary()), 255, shifts=(1,))["residual"][1] > 0.1


def test_normalized_integer_is_inconsistent_across_lengths():
    m = consistency(Probe.of(NormalizedInteger()))
    assert not m["consistent"]
    assert m["at_position"] == 9
    assert m["max_difference"] == pytest.approx(9 / 10 - 9 / 10_000, abs=1e-6)
    for enc in (Integer(), Sinusoidal(), RoPE()):
        assert consistency(Probe.of(enc))["consistent"], enc.name


def test_uniqueness_finds_t5_buckets_and_integer_spacing():
    integer = uniqueness(Probe.of(Integer()), 63)
    assert integer["unique"] and integer["min_distance"] == pytest.approx(8.0)  # sqrt(d_model)
    t5 = uniqueness(Probe.of(encodings.get("t5")), 63)
    assert not t5["unique"] and t5["min_distance"] == 0.0


def test_rope_scores_depend_only_on_relative_position_in_float32():
    assert shift_invariance(Probe.of(RoPE()))["max_relative_deviation"] < 1e-4
    dynamic = RoPE(
        scaling={"rope_type": "dynamic", "factor": 2.0, "original_max_position_embeddings": 16}
    )
    assert shift_invariance(Probe.of(dynamic))["max_relative_deviation"] > 1e-2


def test_rotations_keep_norms_and_xpos_does_not():
    assert norm_preservation(Probe.of(RoPE()), 255)["preserved"]
    assert not norm_preservation(Probe.of(XPos()), 255)["preserved"]


def test_wavelengths_are_measured_from_the_hooks():
    sin = wavelengths(Probe.of(Sinusoidal()), 1023)
    assert sin["longest_wavelength"] == pytest.approx(2 * np.pi * 1e4 ** (62 / 64), rel=1e-3)
    assert sin["essay_bound"] == 62831
    rope = wavelengths(Probe.of(RoPE(layout="interleaved")), 63)
    assert rope["longest_wavelength"] == pytest.approx(2 * np.pi * 1e4 ** (14 / 16), rel=1e-3)


def test_n_dimensional_positions():
    integer = measure(Integer(), max_position=15)["pr5_nd"]
    assert not integer["applicable"] and integer["reason"].startswith("not applicable")
    nd = n_dimensional(Probe.of(RoPEND()))
    assert nd["accepts"] and nd["ignored_axes"] == []


def test_dog_sentence():
    rows = {r["encoding"]: r for r in dog_sentence([encodings.get(n) for n in encodings.names()])}
    assert rows.pop("nope")["identical"] is True
    for causal_only in ("cope", "path"):  # the demonstration is bidirectional
        assert not rows.pop(causal_only)["applicable"]
    # Llama 4's temperature scales queries from position floor_scale - 1 = 15 on: the sentence's
    # positions all get 1, so it is NoPE there.
    assert rows.pop("temperature")["identical"] is True
    assert rows and all(r["identical"] is False and r["max_difference"] > 0 for r in rows.values())


def test_precision_study():
    study = precision_study(16, max_position=3000)
    assert study["float32"]["first_indistinct"] is None
    assert study["bfloat16"]["first_indistinct"] == 256  # 8 significand bits
    assert study["float16"]["first_indistinct"] == 2048  # 11 significand bits


def test_parse_encoding_and_table():
    assert parse_encoding("rope:base=500,layout=interleaved") == RoPE(
        base=500.0, layout="interleaved"
    )
    with pytest.raises(ValueError, match="KEY=VALUE"):
        parse_encoding("rope:base")
    table = markdown_table(
        [measure(e, max_position=15) for e in (encodings.get("nope"), Integer())]
    )
    assert "| integer | embed |" in table and "[1] " in table


def test_properties_command(tmp_path, capsys):
    out = tmp_path / "props"
    args = ["--out", str(out), "--max-position", "31", "--precision-positions", "3000"]
    cli.main(["properties", *args, "--encodings", "sinusoidal", "normalized_integer"])
    printed = capsys.readouterr().out
    assert "| normalized_integer | embed |" in printed and "nope" not in printed
    assert "sinusoidal: False" in printed
    reports = json.loads((out / "properties.json").read_text())
    assert [r["encoding"] for r in reports] == ["sinusoidal", "normalized_integer"]
    assert not reports[1]["pr1_consistent"]["consistent"]
    assert reports[0]["pr3_longer"]["measured"] is False
    png = (out / "precision.png").read_bytes()
    assert png[:4] == b"\x89PNG" and len(png) > 1000


def test_longer_sequences_from_sweep_rows():
    rows = [
        {"encoding": "rope", "task": "copy", "train_length": 4, "length": n, "token_accuracy": a}
        for n, a in ((4, 1.0), (8, 0.5), (16, 0.25), (4, 0.8))
    ]
    m = longer_sequences("rope", rows)
    assert m["tasks"] == {"copy": {"1x": pytest.approx(0.9), "2x": 0.5, "4x": 0.25}}
    assert not longer_sequences("alibi", rows)["measured"]
    assert longer_sequences("rope", None)["reason"].startswith("not measured")


@dataclasses.dataclass(frozen=True)
class Broken(Encoding):
    name = "broken"

    def embed(self, params, x_BLD, pos_BL):
        raise RuntimeError("boom")


def test_a_failing_encoding_does_not_crash_the_report():
    report = measure(Broken(), max_position=7)
    assert "boom" in report["error"]
    assert "| broken | n/a [1] |" in markdown_table([report])
