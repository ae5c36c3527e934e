"""Typed, frozen run configuration: every default lives here, once.

A `RunConfig` is hashable (it can be static under jit), serialises to the `config.json` of a run
directory with the chosen task's and encoding's type recorded by name, and reads back from it.
"""

from __future__ import annotations

import dataclasses
import types
import typing
from typing import Annotated, Any, Literal, Union

import tyro

from pe_research import encodings, tasks
from pe_research import positions as samplers
from pe_research.encodings import Dims
from pe_research.positions import Contiguous, Sampler
from pe_research.tasks import Copy, Task


@dataclasses.dataclass(frozen=True)
class ModelConfig:
    """A small transformer: pre-LayerNorm and a GELU MLP unless `norm`, `norm_position` and
    `mlp` say otherwise."""

    num_layers: int = 2
    d_model: int = 64
    num_heads: int = 4
    mlp_dim: int = 256
    causal: bool = True
    """Causal decoder (True) or bidirectional encoder (False)."""
    compute_dtype: Literal["float32", "bfloat16"] = "float32"
    """Dtype of the matmuls (projections, q.k and p.v, output head). Parameters, optimizer
    state, LayerNorm, attention logits, softmax and output logits stay float32."""
    attention: Literal["auto", "einsum", "dot_product"] = "auto"
    """How attention is computed: einsum (chunked on CPU), jax.nn.dot_product_attention, or auto
    (dot_product on GPU, einsum elsewhere). Analysis that records attention always uses einsum."""
    normalization: Literal["softmax", "stick_breaking", "ssmax", "entmax15"] = "softmax"
    """How logits (q.k scaled, plus the encoding's bias) become attention weights: softmax;
    stick-breaking (Tan et al., 2024, arXiv 2410.17980; causal models only): key j of query i
    gets sigmoid(z_ij) times prod_{j<k<i} (1 - sigmoid(z_ik)), nearest keys first, earlier keys
    only, weights summing to at most 1 (the paper uses it with nope); ssmax (Scalable-Softmax,
    Nakanishi, 2025, arXiv 2501.19399): softmax of s_h log(n) z, n the keys the query attends
    to, s learned per layer and head; entmax15 (1.5-entmax, sparse; with the nape encoding it is
    ASEntmax, Vasylenko et al., 2025, arXiv 2506.16640). All but softmax take the einsum path."""

    norm: Literal["layernorm", "rmsnorm"] = "layernorm"
    """The block's normalisation layers and the last one before the output head: LayerNorm, or
    RMSNorm (no mean subtracted, a scale and no bias; T5's, Gemma's, Zhou et al. 2024's)."""
    norm_position: Literal["pre", "pre_post", "post"] = "pre"
    """pre: x + f(norm(x)) for each sublayer f (attention, MLP), and a last norm before the
    output head. pre_post: norm'(x + f(norm(x))), a PreNorm into each sublayer and a PostNorm
    after its residual add, and the last norm (Cho et al. 2024's `normalization_position:
    pre_post`, HanseulJo/position-coupling, CustomGPT2Block; Zhou et al. 2024, Appendix B.2:
    'both PreNorm and PostNorm layers'). post: norm(x + f(x)), Vaswani et al.'s original block
    (Ruoss et al. 2023's code); the stream leaves the last block normalised, so no last norm."""
    mlp: Literal["gelu", "geglu", "relu"] = "gelu"
    """gelu: W_out gelu(W_in x + b_in) + b_out; relu: the same with ReLU. geglu (Shazeer, 2020,
    arXiv 2002.05202): W_out (gelu(W_gate x) * (W_in x + b_in)) + b_out, one more d_model x
    mlp_dim matrix."""
    embed_std: float = 1.0
    """Starting std of the token embeddings (no later rescaling). 1: unit variance, the scale of
    Vaswani et al.'s sqrt(d_model) rescaling, beside unit-amplitude sinusoids. Ruoss et al.'s
    code: 0.02 * sqrt(d_model)."""
    qk_scale: Literal["logits", "init"] = "logits"
    """Where attention's 1/sqrt(head_dim) goes. logits: q.k / sqrt(head_dim), W_q drawn with std
    d_model^-0.5 (Vaswani et al.). init: q.k unscaled, W_q drawn with std (d_model
    head_dim)^-0.5 (T5's "Mesh TensorFlow initialization"; Kazemnejad et al. 2023's decoder):
    the same logits at the first step, but an update to W_q moves them sqrt(head_dim) times
    further, and an encoding's bias adds to unscaled logits. Encodings whose hooks compute their
    own q.k / sqrt(head_dim) (CoPE, DAPE, PoPE, PaTH, Transformer-XL) refuse 'init'."""
    mlp_bias: bool = True
    """Biases in the MLP's two projections (T5 has none)."""
    dropout: float = 0.0
    """Dropout rate in training (evaluation never drops). Where: `dropout_sites`."""
    dropout_sites: Literal["residual", "t5"] = "residual"
    """residual (Vaswani et al.; Ruoss et al.'s code): the input stream (after the embedding and
    the encoding's embed hook) and each sublayer's output before its residual add. t5 (T5's, and
    Kazemnejad et al.'s decoder): those, the attention weights, the MLP's hidden activations and
    the last norm's output."""
    tie_embeddings: bool = False
    """The output head reuses the token embeddings: logits = (x d_model^-0.5) E^T, T5's tied
    head with its rescaling (Mesh TensorFlow's; Kazemnejad et al. 2023's decoder, t5-base's
    tie_word_embeddings). False: a separate head W_head drawn with std d_model^-0.5."""

    @property
    def head_dim(self) -> int:
        return self.d_model // self.num_heads

    def dims(self) -> Dims:
        return Dims(
            d_model=self.d_model,
            num_heads=self.num_heads,
            head_dim=self.head_dim,
            causal=self.causal,
            logits_scaled=self.qk_scale == "logits",
        )

    def check(self) -> None:
        for name in ("num_layers", "d_model", "num_heads", "mlp_dim"):
            if getattr(self, name) < 1:
                raise ValueError(
                    f"model {name} must be >= 1, got {getattr(self, name)}: set "
                    f"--model.{name.replace('_', '-')} to a positive integer."
                )
        if not self.embed_std > 0:
            raise ValueError(
                f"model embed_std must be > 0, got {self.embed_std}: set --model.embed-std to the "
                "token embeddings' starting std (1.0: unit variance)."
            )
        if not 0 <= self.dropout < 1:
            raise ValueError(
                f"model dropout must be in [0, 1), got {self.dropout}: set --model.dropout to the "
                "probability of dropping a unit (0: no dropout; T5 and Vaswani et al.: 0.1)."
            )
        if self.dropout and self.dropout_sites == "t5" and self.attention == "dot_product":
            raise ValueError(
                "model attention 'dot_product' (jax.nn.dot_product_attention) cannot drop "
                "attention weights, which dropout_sites 't5' does: set --model.attention to einsum "
                "or auto."
            )
        if self.d_model % self.num_heads:
            raise ValueError(
                f"d_model={self.d_model} is not divisible by num_heads={self.num_heads}: "
                "choose sizes with d_model % num_heads == 0."
            )
        for name in (
            "compute_dtype", "attention", "normalization", "norm", "norm_position", "mlp",
            "qk_scale", "dropout_sites",
        ):  # fmt: skip
            choices = typing.get_args(typing.get_type_hints(ModelConfig)[name])
            if getattr(self, name) not in choices:
                raise ValueError(
                    f"model {name} {getattr(self, name)!r} is not supported: set "
                    f"--model.{name.replace('_', '-')} to one of {', '.join(choices)}."
                )
        if self.normalization == "stick_breaking" and not self.causal:
            raise ValueError(
                "model normalization 'stick_breaking' breaks the stick from the query back over "
                "earlier keys and is defined for causal models only: drop --model.causal False "
                "or use --model.normalization softmax."
            )
        if self.normalization != "softmax" and self.attention == "dot_product":
            raise ValueError(
                "model attention 'dot_product' (jax.nn.dot_product_attention) computes a softmax "
                f"only, and normalization is {self.normalization!r}: set --model.attention to "
                "einsum or auto."
            )


