"""Real text: next-byte prediction on windows of a local corpus (`byte_lm`)."""

from __future__ import annotations

import dataclasses
from typing import Literal

import jax
import jax.numpy as jnp
import numpy as np

from pe_research.data import corpus as corpora
from pe_research.tasks.base import Batch, Task


@dataclasses.dataclass(frozen=True)
class ByteLM(Task):
    """Next-byte prediction on a local text corpus: a window of n bytes, each predicting the next.

    `corpus` is a plain-text file (read as bytes, never decoded, so any encoding works), a
    dataset built by `pe-research data build text` (`tfds:pe_text/NAME`, read from
    $PE_RESEARCH_DATA_DIR), or `builtin:pydoc_topics` (the help topics that ship with Python,
    466 KB, a corpus that exists everywhere). The last `validation_fraction` of the bytes is held
    out (`pe_research.data.corpus.split_corpus`); training windows are cut from the rest and
    evaluation windows from the held-out part (`held_out`). Every window has exactly `length`
    bytes (`min_length` is ignored: a language model is trained on full contexts); the split
    is held on device and cut inside the jitted step. Decoder only.
    """

    name = "byte_lm"
    alphabet: int = 256
    corpus: str = "builtin:pydoc_topics"
    validation_fraction: float = 0.1
    split: Literal["train", "validation"] = "train"
    """The split windows are cut from; evaluation always uses the validation split."""

    def check(self) -> None:
        if self.alphabet != 256:
            raise ValueError(f"byte_lm reads bytes: alphabet must be 256, got {self.alphabet}.")
        if not 0.0 < self.validation_fraction < 1.0:
            raise ValueError(
                f"byte_lm validation_fraction must be in (0, 1), got {self.validation_fraction}."
            )
        if self.split not in ("train", "validation"):
            raise ValueError(f"byte_lm split must be train or validation, got {self.split!r}.")

    def held_out(self) -> ByteLM:
        return dataclasses.replace(self, split="validation")

    variable_length = False
    has_exact_match = False
    bytes_per_token = 1

    def describe_eval_data(self, eval_seed: int) -> str:
        return corpora.describe(self.corpus, self.validation_fraction)

    def seq_len(self, length: int, causal: bool) -> int:
        return length

    def split_bytes(self) -> np.ndarray:
        """This split of the corpus, uint8 (read once per process and cached)."""
        return corpora.corpus_split(self.corpus, self.split, self.validation_fraction)

    def sample(
        self,
        key: jax.Array,
        batch_size: int,
        length: int | jax.Array,
        *,
        min_length: int | jax.Array = 1,
        pad_to: int | None = None,
        causal: bool = True,
    ) -> Batch:
        if not causal:
            raise ValueError(
                "byte_lm is next-byte prediction, a decoder task: drop --model.no-causal."
            )
        return super().sample(
            key, batch_size, length, min_length=length, pad_to=pad_to, causal=causal
        )

    def _build(self, key: jax.Array, n_B: jax.Array, width: int, causal: bool) -> Batch:
        data = self.split_bytes()
        if data.size <= width:
            raise ValueError(
                f"the {self.split} split of corpus {self.corpus!r} has {data.size} bytes, too "
                f"few for windows of {width} bytes plus the next: use a longer corpus, a larger "
                "validation_fraction, or shorter lengths."
            )
        data_T = jnp.asarray(data)
        n_B1 = n_B.astype(jnp.int32)[:, None]
        # A window of n inputs reads n + 1 bytes: start + n <= size - 1.
        start_B1 = jax.random.randint(key, n_B1.shape, 0, data.size - n_B1, dtype=jnp.int32)
        i_1L = jnp.arange(width, dtype=jnp.int32)[None, :]
        valid_BL = jnp.broadcast_to(i_1L < n_B1, (n_B.shape[0], width))
        idx_BL = jnp.where(valid_BL, start_B1 + i_1L, 0)
        inputs_BL = jnp.where(valid_BL, data_T[idx_BL].astype(jnp.int32), self.pad)
        targets_BL = jnp.where(valid_BL, data_T[idx_BL + 1].astype(jnp.int32), self.pad)
        return Batch(inputs=inputs_BL, targets=targets_BL, loss_mask=valid_BL, valid=valid_BL)
