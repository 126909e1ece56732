"""Combinations and cartesian products in the loop nest: each pick node (the item at one
slot of each tuple of the rows at an axis, `lazyk.frontend.tuples`) is pushed down through
the elementwise work under it to the arrays it reads, which become `PickLeaf` operands; the
nest then walks the tuples of each row at that level (`codegen.levels.Pick`) and computes
the work over the fields per tuple, fused with whatever reduces them. Work under a pick
that is not elementwise (a reduction) is computed first, and so is elementwise work that
calls a math function (each item's value stored once, not computed again per tuple); a
product's slot that no value reads is paired in by its rows alone (`with_rows`)."""
from __future__ import annotations

import itertools

import numpy as np

from lazyk.arrays.array import Array
from lazyk.arrays.array import array as lazyk_array
from lazyk.arrays.arrmeta import RowsWords, dims_words
from lazyk.errors import NotSupportedError
from lazyk.frontend.expression import Expr
from lazyk.frontend.graph import (
    PICK_OP,
    REDUCE_OP,
    ROWS_OP,
    SELECT_OP,
    TAKE_OP,
    Node,
    rewrite,
    toposort,
)
from lazyk.frontend.leaves import OwnedView, PickLeaf, RaggedLeaf, leaf_data
from lazyk.frontend.ops import ELEMENTWISE, OPS
from lazyk.runtime import launch
from lazyk.runtime.nest_maps import evaluate_together

_names = itertools.count()


def lower_picks(expr: Expr) -> Expr:
    """`expr` with every pick node pushed down to the arrays it reads (`PickLeaf`s), or
    `expr` itself when it has none."""
    if not any(n.op in (PICK_OP, "with_rows") for n in toposort(expr.node)):
        return expr
    env = dict(expr.env)
    _computed_together(expr.node, env)

    def visit(node, srcs):
        node = node.replace(srcs=srcs) if srcs != node.srcs else node
        if node.op == "with_rows":
            return _witnessed(node, env)
        return _lower(node, env) if node.op == PICK_OP else node
    root = rewrite(expr.node, visit)
    used = {n.arg for n in toposort(root) if n.op == "input"}
    return Expr(root, {k: v for k, v in env.items() if k in used})


_NEW_ROWS = (SELECT_OP, TAKE_OP, ROWS_OP, REDUCE_OP)  # (work whose rows are not its arrays')
_DONE = "~values computed"  # env key of the values `_computed` stored during a lowering


def _lower(pick: Node, env: dict) -> Node:
    tuples, slot, axis, position = pick.arg
    srcs = pick.srcs
    value = srcs[slot] if len(srcs) > 1 else srcs[0]
    count = pick.shape[axis]
    if position:
        got = _rows_leaf(value, axis, tuples, slot, count, pick.ndim, env, position=True)
        if len({n.arg for n in toposort(value) if n.op == "input" and
                value.ndim - n.ndim < axis}) > 1:  # (a[:, :, None] - b[:, None, :])
            # the rows above the axis are the value's, its arrays' broadcast: paired in
            got = _witnessed(Node("with_rows", got.dtype, pick.shape[:axis + 1],
                                  (got, value), axis), env)
        return got
    got = _push(value, axis, tuples, slot, count, env)
    for s, src in enumerate(srcs if len(srcs) > 1 else ()):
        if s != slot:  # a product's other slots: their rows alone
            w = _rows_leaf(src, axis, tuples, s, count, pick.ndim, env, position=False)
            got = Node("with_rows", got.dtype, got.shape, (got, w))
    return got


def _witnessed(node: Node, env: dict) -> Node:
    """`with_rows(x, y)` with y read as rows only: a witness of each array y reads (its
    values and missing values unused), of its dims up to `node.arg` (None: all). With
    `node.arg` = d, y's first d dims are the node's first d (y's dims below them, and the
    node's, need not match: lazy records' fields line up above the records only)."""
    x, y = node.srcs
    if y.op == "input" and getattr(env.get(y.arg), "witness", False):
        return node
    if any(n.op in _NEW_ROWS for n in toposort(y)):  # rows its arrays do not have
        y = _computed(y, env)  # (`b[b > 3]`): the value stored first, its rows read
    for n in toposort(y):
        if n.op != "input" or not any(d != 1 for d in n.shape):
            continue
        entry = _entry(n, env)
        lead = y.ndim - n.ndim  # n's dims are y's last ones
        cut = n.ndim if node.arg is None else min(n.ndim, node.arg - lead)
        if isinstance(entry, PickLeaf) and entry.cut is not None:
            cut = min(cut, entry.cut)
        if cut <= 0:
            continue
        # dims of 1 after the cut, so that the witness ends where the node does
        pad = n.ndim - cut if node.arg is None else node.ndim - lead - cut
        picks = tuple(p for p in (entry.picks if isinstance(entry, PickLeaf) else ())
                      if p[0] < cut)
        name = f"~rows{next(_names)}"
        env[name] = PickLeaf(entry.array, False, picks, witness=True, cut=cut, pad=pad)
        w = Node("input", n.dtype, n.shape[:cut] + (1,) * pad, (), name)
        x = Node("with_rows", x.dtype, node.shape, (x, w))
    return x