@dataclasses.dataclass(frozen=True)
class TrainConfig:
    steps: int = 500
    batch_size: int = 64
    """Sequences per step (per model), whatever their lengths: a batch counts sequences, not
    tokens, so recipes with and without length buckets see the same data per step."""
    train_length: int = 16
    """Sequences have 1..train_length data symbols, drawn uniformly per sequence."""
    learning_rate: float = 3e-3
    warmup_steps: int = 50
    lr_schedule: Literal["cosine", "linear", "constant"] = "cosine"
    """After the linear warm-up: cosine decay to 10% of the peak at `steps` (ours; Cho et al.'s
    code), linear decay to 0 (the polynomial schedule of power 1 in Hugging Face's Trainer, as
    Kazemnejad et al. train), or constant (Ruoss et al.'s Adam)."""
    weight_decay: float = 0.01
    decay_encoding: bool = True
    """Weight decay on the encoding's matrices too (T5's bias table, FIRE's MLP, ...). False
    exempts them, as Hugging Face's Trainer exempts every parameter whose name holds "bias"
    (T5's relative_attention_bias among them); other matrices are decayed either way, vectors
    never."""
    adam_b2: float = 0.999
    """Adam's second-moment decay (Cho et al. use 0.95)."""
    grad_clip: float = 1.0
    log_every: int = 50
    length_buckets: int = 1
    """Draw each batch in this many groups of lengths, stratified: 1..train_length split into
    equal ranges, batch_size / length_buckets sequences per range with lengths uniform in it, each
    group padded only to the widest length of its range. Lengths stay uniform over
    1..train_length while the step computes far less padding; one compiled program with one
    forward pass per group. 1: every sequence padded to the widest training length."""
    steps_per_dispatch: int = 0
    """Training steps run by one call of the compiled program (jax.lax.scan over the steps):
    small models on an accelerator are bound by dispatch without it. Must divide steps,
    log_every and the checkpoint interval. 0 (the default): 1 on CPU, where it gains nothing; on
    an accelerator the largest common divisor of those intervals (and fit_check_every) up to
    100, so the host reads metrics, checks fit and saves only between calls."""

    fit_threshold: float = 0.95
    """A run is fit (it learned its task) when its exact match on held-out sequences at the
    training length is at least this; results.csv, the tables and the plots keep unfit runs
    apart, since their extrapolation curves say nothing about the encoding."""
    stop_when_fit: bool = False
    """Train until fit: every fit_check_every steps, score exact match at the training length on
    the held-out sequences that evaluation scores there (one compiled program, on device) and
    stop once it reaches fit_threshold; `steps` is the cap. A packed seed found fit is frozen
    there (its parameters and optimizer state kept) while its pack-mates train on, so it ends as
    it would alone. Each seed's fit step goes to its fit.jsonl and to results.csv."""
    fit_check_every: int = 50
    """Steps between the fit checks of stop_when_fit (a multiple of steps_per_dispatch)."""
    stop_threshold: float | None = None
    """stop_when_fit stops a run at its first check with exact match at least this (None:
    fit_threshold). Above fit_threshold it trains a run on past the fit until it has that margin
    over the threshold, so that a fitted run does not sit at fit_threshold +- one sequence; the
    fit verdict and fit step are still read against fit_threshold."""
    select_best: bool = False
    """Train to `steps` and keep the parameters of the best validation check: every
    `select_every` steps (and at the last), exact match on the held-out sequences of
    `select_lengths`, averaged over them; evaluation then scores the best (the first of ties).
    Kazemnejad et al. (2023) report the checkpoint best on their in-distribution validation
    lengths. Each check goes to the run's select.jsonl, the chosen step to its eval rows."""
    select_every: int = 500
    """Steps between the validation checks of select_best (a multiple of steps_per_dispatch)."""
    select_lengths: tuple[int, ...] = ()
    """The validation lengths of select_best (each an evaluation length at or below the
    training length); empty: every evaluation length at or below the training length."""

    def check(self) -> None:
        for name in ("steps", "batch_size", "train_length", "log_every", "length_buckets"):
            if getattr(self, name) < 1:
                raise ValueError(
                    f"train {name} must be >= 1, got {getattr(self, name)}: set "
                    f"--train.{name.replace('_', '-')} to a positive integer."
                )
        if not self.learning_rate > 0:
            raise ValueError(f"learning_rate must be > 0, got {self.learning_rate}.")
        if self.warmup_steps < 0:
            raise ValueError(f"warmup_steps must be >= 0, got {self.warmup_steps}.")
        schedules = typing.get_args(typing.get_type_hints(TrainConfig)["lr_schedule"])
        if self.lr_schedule not in schedules:
            raise ValueError(
                f"train lr_schedule {self.lr_schedule!r} is not supported: set "
                f"--train.lr-schedule to one of {', '.join(schedules)}."
            )
        if not 0.0 <= self.adam_b2 < 1.0:
            raise ValueError(
                f"train adam_b2={self.adam_b2} is outside [0, 1): set --train.adam-b2 to a decay "
                "such as 0.999 (the default) or 0.95."
            )
        G = self.length_buckets
        if self.train_length % G or self.batch_size % G:
            raise ValueError(
                f"length_buckets={G} must divide both train_length={self.train_length} and "
                f"batch_size={self.batch_size} (each bucket gets an equal range of lengths and an "
                "equal share of the batch): choose --train.length-buckets among the common "
                f"divisors {_common_divisors(self.train_length, self.batch_size)}."
            )
        T = self.steps_per_dispatch
        if T < 0 or (T and (self.steps % T or self.log_every % T)):
            raise ValueError(
                f"steps_per_dispatch={T} must be >= 1 and divide steps={self.steps} and "
                f"log_every={self.log_every} (metrics are read at the end of a dispatch), or be 0 "
                "(chosen per backend): choose --train.steps-per-dispatch among their common "
                f"divisors {_common_divisors(self.steps, self.log_every)}, or 0."
            )

        if not 0 < self.fit_threshold <= 1:
            raise ValueError(
                f"fit_threshold={self.fit_threshold} is outside (0, 1]: it is an exact-match "
                "fraction; set --train.fit-threshold to a number in (0, 1], for example 0.95."
            )
        if self.stop_threshold is not None and not (self.fit_threshold <= self.stop_threshold <= 1):
            raise ValueError(
                f"stop_threshold={self.stop_threshold} is outside [fit_threshold, 1] = "
                f"[{self.fit_threshold:g}, 1]: a run stops once it is fit or later; set "
                "--train.stop-threshold in that range, or leave it unset to stop at the fit."
            )
        if self.select_best and self.stop_when_fit:
            raise ValueError(
                "train.select_best trains to the step cap and keeps the best checkpoint, "
                "train.stop_when_fit stops at the first fit: choose one (--train.no-stop-when-fit "
                "or --train.no-select-best)."
            )
        if self.select_best and (self.select_every < 1 or self.select_every % max(T, 1)):
            raise ValueError(
                f"select_every={self.select_every} must be >= 1 and a multiple of "
                f"steps_per_dispatch={T}: set --train.select-every to a positive multiple of it."
            )
        if self.stop_when_fit and (self.fit_check_every < 1 or self.fit_check_every % max(T, 1)):
            raise ValueError(
                f"fit_check_every={self.fit_check_every} must be >= 1 and a multiple of "
                f"steps_per_dispatch={T} (fit is checked between dispatches): set "
                "--train.fit-check-every to a positive multiple of it."
            )

    def length_ranges(self) -> list[tuple[int, int]]:
        """(shortest, longest) number of symbols of each length bucket, shortest first."""
        size = self.train_length // self.length_buckets
        return [(g * size + 1, (g + 1) * size) for g in range(self.length_buckets)]


