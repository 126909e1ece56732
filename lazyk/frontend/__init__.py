"""Front end: the op table, hash-consed graph nodes, NumPy typing rules, lazy expressions, numexpr strings and the KernelSpec handed to the passes.

Lazy expressions, in import order: `missing` (which rows and values may be missing),
`expression` (the `Expr` class), `operands` (input leaves), `structure` (building by
structure), `strings`, `ufuncs`, `indexing`, `reductions` (the builders) and `expr` (every
builder by name: what the operators and numexpr strings call).

Imports the errors, types and arrays stages.
"""
