"""`lazyk bench`: the benchmark suites and their report.

`suite.py` runs the E1-E10 cases against the peers (the command line), `measure.py` holds the
timing and what a run measures besides the cases (bandwidth, one-off costs, the machine),
`overhead.py` the call-overhead rows, `report.py` the Markdown and the chart, `dask_suite.py`
and `adl.py` the `--dask` and `--adl` runs.

Imports every earlier stage; optional peers (numexpr, numba, awkward, dask, matplotlib) inside functions.
"""