def _common_divisors(a: int, b: int) -> list[int]:
    return [d for d in range(1, min(a, b) + 1) if a % d == 0 and b % d == 0]


@dataclasses.dataclass(frozen=True)
class EvalConfig:
    lengths: tuple[int, ...] = ()
    """Evaluation lengths (data symbols); empty means 1x, 2x, ..., 8x the training length."""
    batch_size: int = 128
    """Sequences per evaluation length."""
    seed: int = 20240101
    """Seed of the evaluation data, independent of the training seed, so that every run is
    scored on the same sequences."""
    positions: Literal["contiguous", "train"] = "contiguous"
    """Positions at evaluation: contiguous 0..n-1, or the training sampler's (for example
    randomized positions, as Ruoss et al. evaluate them)."""
    data: str | None = None
    """A built evaluation set, tfds:BUILDER/CONFIG (for example tfds:pe_copy/L16; see
    `pe-research data list`), scored instead of sequences sampled on the fly. Every eval.jsonl
    row records the data it was scored on."""
    data_dir: str | None = None
    """Where eval.data is built; default $PE_RESEARCH_DATA_DIR, else ~/tensorflow_datasets."""

    def check(self) -> None:
        if any(n < 1 for n in self.lengths):
            raise ValueError(
                f"evaluation lengths must be >= 1, got {self.lengths}: list positive numbers "
                "of symbols in --eval.lengths (or none for 1x-8x the training length)."
            )
        if self.batch_size < 1:
            raise ValueError(
                f"eval batch_size must be >= 1, got {self.batch_size}: set --eval.batch-size "
                "to a positive integer."
            )
        if self.data is not None and not self.data.startswith("tfds:"):
            raise ValueError(
                f"eval data {self.data!r} is not a built dataset name: write tfds:BUILDER/CONFIG, "
                "for example tfds:pe_copy/L16 (`pe-research data list` shows them)."
            )


