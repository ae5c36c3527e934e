"""The essay's properties and demonstrations, and the analysis of trained runs.

probe.py           calls an encoding's hooks on one sequence (what depends on position)
properties.py      the essay's five properties, measured
report.py          the property table of every encoding, as markdown, JSON and figures
demonstrations.py  the dog sentence, component plots, similarity, low precision
analysis.py        attention maps and rotary frequency usage of a trained run
"""
