"""Arrays: memory blocks, arrmeta, views, `lazyk.Array` and its constructors, and interchange with NumPy, Arrow and Awkward.

Imports the errors and types stages; what it needs from later stages (building lazy expressions) comes through `lazyk.hooks`.
"""