def _union(registry: dict[str, type]) -> Any:
    """A Union type whose members tyro turns into named subcommands."""
    members = tuple(Annotated[cls, tyro.conf.subcommand(name)] for name, cls in registry.items())
    return Union[members]  # noqa: UP007 (built at runtime from the registry)


TaskChoice = _union(tasks.classes())
EncodingChoice = _union(encodings.classes())
SamplerChoice = _union(samplers.classes())


@dataclasses.dataclass(frozen=True)
class RunConfig:
    """Everything that determines one training run and its evaluation."""

    task: TaskChoice = Copy()
    encoding: EncodingChoice = encodings.RoPE()
    model: ModelConfig = ModelConfig()
    train: TrainConfig = TrainConfig()
    eval: EvalConfig = EvalConfig()
    eval_encoding: tyro.conf.Suppress[EncodingChoice | None] = None
    """Evaluate the trained parameters under this encoding instead (context extension without
    retraining, e.g. RoPE with a scaling); set from experiment files, not the command line."""
    positions: SamplerChoice = Contiguous()
    """How training positions are sampled (explicit inputs to the model); see eval.positions."""
    seed: int = 0
    """Seeds parameter init, training data and training positions (eval data has its own)."""

    @property
    def eval_lengths(self) -> tuple[int, ...]:
        n = self.train.train_length
        return self.eval.lengths or tuple(n * i for i in range(1, 9))

    @property
    def eval_sampler(self) -> Sampler:
        """Contiguous positions unless eval.positions == "train"; positions that come from the
        task (grid coordinates, coupled digits) are always kept (`evaluation_sampler`)."""
        if self.eval.positions == "train":
            return self.positions
        return samplers.evaluation_sampler(self.positions)

    @property
    def fit_length(self) -> int | None:
        """The length the fit verdict is read at: the training length if evaluated, else the
        largest evaluated length below it (None if there is none)."""
        below = [n for n in self.eval_lengths if n <= self.train.train_length]
        return max(below) if below else None

    @property
    def select_lengths(self) -> tuple[int, ...]:
        """The validation lengths of train.select_best: train.select_lengths, or every
        evaluation length at or below the training length."""
        below = tuple(n for n in self.eval_lengths if n <= self.train.train_length)
        return self.train.select_lengths or below

    def max_position(self) -> int:
        """The largest position any batch of this run can carry (training or evaluation)."""

        def width(n: int) -> int:
            return self.task.seq_len(n, self.model.causal)

        return max(
            self.positions.max_position(width(self.train.train_length)),
            self.eval_sampler.max_position(width(max(self.eval_lengths))),
        )

    def check(self) -> None:
        """Raise ValueError naming the first constraint the configuration breaks."""
        self.model.check()
        self.train.check()
        self.eval.check()
        self.task.check()
        self.task.check_lengths(self.train.train_length, self.eval_lengths)
        if self.model.dropout and not 0 <= self.seed < 2**32:
            raise ValueError(
                f"seed {self.seed} with model dropout: the dropout stream takes seeds in [0, "
                "2^32); choose --seed in that range."
            )
        if self.train.length_buckets > 1 and not self.task.variable_length:
            raise ValueError(
                f"task {self.task.name!r} draws every sequence with exactly train_length symbols, "
                "so there are no lengths to bucket: drop --train.length-buckets."
            )

        if self.train.stop_when_fit and not self.task.has_exact_match:
            raise ValueError(
                f"train.stop_when_fit needs exact match, and task {self.task.name!r} has no single "
                "right answer per sequence (it is scored in bits per byte): drop "
                "--train.stop-when-fit and set --train.steps."
            )
        if self.train.select_best:
            chosen, evaluated = self.select_lengths, set(self.eval_lengths)
            if not chosen:
                raise ValueError(
                    f"train.select_best needs validation lengths at or below the training length "
                    f"({self.train.train_length}), and eval.lengths {self.eval.lengths} has none: "
                    "add them to --eval.lengths, or set --train.select-lengths."
                )
            if bad := [n for n in chosen if n > self.train.train_length or n not in evaluated]:
                raise ValueError(
                    f"train.select_lengths {list(bad)} must be evaluation lengths (--eval.lengths) "
                    f"at or below the training length ({self.train.train_length}): selection is on "
                    "held-out sequences of the lengths trained on."
                )
        if self.train.stop_when_fit and self.fit_length is None:
            raise ValueError(
                f"train.stop_when_fit checks exact match at the training length "
                f"({self.train.train_length}) but eval.lengths {self.eval.lengths} has no length "
                "at or below it: add the training length to --eval.lengths."
            )

        # The encodings' own checks come before anything reads them (position_axes, hooks): a
        # per-layer mixture's members, for one, exist only once its pattern is known to be valid.
        max_position = self.max_position()
        self.encoding.check(self.model.dims(), max_position)
        if self.eval_encoding is not None:
            self.eval_encoding.check(self.model.dims(), max_position)

        def form(axes: int | None) -> str:
            return "1-D positions pos_BL" if axes is None else f"{axes}-D positions pos_BLA"

        for sampler in (self.positions, self.eval_sampler):
            if self.encoding.position_axes != sampler.position_axes:
                raise ValueError(
                    f"encoding {self.encoding.label()!r} needs "
                    f"{form(self.encoding.position_axes)} but the {sampler.name!r} position "
                    f"sampler gives {form(sampler.position_axes)}: pick a matching sampler "
                    "('grid' for rope_nd with axes=2 on a grid task, 'mrope' for mrope, a 1-D "
                    "sampler otherwise)."
                )
            if sampler.task_axes not in (None, self.task.position_axes):
                raise ValueError(
                    f"the {sampler.name!r} position sampler reads {sampler.task_axes} "
                    f"coordinate(s) per token from the task, but task {self.task.name!r} gives "
                    f"{self.task.position_axes or 'none'}: use it on a task that provides them "
                    "('coupled' on 'addition', 'grid' on 'grid'), or a sampler such as "
                    "'contiguous'."
                )
            if self.encoding.needs_increasing_positions and not (
                sampler.increasing or sampler.position_axes is not None
            ):
                raise ValueError(
                    f"encoding {self.encoding.label()!r} reads a key at a larger position than "
                    f"its query as a future key, and the {sampler.name!r} sampler gives "
                    "positions that repeat or decrease over the tokens: pair the sampler with "
                    "an encoding that uses |distance| or absolute positions (rope, alibi, fire, "
                    "learned), or use an increasing sampler."
                )

    # -- config.json -----------------------------------------------------------------------------

    def to_dict(self) -> dict[str, Any]:
        """Every field, defaults included: the config.json form."""
        return {
            "task": {"name": self.task.name, **dataclasses.asdict(self.task)},
            "encoding": encodings.to_dict(self.encoding),
            "eval_encoding": (
                None if self.eval_encoding is None else encodings.to_dict(self.eval_encoding)
            ),
            "positions": samplers.to_dict(self.positions),
            "model": dataclasses.asdict(self.model),
            "train": dataclasses.asdict(self.train),
            "eval": {**dataclasses.asdict(self.eval), "lengths": list(self.eval.lengths)},
            "seed": self.seed,
        }

    def identity(self) -> dict[str, Any]:
        """`to_dict` less every field at its default (the task's, encoding's and sampler's names
        stay): what tells this run from another. A new option with a default changes no run's
        identity, so the run ids that sweeps and results tables key on (runs.run_id) survive it."""
        full, default = self.to_dict(), _default_dict(self)
        out: dict[str, Any] = {"seed": self.seed}
        for part in ("task", "encoding", "eval_encoding", "positions", "model", "train", "eval"):
            if full[part] is None:
                continue
            base = default.get(part) or {}
            out[part] = {
                k: v for k, v in full[part].items() if k == "name" or base.get(k, _MISSING) != v
            }
        return out

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> RunConfig:
        """Inverse of to_dict; ValueError names the part of the file that does not fit (a
        missing or unknown key, a value of the wrong type)."""
        hand_edited = (
            "; fix config.json, or regenerate it with `pe-research train` rather than editing it "
            "by hand."
        )
        unknown = sorted(set(d) - {f.name for f in dataclasses.fields(cls)} - {"versions"})
        if unknown:
            raise ValueError(f"config has unknown key(s) {unknown}{hand_edited}")
        try:
            ev = _typed(EvalConfig, d["eval"], "eval")
            ev["lengths"] = tuple(ev.get("lengths", ()))
            eval_encoding = d.get("eval_encoding")
            return cls(
                task=_entry(tasks, d["task"], "task"),
                encoding=_entry(encodings, d["encoding"], "encoding"),
                eval_encoding=(
                    None if eval_encoding is None else _entry(encodings, eval_encoding, "encoding")
                ),
                positions=_entry(samplers, d.get("positions", {"name": "contiguous"}), "positions"),
                model=ModelConfig(**_typed(ModelConfig, d["model"], "model")),
                train=TrainConfig(**_typed(TrainConfig, d["train"], "train")),
                eval=EvalConfig(**ev),
                seed=_value(int, d["seed"], "seed"),
            )
        except _WrongType as e:
            raise ValueError(f"config {e}{hand_edited}") from None
        except (KeyError, TypeError) as e:
            raise ValueError(
                f"config does not match RunConfig ({type(e).__name__}: {e}); "
                "regenerate it with `pe-research train` rather than editing it by hand."
            ) from e