def _push(node: Node, axis: int, tuples, slot: int, count, env: dict,
          found: dict | None = None) -> Node:
    """`node` with each array it reads at `axis` (right-aligned below it) read at the
    tuple level; what broadcasts along the axis (lacks it, or has 1 there) stays.
    `found`: only collect (by id) the math the push would store per item, changing
    nothing (`_computed_together`)."""
    memo: dict = {}
    own = node.shape[axis] == 1  # (the slot's rows are of 1: its arrays' 1s are items)

    def go(n: Node, a: int) -> Node:
        if a < 0 or (n.shape[a] == 1 and not own):
            return n
        key = (id(n), a)
        if key in memo:
            return memo[key]
        shape = n.shape[:a] + (count,) + n.shape[a + 1:]
        if found is None and n.op != "input" and tuples_at(n, a, env):
            # tuples of tuples at one dim (combinations of a product's slot): the inner
            # tuples' values stored first, whole (a product's slots pair by their rows)
            got = _picked(_computed(n, env), a, tuples, slot, shape, env)
        elif n.op in ELEMENTWISE and not _costly(n):
            srcs = tuple(go(s, a - (n.ndim - s.ndim)) for s in n.srcs)
            got = n if found is not None else n.replace(srcs=srcs, shape=shape)
        elif found is not None:
            if n.op in ELEMENTWISE:
                found[id(n)] = n
            got = n
        elif n.op == "input":
            got = _picked(n, a, tuples, slot, shape, env)
        else:
            # a math function per item (px = pt * cos(phi)): stored per item once, not
            # computed again for every tuple the item is in; a reduction, say: computed
            # first (over the items, not the tuples)
            got = _picked(_computed(n, env), a, tuples, slot, shape, env)
        memo[key] = got
        return got
    return go(node, axis)


def _computed_together(root: Node, env: dict) -> None:
    """The math the picks under `root` store per item (`_push`), of one collection's rows,
    computed in one pass where it takes them (`nest_maps`): px, py, pz and E of one
    collection read its pt, eta, phi and mass once."""
    found: dict = {}
    for pick in toposort(root):
        if pick.op == PICK_OP and not pick.arg[3]:  # (positions read no values)
            tuples, slot, axis, _ = pick.arg
            value = pick.srcs[slot] if len(pick.srcs) > 1 else pick.srcs[0]
            _push(value, axis, tuples, slot, pick.shape[axis], env, found)
    for n, value in evaluate_together(list(found.values()), env).items():
        _store(n, value, env)


def _costly(n: Node) -> bool:
    """Whether elementwise work `n` calls a math function (tens of cycles an element)."""
    return any(m.op in OPS and OPS[m.op].calls_libm for m in toposort(n))


def _computed(n: Node, env: dict) -> Node:
    """An input node over the value of `n` (computed now; once per lowering: the value is
    kept in `env` under the node)."""
    done = env.setdefault(_DONE, {})
    if id(n) in done:
        return done[id(n)][1]
    used = {m.arg for m in toposort(n) if m.op == "input"}
    return _store(n, launch.evaluate(Expr(n, {k: v for k, v in env.items() if k in used})),
                  env)


def _store(n: Node, value, env: dict) -> Node:
    """An input node over `value`, the value of `n`, kept for this lowering."""
    done = env.setdefault(_DONE, {})
    if not isinstance(value, Array):
        value = lazyk_array(np.asarray(value))
    name = f"~computed{next(_names)}"
    env[name] = RaggedLeaf(value, bool(value.type.missing_values))
    got = Node("input", n.dtype, n.shape, (), name)
    done[id(n)] = (n, got)  # (n held: its id stays its own)
    return got


def _entry(n: Node, env: dict):
    """The env entry of input `n` as a ragged leaf (NumPy data wrapped, zero-copy)."""
    v = env[n.arg]
    if isinstance(v, RaggedLeaf):
        return v
    data = leaf_data(v)
    if not isinstance(data, np.ndarray):
        raise NotSupportedError(f"combinations / cartesian of a {type(data).__name__} "
                                "operand")
    owner = v.owner if isinstance(v, OwnedView) and isinstance(v.owner, Array) else None
    arr = owner if owner is not None and owner.shape == data.shape else lazyk_array(data)
    return RaggedLeaf(arr, False)


