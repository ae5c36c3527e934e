"""The paper reproductions: protocol tables that hold and are in the docstrings, paper
scales that match the papers and train, coupled offsets that cover the evaluated positions, the
paper's numbers recomputed from released results, and the report read from run directories."""

import dataclasses
import importlib.util
import json
import re
import subprocess
import sys
from pathlib import Path

import jax
import numpy as np
import pytest
from flax import nnx

from pe_research import encodings, positions, runs, tasks, train
from pe_research.config import EvalConfig, ModelConfig, RunConfig, TrainConfig
from pe_research.sweeps import cost, experiments, protocol
from pe_research.training.step import init_model, sample_groups

ROOT = Path(__file__).resolve().parents[1]
REPRODUCTIONS = ["mcgill", "randomized", "addition", "addition_hints", "lm", "prope"]
PAPER_SCALED = ["mcgill", "randomized", "addition", "addition_hints"]
TINY = ModelConfig(num_layers=1, d_model=16, num_heads=2, mlp_dim=32)


def load(name):
    return experiments.load_experiment(str(ROOT / "experiments" / f"{name}.py"))


# -- protocol tables --------------------------------------------------------------------------


@pytest.mark.parametrize("name", REPRODUCTIONS)
def test_the_protocol_table_holds_and_the_docstring_names_the_paper_and_its_page(name):
    """The table is rendered from PROTOCOL into the generated pages; the docstring names the
    paper (authors, year, arXiv link) and links the experiment's page."""
    module = load(name)
    table = module.PROTOCOL
    table.check()
    assert table.scales == tuple(module.SCALES)
    assert table.text().strip()
    doc = protocol.normalized(module.__doc__)
    authors = table.paper.split(",")[0]  # "Kazemnejad et al. 2023"
    arxiv = re.search(r"arXiv (\d{4}\.\d{4,5})", table.paper)[1]
    assert authors in doc and f"arxiv.org/abs/{arxiv}" in doc, (
        f"experiments/{name}.py: the docstring should name {authors} and link arXiv {arxiv}"
    )
    assert f"docs/results/{name}/summary.md" in doc, (
        f"experiments/{name}.py: link its generated page docs/results/{name}/summary.md"
    )
    markdown = table.markdown(ran="cpu")
    assert markdown.count("\n|") == len(table.rows) + 2 and "`cpu` scale" in markdown


@pytest.mark.parametrize("name", PAPER_SCALED)
def test_the_protocol_names_every_step_cap_its_runs_train_to(name):
    """A cap set per task (mcgill's reverse) or per scale must be in the table's steps row."""
    module = load(name)
    (steps_row,) = [r for r in module.PROTOCOL.rows if "steps" in r.item]
    for scale in module.PROTOCOL.scales:
        cell = steps_row.cell(scale)
        text = steps_row.paper if cell == protocol.SAME else cell
        for cap in {r.train.steps for r in module.runs(scale)}:
            assert f"{cap:,} steps" in text, (name, scale, cap, text)


def test_a_difference_without_a_reason_is_refused():
    rows = [protocol.row(a, "x", "theirs", "somewhere", cpu=protocol.SAME)
            for a in protocol.ASPECTS]  # fmt: skip
    protocol.Protocol("P", ("cpu",), tuple(rows)).check()
    bad = [*rows[:-1], protocol.row("aggregation", "x", "theirs", "somewhere", cpu="ours")]
    with pytest.raises(ValueError, match="aggregation / x: differs from the paper but says not"):
        protocol.Protocol("P", ("cpu",), tuple(bad)).check()
    unsourced = [*rows[:-1], protocol.row("aggregation", "x", "theirs", " ", cpu="same")]
    with pytest.raises(ValueError, match="needs a source"):
        protocol.Protocol("P", ("cpu",), tuple(unsourced)).check()
    with pytest.raises(ValueError, match=r"no row for aspect\(s\) \['aggregation'\]"):
        protocol.Protocol("P", ("cpu",), tuple(rows[:-1])).check()


