"""Runtime: evaluate, evaluate(string), compile, bind, out= and results, for dense, ragged and missing data, on the CPU and the GPU.

Imports every earlier stage.
"""