def _picked(n: Node, a: int, tuples, slot: int, shape: tuple, env: dict) -> Node:
    """Input `n` read at the tuple level at its dim `a`."""
    entry = _entry(n, env)
    picks = entry.picks if isinstance(entry, PickLeaf) else ()
    if any(at == a for at, _, _ in picks):  # tuples of tuples at one dim: store the inner
        n = _computed(n, env)
        entry, picks = env[n.arg], ()
    name = f"~pick{next(_names)}"
    if isinstance(entry, PickLeaf) and entry.witness:  # (still its rows only)
        env[name] = PickLeaf(entry.array, False, picks + ((a, tuples, slot),), witness=True,
                             cut=entry.cut, pad=entry.pad)
    else:
        env[name] = PickLeaf(entry.array, entry.option, picks + ((a, tuples, slot),))
    return Node("input", n.dtype, shape, (), name)


def tuples_at(x: Node, level: int, env: dict) -> frozenset:
    """The tuples (combinations, products) that the inputs of `x` walk at x's dim `level`
    (lowered picks: `PickLeaf`s)."""
    found = set()
    for n in toposort(x):
        entry = env.get(n.arg) if n.op == "input" else None
        if isinstance(entry, PickLeaf):
            at = level - (x.ndim - n.ndim)
            found.update(t for a, t, _ in entry.picks if a == at)
    return frozenset(found)


def _rows_leaf(value: Node, axis: int, tuples, slot: int, count, ndim: int, env: dict,
               position: bool) -> Node:
    """An operand that reads only the rows of `value`'s arrays at `axis` (the first array
    with that dim): their item index at `slot` as its value (`position`, dims up to the
    axis), or a witness (no value read; trailing dims of 1 up to `ndim`). Positions pair in
    the other arrays' rows there (their missing rows are the tuples' too: `argcombinations`
    of records whose second field's row is missing)."""
    own = value.shape[axis] == 1  # (rows of 1 are the slot's own, not a broadcast)
    if any(n.op in _NEW_ROWS for n in toposort(value)) or tuples_at(value, axis, env):
        # rows its arrays do not have (`x[x > 1][:, 1:]`), or tuples (`pairs.b[:, 1:]`):
        # the value stored first, its rows read
        value = _computed(value, env)
    leaves = _slot_leaves(value, axis, tuples, slot, count, ndim, env, position, own)
    got = next(leaves, None)
    if got is None:
        raise NotSupportedError(f"the {tuples} at axis {axis} of an expression that reads "
                                "no array with rows there")
    for other in leaves if position else ():  # (read for its rows only)
        got = Node("with_rows", got.dtype, got.shape, (got, other))
    return got


def _slot_leaves(value: Node, axis: int, tuples, slot: int, count, ndim: int, env: dict,
                 position: bool, own: bool):
    """`_rows_leaf`'s operands, one per array of `value` with rows at `axis` (arrays of
    the same rows there, the fields of one collection, once)."""
    seen = set()
    for n in toposort(value):
        a = axis - (value.ndim - n.ndim)
        if n.op != "input" or a < 0 or (n.shape[a] == 1 and not own):
            continue
        entry = _entry(n, env)
        picks = tuple(p for p in (entry.picks if isinstance(entry, PickLeaf) else ())
                      if p[0] < a)
        key = (a, picks, _rows_of(entry.array, a))
        if key in seen:
            continue
        seen.add(key)
        shape = n.shape[:a] + (count,)
        name = f"~rows{next(_names)}"
        # (dims of 1 after the axis: it lines up with the pick's own dims below it)
        env[name] = PickLeaf(entry.array, False, picks + ((a, tuples, slot),),
                             position=position, witness=not position, cut=a + 1,
                             pad=ndim - axis - 1)
        yield Node("input", np.dtype(np.int64) if position else n.dtype,
                   shape + (1,) * (ndim - axis - 1), (), name)


def _rows_of(arr: Array, a: int) -> tuple:
    """What gives `arr`'s rows down to its dim `a`: its address and the arrmeta words of
    its dims above `a`, and at `a` those of its rows without their content's (the fields
    of one collection: equal)."""
    dims = dims_words(arr.type, arr.meta)[0][:a + 1]
    last = dims[-1] if dims else None
    if isinstance(last, RowsWords):
        last = (last.width, last.stop_delta, last.row_mask)
    return (arr.ptr, tuple(dims[:-1]), last)