# -- paper scales -----------------------------------------------------------------------------


def test_paper_scales_are_the_papers_settings():
    """The settings each paper scale claims, read from its configs (the papers' numbers are in
    the protocol tables with their sources)."""
    m = load("mcgill").runs("paper")
    assert {(c.model.num_layers, c.model.d_model, c.model.num_heads, c.model.mlp_dim)
            for c in m} == {(12, 768, 12, 3072)}  # fmt: skip
    t = m[0].train
    assert (t.steps, t.batch_size, t.learning_rate, t.warmup_steps, t.lr_schedule) == (
        40_000, 64, 3e-5, 2_400, "linear")  # fmt: skip
    assert t.weight_decay == 0.05 and m[0].eval.batch_size == 500
    assert m[0].eval_lengths == tuple(range(2, 41))  # validation 2-20, test 21-40
    assert (t.select_best, t.select_every) == (True, 2_000)
    assert m[0].select_lengths == tuple(range(2, 21))
    assert {(c.task.prefix, c.task.separator) for c in m} == {(2, 4)}  # `Copy: ... [SEP] ...`
    assert all(c.task.end_token for c in m if c.task.name != "count_copy")
    # T5's block: pre-RMSNorm, ReLU MLP without biases, q.k unscaled; T5's bias as the paper's
    # one shared table and as ours, a table per layer.
    blocks = {(c.model.norm, c.model.norm_position, c.model.mlp, c.model.mlp_bias,
               c.model.qk_scale) for c in m}  # fmt: skip
    assert blocks == {("rmsnorm", "pre", "relu", False, "init")}
    assert {c.encoding.shared for c in m if c.encoding.name == "t5"} == {True, False}
    a = load("addition").runs("paper")
    assert {(c.model.num_layers, c.model.d_model, c.model.num_heads, c.model.mlp_dim)
            for c in a} == {(1, 1024, 4, 2048)}  # fmt: skip
    t = a[0].train
    assert (t.steps, t.batch_size, t.learning_rate, t.adam_b2, t.weight_decay) == (
        50_000, 1000, 1e-4, 0.95, 0.0)  # fmt: skip
    assert set(range(5, 201, 5)) <= set(a[0].eval_lengths) and t.train_length == 30
    assert not a[0].task.reversed_operands and a[0].task.end_token
    r = load("randomized").runs("paper")
    assert {c.task.alphabet for c in r} == {2}
    assert {(c.model.num_layers, c.model.d_model, c.model.num_heads, c.model.causal)
            for c in r} == {(5, 64, 8, False)}  # fmt: skip
    assert r[0].eval_lengths == (40, *range(41, 501)) and r[0].train.lr_schedule == "constant"
    assert {c.positions.max_pos for c in r if c.positions.name == "randomized"} == {2048}


@pytest.mark.parametrize("name", PAPER_SCALED)
def test_the_cpu_scale_keeps_the_protocol(name):
    """Tasks, encodings and position samplers are the paper scale's; only sizes, steps and
    lengths (and ranges that follow the lengths) change."""
    module = load(name)

    def encoding(enc):  # a learned table's size follows the lengths
        return enc.name, tuple((k, v) for k, v in enc.hyperparameters().items()
                               if k != "max_positions")  # fmt: skip

    def kinds(cfgs):
        return {(type(c.task), c.task.name, getattr(c.task, "end_token", None),
                 getattr(c.task, "reversed_operands", None), c.task.alphabet,
                 encoding(c.encoding), c.positions.name, c.eval.positions, c.model.causal,
                 c.model.norm, c.model.norm_position, c.model.mlp, c.model.mlp_bias,
                 c.model.qk_scale)
                for c in cfgs}  # fmt: skip

    assert kinds(module.runs("cpu")) == kinds(module.runs("paper"))


