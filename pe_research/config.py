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
    """A small pre-LayerNorm transformer."""

    num_layers: int = 2
    d_model: int = 64
    num_heads: int = 4
    mlp_dim: int = 256
    causal: bool = True
    """Causal decoder (True) or bidirectional encoder (False)."""

    @property
    def head_dim(self) -> int:
        return self.d_model // self.num_heads

    def dims(self) -> Dims:
        return Dims(
            d_model=self.d_model,
            num_heads=self.num_heads,
            head_dim=self.head_dim,
            causal=self.causal,
        )

    def check(self) -> None:
        for name in ("num_layers", "d_model", "num_heads", "mlp_dim"):
            if getattr(self, name) < 1:
                raise ValueError(
                    f"model {name} must be >= 1, got {getattr(self, name)}: set "
                    f"--model.{name.replace('_', '-')} to a positive integer."
                )
        if self.d_model % self.num_heads:
            raise ValueError(
                f"d_model={self.d_model} is not divisible by num_heads={self.num_heads}: "
                "choose sizes with d_model % num_heads == 0."
            )


@dataclasses.dataclass(frozen=True)
class TrainConfig:
    steps: int = 500
    batch_size: int = 64
    train_length: int = 16
    """Sequences have 1..train_length data symbols, drawn uniformly per sequence."""
    learning_rate: float = 3e-3
    warmup_steps: int = 50
    weight_decay: float = 0.01
    grad_clip: float = 1.0
    log_every: int = 50

    def check(self) -> None:
        for name in ("steps", "batch_size", "train_length", "log_every"):
            if getattr(self, name) < 1:
                raise ValueError(
                    f"train {name} must be >= 1, got {getattr(self, name)}: set "
                    f"--train.{name.replace('_', '-')} to a positive integer."
                )
        if not self.learning_rate > 0:
            raise ValueError(f"learning_rate must be > 0, got {self.learning_rate}.")
        if self.warmup_steps < 0:
            raise ValueError(f"warmup_steps must be >= 0, got {self.warmup_steps}.")


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
        """Contiguous positions unless eval.positions == "train"; n-D (grid) positions are
        coordinates of the task, so they are always kept."""
        keep = self.eval.positions == "train" or self.positions.position_axes is not None
        return self.positions if keep else Contiguous()

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

        def form(axes: int | None) -> str:
            return "1-D positions pos_BL" if axes is None else f"{axes}-D positions pos_BLA"

        for sampler in (self.positions, self.eval_sampler):
            if self.encoding.position_axes != sampler.position_axes:
                raise ValueError(
                    f"encoding {self.encoding.label()!r} needs "
                    f"{form(self.encoding.position_axes)} but the {sampler.name!r} position "
                    f"sampler gives {form(sampler.position_axes)}: pick a matching sampler "
                    "('grid' for rope_nd with axes=2 on a grid task, a 1-D sampler otherwise)."
                )
            if sampler.position_axes not in (None, self.task.position_axes):
                raise ValueError(
                    f"task {self.task.name!r} has no {sampler.position_axes}-D coordinates for "
                    f"the {sampler.name!r} sampler; use a grid task."
                )
        self.encoding.check(self.model.dims(), self.max_position())
        if self.eval_encoding is not None:
            self.eval_encoding.check(self.model.dims(), self.max_position())

    # -- config.json -----------------------------------------------------------------------------

    def to_dict(self) -> dict[str, Any]:
        evaluation = {**dataclasses.asdict(self.eval), "lengths": list(self.eval.lengths)}
        for k in ("data", "data_dir"):  # left out when unset: older runs keep their directories
            if evaluation[k] is None:
                del evaluation[k]
        return {
            "task": {"name": self.task.name, **dataclasses.asdict(self.task)},
            "encoding": encodings.to_dict(self.encoding),
            "eval_encoding": (
                None if self.eval_encoding is None else encodings.to_dict(self.eval_encoding)
            ),
            "positions": samplers.to_dict(self.positions),
            "model": dataclasses.asdict(self.model),
            "train": dataclasses.asdict(self.train),
            "eval": evaluation,
            "seed": self.seed,
        }

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
    it is not the contiguous default (randomized positions are a different method)."""
    label = encoding_label(cfg)
    if cfg.positions != Contiguous():
        options = ", ".join(f"{k}={v}" for k, v in dataclasses.asdict(cfg.positions).items())
        label += f" + {cfg.positions.name}" + (f"({options})" if options else "")
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
