"""Training from Python, under its short name: `from pe_research import train`, then
`train.train(cfg, run_dir)`. The code lives in `pe_research.training`; this module re-exports
its public API."""

from pe_research.training import *  # noqa: F403
from pe_research.training import __all__  # noqa: F401