_MISSING = object()


def _default_dict(cfg: RunConfig) -> dict[str, Any]:
    """`to_dict` of the defaults of `cfg`'s parts: the task, encoding and sampler classes it
    uses, each built with no arguments (a class without defaults for every field gives {})."""

    def default(obj: Any, to_dict: Any) -> dict[str, Any]:
        try:
            return to_dict(type(obj)())
        except TypeError:
            return {}

    out = {
        "task": default(cfg.task, lambda t: {"name": t.name, **dataclasses.asdict(t)}),
        "encoding": default(cfg.encoding, encodings.to_dict),
        "positions": default(cfg.positions, samplers.to_dict),
        "model": dataclasses.asdict(type(cfg.model)()),
        "train": dataclasses.asdict(type(cfg.train)()),
        "eval": {**dataclasses.asdict(type(cfg.eval)()), "lengths": []},
    }
    if cfg.eval_encoding is not None:
        out["eval_encoding"] = default(cfg.eval_encoding, encodings.to_dict)
    return out


class _WrongType(ValueError):
    pass


def _entry(registry: Any, d: Any, where: str) -> Any:
    """A registry entry {"name": ..., **options} of config.json, its options type-checked."""
    if not isinstance(d, dict) or "name" not in d:
        raise _WrongType(f"{where} must be an object with a 'name', got {d!r}")
    options = dict(d)
    name = options.pop("name")
    cls = registry.classes().get(name)
    if cls is None:
        return registry.from_dict(d)  # its error lists the known names
    return registry.get(name, **_typed(cls, options, f"{where} {name!r}"))