def test_mcgill_cpu_ties_the_head_without_dropout_and_the_paper_scales_run_the_rest_of_t5():
    """mcgill's cpu scale ties T5's head and drops nothing; its gpu and paper scales drop at T5's
    sites and tie the head, as their decoder does; randomized drops as Ruoss et al.'s encoder at
    every scale."""
    mcgill = load("mcgill")
    assert {(c.model.dropout, c.model.tie_embeddings) for c in mcgill.runs()} == {(0.0, True)}
    for scale in ("gpu", "paper"):
        assert {(c.model.dropout, c.model.dropout_sites, c.model.tie_embeddings)
                for c in mcgill.runs(scale)} == {(0.1, "t5", True)}  # fmt: skip
    assert {(c.model.dropout, c.model.dropout_sites) for scale in ("cpu", "gpu", "paper")
            for c in load("randomized").runs(scale)} == {(0.1, "residual")}  # fmt: skip


def test_addition_hints_figure_draws_each_variants_best_seed_on_multiples_of_its_train_length():
    """The paper reports the best of its trials and trains to 40 digits where we train to 8: the
    figure draws one line per variant, its best seed's, against length / training length."""
    hints = load("addition_hints")
    em = {0: {8: 0.9, 10: 0.1, 20: 0.0}, 1: {8: 1.0, 10: 0.6, 20: 0.0}}  # seed 1 is the best
    rows = [
        {"encoding": "fire", "seed": s, "length": n, "train_length": 8, "exact_match": v}
        for s, by in em.items()
        for n, v in by.items()
    ]
    rows.append({**rows[0], "seed": 2, "exact_match": 1.0, "failed_step": 300})  # failed: out
    (series,) = hints.headline(rows).values()
    ours = [s for s in series if not s[3]]
    assert ours == [("fire, best seed", [1.0, 1.25, 2.5], [1.0, 0.6, 0.0], False)]
    (paper,) = [s for s in series if s[3]]
    assert paper[1] == [hints.PAPER_POINT[0] / hints.PAPER_TRAIN] == [2.5]


def test_addition_reports_the_papers_median_over_every_seed_beside_our_mean_over_fit_seeds():
    """Cho et al.'s figures draw the median over all runs; ours gates on fit. At 12 digits the fit
    seeds average (.95 + .6) / 2 < .9 while the median of all three (.6, .93, .95) is .93."""
    addition = load("addition")
    em = {(0, True): {8: 1.0, 12: 0.95}, (1, True): {8: 1.0, 12: 0.6},
          (2, False): {8: 1.0, 12: 0.93}}  # fmt: skip
    rows = [
        {"encoding": "learned + coupled", "run": f"r{s}", "seed": s, "fit": fit, "length": n,
         "train_length": 8, "exact_match": v}
        for (s, fit), by in em.items()
        for n, v in by.items()
    ]  # fmt: skip
    rows.append({**rows[0], "run": "r3", "seed": 3, "exact_match": 0.0, "failed_step": 50})
    assert addition.reach(rows) == {"learned + coupled": (8, 12, 2, 3)}
    assert "| learned + coupled | 2/3 | 8 | 1.00x | 12 | 1.50x |" in addition.paper_vs_here(rows)
    ((label, lengths, values, _),) = addition.headline(rows)[
        "addition: exact match, median over seeds"
    ]
    assert (label, lengths, values) == ("learned + coupled", [8, 12], [1.0, 0.93])


def test_a_paper_scale_where_there_is_none_names_the_experiments_that_have_one(monkeypatch):
    monkeypatch.chdir(ROOT)
    with pytest.raises(ValueError, match=r"has no `paper` scale.*one: addition, addition_hints, "
                       r"mcgill, randomized"):  # fmt: skip
        experiments.experiment_runs(load("prope"), "paper")


