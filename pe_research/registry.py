"""Name -> frozen dataclass registries (encodings, tasks, position samplers) with clear errors."""

from __future__ import annotations

import dataclasses
from typing import Any, Generic, TypeVar

T = TypeVar("T")


class Registry(Generic[T]):
    """Classes by their `name` class attribute; builds instances from names and options."""

    def __init__(
        self,
        kind: str,
        option_word: str,
        classes: tuple[type[T], ...],
        hints: dict[str, str] | None = None,
    ):
        self.kind = kind  # "encoding", "task", "position sampler"
        self.option_word = option_word  # what the dataclass fields are called in messages
        self._classes = {cls.name: cls for cls in classes}
        # Option -> what to choose instead, for an option that some classes take and others do
        # not (an end token, a random offset): the error then says where the option lives.
        self._hints = dict(hints or {})

    def names(self) -> list[str]:
        return list(self._classes)

    def classes(self) -> dict[str, type[T]]:
        return dict(self._classes)

    def get(self, name: str, **options: Any) -> T:
        """The `name` instance with these options; ValueError lists the names or the options."""
        if name not in self._classes:
            raise ValueError(
                f"Unknown {self.kind} {name!r}. Known {self.kind}s: {', '.join(self.names())}."
            )
        cls = self._classes[name]
        known = sorted(f.name for f in dataclasses.fields(cls))
        unknown = sorted(set(options) - set(known))
        if unknown:
            advice = "".join(f" {self._hints[o]}" for o in unknown if o in self._hints)
            raise ValueError(
                f"{self.kind.capitalize()} {name!r} has no {self.option_word}(s) {unknown}; "
                f"it takes: {known or 'none'}.{advice}"
            )
        return cls(**options)

    def from_dict(self, d: dict[str, Any]) -> T:
        """Inverse of the {"name": ..., **options} form stored in config.json."""
        d = dict(d)
        if "name" not in d:
            raise ValueError(f"A {self.kind} entry needs a 'name' key, got {d}.")
        return self.get(d.pop("name"), **d)