def _typed(cls: type, d: Any, where: str) -> dict[str, Any]:
    """The entries of `d` checked against the fields of the dataclass `cls`."""
    if not isinstance(d, dict):
        raise _WrongType(f"{where} must be an object, got {d!r}")
    try:
        hints = typing.get_type_hints(cls)
    except NameError:  # an annotation that cannot be resolved here: leave it to the class
        hints = {}
    fields = sorted(f.name for f in dataclasses.fields(cls))
    unknown = sorted(set(d) - set(fields))
    if unknown:
        raise _WrongType(f"{where} has unknown key(s) {unknown}; it takes {fields}")
    return {k: _value(hints.get(k, Any), v, f"{where}.{k}") for k, v in d.items()}


def _value(hint: Any, v: Any, where: str) -> Any:
    """`v` if it has the type `hint` (an int where a float is expected becomes a float)."""
    origin, args = typing.get_origin(hint), typing.get_args(hint)
    if origin in (Union, types.UnionType):
        if v is None and type(None) in args:
            return None
        for member in args:
            try:
                return _value(member, v, where)
            except _WrongType:
                continue
        names = [getattr(a, "__name__", str(a)) for a in args if a is not type(None)]
        names += ["null"] if type(None) in args else []
        raise _WrongType(f"{where} must be {' or '.join(names)}, got {v!r}")
    if origin is Literal:
        if v not in args:
            raise _WrongType(f"{where} must be one of {list(args)}, got {v!r}")
        return v
    if origin is tuple and len(args) == 2 and args[1] is Ellipsis:
        if not isinstance(v, list | tuple):
            raise _WrongType(f"{where} must be a list, got {v!r}")
        return tuple(_value(args[0], x, f"{where}[{i}]") for i, x in enumerate(v))
    checks = {
        bool: ("true or false", lambda: isinstance(v, bool)),
        int: ("an integer", lambda: isinstance(v, int) and not isinstance(v, bool)),
        float: ("a number", lambda: isinstance(v, int | float) and not isinstance(v, bool)),
        str: ("a string", lambda: isinstance(v, str)),
    }
    if hint in checks:
        kind, ok = checks[hint]
        if not ok():
            raise _WrongType(f"{where} must be {kind}, got {v!r}")
        return float(v) if hint is float else v
    return v  # other types (a nested dataclass, a dict) are checked by the class itself