def train_a_few_steps(configs, **train_changes):
    """Each task, encoding and position sampler of `configs` trains three steps in at least one
    config, at tiny width; the loss is finite and changes. Returns the configs trained."""
    seen, trained = set(), []
    for cfg in configs:
        parts = {("task", cfg.task), ("encoding", cfg.encoding), ("positions", cfg.positions)}
        if parts <= seen:
            continue
        seen |= parts
        cfg = dataclasses.replace(
            cfg,
            model=dataclasses.replace(TINY, causal=cfg.model.causal),
            train=dataclasses.replace(cfg.train, **train_changes),
        )
        cfg.check()
        keys = train.keys_from_seed(cfg.seed)
        graphdef, state = train.init_state(cfg, keys)
        step = train.make_train_step(cfg, graphdef)
        losses = []
        for i in range(3):
            state, metrics = step(state, jax.random.fold_in(keys.data, i), keys.positions)
            losses.append(float(metrics["loss"]))
        assert np.isfinite(losses).all() and losses[0] != losses[-1], (parts, losses)
        trained.append(cfg)
    every = {(k, getattr(c, k)) for c in configs for k in ("task", "encoding", "positions")}
    assert seen == every
    return trained


@pytest.mark.parametrize("name", ["mcgill", "randomized", "addition_hints"])
def test_cpu_scale_configs_train_a_few_steps(name):
    train_a_few_steps(load(name).runs("cpu"), batch_size=8, length_buckets=1)


@pytest.mark.parametrize("name", PAPER_SCALED)
def test_paper_scale_builds_checks_and_trains_at_tiny_width(name, capsys):
    """Every config of the paper scale passes the run's checks and has a cost estimate; its
    headline run trains three steps at tiny width and batch."""
    configs = load(name).runs("paper")
    for cfg in configs:
        cfg.check()
    estimate = cost.estimate(configs)
    assert estimate.train_flops > 1e15 and "H200" in estimate.text()
    train_a_few_steps(configs[:1], batch_size=configs[0].train.length_buckets * 2)


def test_accelerator_hours_are_bound_by_flops_or_by_steps_whichever_is_slower():
    """The cost's hours come from the bench's two measured H200 rates: a large model's FLOP rate
    and a small model's time per step; the slower of the two sets the bound."""
    flop_bound = cost.Estimate(runs=1, trainings=1, train_flops=3.6e18, check_flops=0,
                               eval_flops=0, max_steps=10, total_steps=10)  # fmt: skip
    assert flop_bound.accelerator_hours() == pytest.approx(3.6e18 / cost.H200_LARGE_MODEL_RATE
                                                           / 3600)  # fmt: skip
    step_bound = dataclasses.replace(flop_bound, train_flops=1e9, total_steps=3_600_000)
    assert step_bound.accelerator_hours() == pytest.approx(3_600_000 * cost.H200_STEP_FLOOR_S
                                                           / 3600)  # fmt: skip
    # The paper-scale mcgill sweep (21 trainings of 40,000 steps of a 12-layer model): FLOP-bound.
    paper = cost.estimate(load("mcgill").runs("paper"))
    assert paper.accelerator_hours() > paper.total_steps * cost.H200_STEP_FLOOR_S / 3600
    assert "at least" in paper.text() and "benchmarks/" in paper.text()


# -- addition: the coupled offset ---------------------------------------------------------------


@pytest.mark.parametrize("scale", ["cpu", "gpu", "paper"])
def test_coupled_training_reaches_every_position_evaluation_uses(scale):
    """Every coupled variant trains with a random start, and the positions its training draws
    cover every coupled position of every evaluated length."""
    configs = [c for c in load("addition").runs(scale) if c.positions.name == "coupled"]
    assert {c.encoding.name for c in configs} == {"rope", "alibi", "fire", "learned"}
    cfg = configs[0]
    assert all(c.positions == cfg.positions and c.positions.position_limit for c in configs)
    seen = set()
    sample = jax.jit(lambda kd, kp: sample_groups(cfg, kd, kp))
    for step in range(8):
        for batch, pos_BL in sample(jax.random.key(step), jax.random.key(100 + step)):
            digits = np.asarray(batch.valid & (batch.coords[..., 0] > 0))
            seen |= set(np.asarray(pos_BL)[digits].tolist())
    wanted = set()
    for n in cfg.eval_lengths:  # coupled positions at evaluation: no offset
        batch = cfg.task.sample(jax.random.key(0), 2, n, min_length=n)
        pos = cfg.eval_sampler.sample(jax.random.key(1), batch.valid, batch.coords)
        wanted |= set(np.asarray(pos)[np.asarray(batch.coords[..., 0] > 0)].tolist())
    assert wanted == set(range(1, max(cfg.eval_lengths) + 2))
    assert wanted <= seen, sorted(wanted - seen)
    assert max(seen) <= cfg.positions.position_limit


