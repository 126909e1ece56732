"""Arrays: memory blocks, arrmeta, views, `lazyk.Array` and its constructors, and interchange with NumPy, Arrow and Awkward.

In import order:
- `memory` owned blocks; `indexpath` where an item sits (errors); `arrmeta` the records that
  say where each element lives; `infer` type inference and packing of Python data;
- `views` strided views and the copying index path; `assign` assignment with broadcasting;
- `operators`, `conversions`, `display`, `foreign`: `Array`'s operators (lazy nodes), its
  NumPy / DLPack / scalar conversions, its repr and HTML, and the other libraries' arrays
  it reads; `array` the `Array` class and `lazyk.array`; `filled` `full`, `zeros`, `empty`;
- `trees` column trees' items; `buffers` arrays over given buffers (`from_offsets`, strings,
  records); `columns` an array as a column tree and back; `restructure` the row operations
  over trees; `formats/` Arrow and Awkward.

Imports the errors and types stages; what it needs from later stages (building lazy expressions) comes through `lazyk.hooks`.
"""
