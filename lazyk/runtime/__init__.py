"""Runtime: evaluate, evaluate(string), compile, bind, out= and results, for dense, ragged and missing data, on the CPU and the GPU.

`compiled` is `lazyk.compile` (`CompiledExpr`): `call_inputs` converts and checks a call's
inputs against the parameter types, `fast_calls` runs the one-kernel path and its native guards.

Imports every earlier stage.
"""
