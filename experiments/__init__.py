"""The project's experiments, one study per module (installed as `pe_research.experiments`):
`pe-research sweep NAME` runs one; docs/experiments.md lists them."""