@pytest.mark.parametrize("scale", ["cpu", "gpu", "paper"])
@pytest.mark.parametrize(("name", "ratio"), [("addition", 1.0), ("randomized", 6.25)])
def test_a_learned_table_starts_at_the_papers_scale_beside_the_tokens(name, ratio, scale):
    """Cho et al.'s table starts N(0, 1) like their token embeddings; Ruoss et al.'s at std 1
    beside tokens of std 0.02 * sqrt(64). The encoding's default (std 0.02 beside our
    unit-variance tokens) leaves the 1-layer addition model unable to learn."""
    cfg = next(c for c in load(name).runs(scale) if c.encoding.name == "learned")
    model = nnx.merge(*init_model(cfg, jax.random.key(0)))
    table_std = float(np.std(np.asarray(model.pe["table_PD"][...])))
    token_std = float(np.std(np.asarray(model.embed_VD[...])))
    assert 0.9 * ratio < table_std / token_std < 1.1 * ratio, (table_std, token_std)


def test_position_limit_draws_every_start_that_stays_under_the_limit():
    sampler = positions.Coupled(position_limit=12)
    coords = np.zeros((4000, 6, 1), np.int32)
    coords[:, :5, 0] = [0, 1, 2, 3, 5]  # largest coupled position 5: offsets 0..7
    valid = coords[..., 0] >= 0
    valid[:, 5] = False
    pos = np.asarray(sampler.sample(jax.random.key(0), valid, coords))
    offsets = pos[:, 1] - 1
    assert set(offsets.tolist()) == set(range(8)) and pos[valid].max() == 12
    np.testing.assert_array_equal(pos[:, :5] - offsets[:, None], coords[:, :5, 0])
    counts = np.bincount(offsets, minlength=8)
    assert counts.min() > 0.8 * 4000 / 8  # uniform
    with pytest.raises(ValueError, match="give max_offset .* or position_limit"):
        positions.Coupled(max_offset=3, position_limit=12)


# -- the paper's numbers, recomputed -----------------------------------------------------------


