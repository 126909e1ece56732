"""`lazyk bench`: the benchmark suites and their report.

Imports every earlier stage; optional peers (numexpr, numba, awkward, dask, matplotlib) inside functions.
"""