def encoding_label(cfg: RunConfig) -> str:
    """The encoding's label, with the evaluation-time encoding when one is set."""
    label = cfg.encoding.label()
    if cfg.eval_encoding is not None:
        label += f" -> eval {cfg.eval_encoding.label()}"
    return label


def series_label(cfg: RunConfig) -> str:
    """What tables and legends call a run: its encoding label, plus the position sampler when
    it is not the contiguous default (randomized positions are a different method),
    ", eval SAMPLER" when evaluation samples positions that way too (eval.positions train), and
    " [NORMALIZATION]" when attention is not normalized by softmax (ASEntmax is NAPE under
    entmax15, not NAPE)."""
    label = encoding_label(cfg)
    if cfg.model.normalization != "softmax":
        label += f" [{cfg.model.normalization}]"
    if cfg.positions != Contiguous():
        options = ", ".join(f"{k}={v}" for k, v in dataclasses.asdict(cfg.positions).items())
        label += f" + {cfg.positions.name}" + (f"({options})" if options else "")
        if cfg.eval.positions == "train" and cfg.positions.position_axes is None:
            label += f", eval {cfg.positions.name}"
    return label


def task_label(task: Task) -> str:
    """Task name plus its non-default options, for tables and panels."""
    changed = [
        f"{f.name}={getattr(task, f.name)}"
        for f in dataclasses.fields(task)
        if getattr(task, f.name) != f.default
    ]
    return f"{task.name}({', '.join(changed)})" if changed else task.name


__all__ = [
    "EvalConfig",
    "ModelConfig",
    "RunConfig",
    "TrainConfig",
    "task_label",
]
