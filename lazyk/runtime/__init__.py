"""Runtime: evaluate, evaluate(string), compile, bind, out= and results, for dense, ragged and missing data, on the CPU and the GPU.

`compiled` is `lazyk.compile` (`CompiledExpr`): `call_inputs` converts and checks a call's
inputs against the parameter types, `fast_calls` runs the one-kernel path and its native guards.

Ragged and missing data run in one loop nest: `nest_steps` is the entry (and the forms run in
two steps, their results rebuilt by `nest_rebuild`), `nest_run` runs the count, check and
fill passes over `nest_plan`'s operands, `nest_structure` plans from the expression's
structure (cached), `nest_results` builds the result arrays, `nest_totals` runs reductions
over every axis.

Imports every earlier stage.
"""
