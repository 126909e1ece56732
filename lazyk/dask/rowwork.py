"""What work does to the outer rows of a collection's partitions.

Each partition runs the work on its own rows, so an operation over a collection split by
rows either keeps every partition's rows (`KEEPS`: elementwise work, selection within the
rows, `num` at axis 1, ...), makes new rows in each partition (`MAKES`: `x[mask]` with a
mask of one dim, `flatten` at axis 0, 1 or None: how many is known only once computed,
Dask's unknown chunk sizes), counts the rows (`COUNTS`: `num` at axis 0, a sum over the
partitions), or needs the whole collection's rows at once: those raise NotSupportedError
naming the operation and what to do instead.
"""
from __future__ import annotations

from lazyk.errors import NotSupportedError
from lazyk.frontend.graph import PICK_OP, REDUCE_OP, ROWS_OP, SELECT_OP, TAKE_OP, Node, toposort
from lazyk.frontend.ops import ARG_REDUCTIONS

KEEPS, MAKES, COUNTS = "keeps", "makes", "counts"

# row operations that, at axis 0, work across the rows (positions, order, running folds)
_ACROSS = ("local_index", "sort", "argsort", "cumsum", "cumprod")


def has_row_work(root: Node) -> bool:
    """Whether the graph of `root` does more than elementwise work and plain reductions
    (row operations, selections, gathers, tuples, arg-reductions): over Dask arrays such
    work runs on their chunks along axis 0 as partitions of rows."""
    return any(n.op in (ROWS_OP, SELECT_OP, TAKE_OP, PICK_OP) or
               n.op == REDUCE_OP and n.arg[0] in ARG_REDUCTIONS for n in toposort(root))


def across_chunks(root: Node) -> bool:
    """Whether the work of `root` past elementwise work and plain reductions is only what
    Dask's own functions do across the chunks of a dask.array, some of it over axis 0:
    arg-reductions, running sums and products, flattening fixed dims (`dense_step`)."""
    work = [n for n in toposort(root) if n.op in (ROWS_OP, SELECT_OP, TAKE_OP, PICK_OP) or
            n.op == REDUCE_OP and n.arg[0] in ARG_REDUCTIONS]
    return all(dense_step(n) for n in work) and any(
        0 in n.arg[1] and n.arg[0] != "flatten" for n in work)


def dense_step(node: Node) -> bool:
    """Whether `node` is work that Dask's own functions do over a dask.array's values."""
    if node.op == REDUCE_OP:
        return node.arg[0] in ARG_REDUCTIONS
    return node.op == ROWS_OP and node.arg[0] in ("cumsum", "cumprod", "flatten") and \
        not any(node.arg[2]) and not node.arg[3] and None not in node.shape


def row_effect(node: Node, srcs: tuple) -> str:
    """`KEEPS`, `MAKES` or `COUNTS` for `node` over operands split by rows (`srcs`);
    NotSupportedError (naming the operation and the workaround) for work that needs the
    whole collection's rows."""
    if node.op == SELECT_OP:
        return MAKES if node.arg == 0 else KEEPS
    if node.op == TAKE_OP:
        if node.arg == 0:
            raise refusal("gathering rows (x[positions], the positions of one dim)",
                          "reads rows by their place in the whole collection, which a "
                          "partition does not know",
                          "select rows with a mask instead, x[mask]")
        return KEEPS
    if node.op == REDUCE_OP:
        op = node.arg[0]
        if op in ARG_REDUCTIONS and 0 in node.arg[1]:
            raise refusal(f"lazyk.{op} over axis 0",
                          "gives places in the whole collection, which a partition does "
                          "not know", f"lazyk.{op} within the rows, axis=1 or deeper")
        return KEEPS
    if node.op != ROWS_OP:
        return KEEPS
    name, params = node.arg[0], node.arg[1]
    axis = params[0] if params else 0
    if name == "flatten" and axis in (0, 1, None):
        return MAKES
    if name == "num" and axis == 0:
        return COUNTS
    if name in ("select", "gather") and axis == 0:  # (strings: a row operation)
        return row_effect(Node(SELECT_OP if name == "select" else TAKE_OP, node.dtype,
                               node.shape, node.srcs, 0), srcs)
    if name in _ACROSS and axis == 0:
        raise refusal(f"lazyk.{name} at axis 0 (axis=None runs along the flattened "
                      "values)" if name in ("cumsum", "cumprod") else
                      f"lazyk.{name} at axis 0",
                      "works across the partitions' rows", "work within the rows, axis=1 "
                      "or deeper")
    if name == "pad_none" and axis == 0:
        raise refusal("lazyk.pad_none at axis 0", "needs the whole collection's row count",
                      "pad within the rows, axis=1 or deeper")
    if name == "concatenate" and axis == 0:  # (also flatten(records, axis=None): fields)
        raise refusal("lazyk.concatenate at axis 0 (or flatten of records with axis=None, "
                      "which joins their fields' values)", "joins collections end to end",
                      "concatenate within the rows, axis=1 or deeper, or flatten each "
                      "field")
    n = srcs[0].shape[:1]
    if n and node.shape[:1] == n and all(s.shape[:1] == n for s in srcs if s.ndim):
        return KEEPS
    raise refusal(f"lazyk.{name}" + (f" at axis {axis}" if isinstance(axis, int) else ""),
                  "gives each partition another number of rows", "work within the rows")


def refusal(what: str, why: str, instead: str) -> NotSupportedError:
    """The error for work a partition cannot do on its own rows."""
    return NotSupportedError(f"{what} of rows split into partitions {why}: not supported on "
                             f"Dask ({instead}, or compute the collection first)")


def mixed(node: Node, meet: str = "rows selected or flattened from a collection meet "
          "the collection's own rows") -> NotSupportedError:
    """The error for new rows (a selection, a flatten) meeting the rows they came from, or
    other new rows."""
    what = node.arg[0] if node.op in (REDUCE_OP, ROWS_OP) else node.op
    return NotSupportedError(
        f"{what}: {meet}, which need not line up partition by partition: not supported on Dask "
        "(select every operand with the same mask, x[m] * y[m]; flatten after the "
        "elementwise work, lazyk.flatten(x * y), and histogram the lists themselves, "
        "lazyk.histogram(x, weights=y); or compute the selection first)")


def unsplit(node: Node, operand: Node) -> NotSupportedError:
    """The error for an operand that is not split by rows meeting selected rows."""
    what = node.arg[0] if node.op in (REDUCE_OP, ROWS_OP) else node.op
    return NotSupportedError(
        f"{what}: an operand of type {operand.type_text()} along rows selected or flattened "
        "on Dask: how many rows each partition holds is known only once computed, so it "
        "cannot be split to match (make it a collection of the same rows, "
        "lazyk.dask.from_ragged, and select it with the same mask; or compute the selection "
        "first)")
