"""Front end: the op table, hash-consed graph nodes, NumPy typing rules, lazy expressions, numexpr strings and the KernelSpec handed to the passes.

Imports the errors, types and arrays stages.
"""