def test_mcgill_numbers_are_recomputed_from_per_run_results(tmp_path):
    """experiments/mcgill_paper_numbers.py on a file in the released format: per-task means and std
    over seeds, and the MRR with ties broken in file order, against a hand computation."""
    lines = []
    values = {  # (split, pe) -> per seed, exact match at 21..40 (constant per run)
        ("rsc_tr20_ts40", "none"): (1.0, 0.8, 0.9),
        ("rsc_tr20_ts40", "rotary"): (0.0, 0.0, 0.0),
        ("rsc_tr20_ts40", "alibi"): (0.5, 0.5, 0.5),
        ("rsc_tr20_ts40", "abs_sinusoid"): (0.0, 0.0, 0.0),
        ("rsc_tr20_ts40", "t5_relative_bias"): (0.5, 0.9, 0.1),
    }
    for (split, pe), per_seed in values.items():
        for seed, v in zip((11, 22, 33), per_seed, strict=True):
            row = {"job_type": "best_run_seed_exp", "cfg__dataset.name": "s2s_copy",
                   "cfg__dataset.split": split, "cfg__model.position_encoding_type": pe,
                   "cfg__global_vars.seed": seed, "sum__pred/test_acc_overall": v,
                   **{f"sum__pred/test_acc_{n}": v for n in range(21, 41)}}  # fmt: skip
            lines.append(json.dumps(row))
    lines.append(json.dumps({"job_type": "agent"}))
    path = tmp_path / "sanity_check.jsonl"
    path.write_text("\n".join(lines))
    out = subprocess.run(
        [sys.executable, str(ROOT / "experiments" / "mcgill_paper_numbers.py"), str(path)],
        capture_output=True, text=True, check=True,
    ).stdout  # fmt: skip
    assert "('count_copy', 'nope'): (0.9000, 0.1000)" in out
    assert "('count_copy', 't5'): (0.5000, 0.4000)" in out
    # Seed 11: nope 1 > alibi .5 = t5 .5 (alibi first in the file) > rope 0 = sinusoidal 0.
    # Seed 22: t5 .9 > nope .8 > alibi > rope > sinusoidal. Seed 33: nope > alibi > t5 > ...
    want = {"nope": (1 + 1 / 2 + 1) / 3, "t5": (1 / 3 + 1 + 1 / 3) / 3,
            "alibi": (1 / 2 + 1 / 3 + 1 / 2) / 3, "rope": 1 / 4, "sinusoidal": 1 / 5}  # fmt: skip
    for name, value in want.items():
        assert f"'{name}': {value:.4f}," in out, (name, out)


def test_t5_count_copy_dissects_a_sweeps_own_runs(tmp_path, monkeypatch, capsys):
    """scripts/t5_count_copy.py --from-sweep on a tiny finished T5 count_copy run laid out as a
    mcgill sweep: its 'as trained' evaluation is the run's own, and the edited tables differ
    from the trained one exactly in the rows training never reached."""
    spec = importlib.util.spec_from_file_location(
        "t5_count_copy", ROOT / "scripts" / "t5_count_copy.py"
    )
    script = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(script)
    cfg = RunConfig(
        task=tasks.get("count_copy", alphabet=8),
        encoding=encodings.get("t5", shared=True, scaled=False),
        model=ModelConfig(num_layers=1, d_model=16, num_heads=2, mlp_dim=32),
        train=TrainConfig(steps=5, batch_size=8, train_length=4, log_every=5),
        eval=EvalConfig(lengths=(4, 6, 8), batch_size=8),
    )
    run = tmp_path / "sweep" / "count_copy_alphabet=8" / "t5_shared=True_scaled=False" / "seed0"
    train.train(cfg, run, progress=False)
    monkeypatch.setattr(sys, "argv", ["t5_count_copy.py", "--from-sweep", str(tmp_path / "sweep"),
                                      "--out", str(tmp_path / "out")])  # fmt: skip
    script.main()
    assert "stops after" in capsys.readouterr().out
    got = json.loads(
        (tmp_path / "out" / "t5_shared=True_scaled=False" / "t5_count_copy.json").read_text()
    )
    # A causal model reads 2n + 1 tokens: distances to 8 in training (a bucket each below 16),
    # to 16 at n = 8.
    assert got["trained_buckets"] == list(range(9))
    assert got["untrained_buckets"] == list(range(9, 17))
    own = {r["length"]: r["exact_match"] for r in runs.read_jsonl(run / runs.EVAL)}
    as_trained = {int(n): v[0] for n, v in got["exact_match"]["as trained"].items()}
    assert as_trained == pytest.approx(own)

    _, _, params_S, seeds = script.load_group([run])
    assert seeds == [0]
    table = np.asarray(params_S["pe"]["table_NH"][...])
    zeroed = np.asarray(
        script.with_rows(params_S, got["untrained_buckets"], None)["pe"]["table_NH"][...]
    )
    clamped = np.asarray(
        script.with_rows(params_S, got["untrained_buckets"], 8)["pe"]["table_NH"][...]
    )
    assert not np.any(zeroed[:, 9:17]) and np.array_equal(zeroed[:, :9], table[:, :9])
    assert np.array_equal(clamped[:, 9:17], np.repeat(table[:, 8:9], 8, axis=1))
    assert np.array_equal(zeroed[:, 17:], table[:, 17:])

    # Without an instruction every prompt position of count_copy gives the same output under a
    # relative bias; instruction tokens before the prompt make them differ.
    graphdef, _ = train.init_state(cfg, train.keys_from_seed(0))
    assert max(script.prompt_spread(cfg, graphdef, params_S, (4, 8)).values()) < 1e-5
    prefixed = dataclasses.replace(cfg, task=tasks.get("count_copy", alphabet=8, prefix=2))
    graphdef, state = train.init_state(prefixed, train.keys_from_seed(0))
    fresh_S = jax.tree.map(lambda x: x[None], state.params)
    assert min(script.prompt_spread(prefixed, graphdef, fresh_S, (4, 8)).values()) > 1e-3


