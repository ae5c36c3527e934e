"""Results from Python, under a short name: `from pe_research import results`, then
`results.load("runs/default")` -> a pandas DataFrame, one row per run x evaluation length, with
the fit verdict and the config flattened into dotted columns. The code lives in
`pe_research.runs.frame`; pandas is the optional extra `pe-research[analysis]`."""

from pe_research.runs.frame import FRAME_COLUMNS
from pe_research.runs.frame import load_frame as load

__all__ = ["FRAME_COLUMNS", "load"]