def test_answer_positions_split_a_runs_own_token_accuracy_by_answer_position(
    tmp_path, monkeypatch, capsys
):
    """scripts/answer_positions.py re-scores the batch evaluation scored: its per-position
    accuracies, weighted by the tokens each position scores, give the run's own token accuracy
    at every length, and the last position of an END task is END."""
    spec = importlib.util.spec_from_file_location(
        "answer_positions", ROOT / "scripts" / "answer_positions.py"
    )
    script = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(script)
    cfg = RunConfig(
        task=tasks.get("copy", alphabet=8, end_token=True),
        encoding=encodings.get("rope"),
        model=ModelConfig(num_layers=1, d_model=16, num_heads=2, mlp_dim=32),
        train=TrainConfig(steps=20, batch_size=8, train_length=4, log_every=20),
        eval=EvalConfig(lengths=(4, 6), batch_size=8),
    )
    run = tmp_path / "run"
    train.train(cfg, run, progress=False)
    own = {r["length"]: r for r in runs.read_jsonl(run / runs.EVAL)}
    got = script.answer_accuracy(run)
    assert sorted(got) == [4, 6]
    for n, row in got.items():
        assert len(row["accuracy"]) == n + 1 and row["tokens"] == [8] * (n + 1)  # n symbols, END
        weighted = np.dot(row["accuracy"], row["tokens"]) / sum(row["tokens"])
        assert weighted == pytest.approx(own[n]["token_accuracy"], abs=1e-6), (n, row, own[n])
        assert row["token_accuracy"] == pytest.approx(own[n]["token_accuracy"], abs=1e-6)
        assert row["exact_match"] == pytest.approx(own[n]["exact_match"], abs=1e-6)
    monkeypatch.setattr(sys, "argv", ["answer_positions.py", str(run), "--out",
                                      str(tmp_path / "p.json")])  # fmt: skip
    script.main()
    assert "mean over 1 run(s)" in capsys.readouterr().out
    assert json.loads((tmp_path / "p.json").read_text())[str(run)]["4"]["tokens"] == [8] * 5
    # --overall: one row per length (any lengths, not only the run's), and the plot.
    argv = [str(run), "--lengths", "6", "9", "--overall", "--plot", str(tmp_path / "scan.png")]
    monkeypatch.setattr(sys, "argv", ["answer_positions.py", *argv])
    script.main()
    out = capsys.readouterr().out.splitlines()
    rows = [line.split() for line in out if line[:5].strip().isdigit()]
    assert [r[0] for r in rows] == ["6:", "9:"]
    assert float(rows[0][1]) == pytest.approx(own[6]["token_accuracy"], abs=1e-3)
    assert float(rows[0][2]) == pytest.approx(own[6]["exact_match"], abs=1e-3)
    assert (tmp_path / "scan.png").read_bytes()[:4] == b"\x89PNG"
    monkeypatch.setattr(sys, "argv", ["answer_positions.py", str(tmp_path)])
    with pytest.raises(SystemExit, match="is not a finished run directory"):
        script.main()
