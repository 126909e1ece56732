"""`x[mask]` and `x[positions]` (Awkward's selection and gather) in the loop nest.

The graph holds `select` / `take` nodes (`lazyk.frontend.expr.index_by`); here they are
lowered into the nest's own iteration space, so the work around them fuses into one kernel
(`nest_run.Picks`, `codegen.levels.Keep` / `Gathered`):

- `x[mask]` acting at nest level K (K >= 1) becomes x itself, and the nest keeps the
  elements of level K where the mask (a spec output) is true or missing: its count pass
  counts the kept elements of each row, its fill pass writes only them, and a fold after
  it folds only them (`(x[x > 0] * 2).sum(axis=-1)` is one nest, no count pass). A
  selection of an array's items by a mask of its own rows whose level the result keeps
  (where a count pass would count it) is taken natively first instead
  (`backend.rowcopy.KeptItems`, `kept_items.compressed`: the mask computed in one flat loop). The
  mask's dims line up with x's first ones: a mask of fewer dims gets trailing axes of
  size 1 here, where the data is known (views, no copy). Work outside the selection must
  not move along level K (its rows there are the selection's: `x[m] + y` with y of the
  selected lengths computes `x[m]` first).
- `x[mask]` with a mask of one dim selects rows: the mask is computed (one pass over its
  N values) and its kept rows become positions (`np.flatnonzero`), a gather at level 0;
  the list columns of numbers it reads are copied row by row natively once
  (`backend.rowcopy.RowCopy`: a collection's fields share one plan).
- `x[positions]` acting at level K becomes x's leaves renamed (`Gathered` operands, never
  paired with the result's rows at K) and the positions (a spec output, int64) taken at
  level K; the positions' rows are the result's there.
- `f(fields of combinations)[positions]` with one tuple number per row (Awkward's
  `f(pairs)[ak.argmin(g(pairs), axis=1, keepdims=True)]`) gathers each field's items at
  the picked tuple's slots instead (`lazyk.runtime.tuple_picks`: the tuple numbers become
  item positions natively), so f runs on one tuple per row, never on every tuple.
- Positions or a mask that count tuples other than the ones x walks there (a field of
  pairs gathered at `argsort` positions, `pairs.b[:, 1:]`) meet x's tuples stored first.
- A missing mask element or position above x's last dim makes the row below it missing
  (a var one: `?var`; against a fixed dim, `?n`, the nest declines).

Selections nested in each other, gathers of gathered values, several different masks in
one expression, and forms the nest declines are computed first, innermost first, each in a
nest of its own (`evaluate_picks`); their results are leaves of the rest. Nothing here
loops over rows in Python.
"""
from __future__ import annotations

import itertools

import numpy as np

from lazyk.arrays.array import Array, array, masked
from lazyk.arrays.columns import build_columns, columns
from lazyk.arrays.trees import (
    Column,
    Leaf,
    Lists,
    Masked,
    Regular,
    memory_key,
    rows_memo_dict,
)
from lazyk.backend.rowcopy import RowCopy, copies
from lazyk.errors import NotSupportedError, ShapeError
from lazyk.frontend.expression import Expr
from lazyk.frontend.graph import (
    PICK_OP,
    REDUCE_OP,
    SELECT_OP,
    TAKE_OP,
    Node,
    rewrite,
    shared_reductions,
    toposort,
)
from lazyk.frontend.indexing import index_by
from lazyk.frontend.leaves import PickLeaf, RaggedLeaf, is_ragged, leaf_data
from lazyk.frontend.numpy_rules import broadcast_shapes, cast, keep_ones
from lazyk.frontend.operands import as_expr, wrap_array
from lazyk.frontend.ops import ARG_REDUCTIONS, ELEMENTWISE
from lazyk.runtime import launch as runtime
from lazyk.runtime.kept_items import compressed
from lazyk.runtime.nest_maps import evaluate_together
from lazyk.runtime.nest_results import fixed_rows, var_rows
from lazyk.runtime.nest_run import Picks, nest_run
from lazyk.runtime.picks import tuples_at
from lazyk.runtime.ragged_rules import branch_masks, inline_branches
from lazyk.runtime.tuple_picks import gather_in_missing_rows, picked_fields, slot_positions
from lazyk.types import FixedDim

PICKS = (SELECT_OP, TAKE_OP)
_NEST_ONLY = frozenset(PICKS + (PICK_OP, "with_rows"))  # (work no flat kernel runs)
_LEAVES = ("input", "const", "scalar")
_names = itertools.count()


def needs_nest(root: Node) -> bool:
    """Whether `root` holds work only the loop nest runs (a selection, a gather, an
    arg-reduction, the items of combinations or products), whatever its leaves."""
    return any(n.op in _NEST_ONLY or (n.op == REDUCE_OP and n.arg[0] in ARG_REDUCTIONS)
               for n in toposort(root))


def take_kept_rows(expr: Expr) -> Expr:
    """`expr` with each selection of rows (`x[mask]`, a mask of one dim without missing
    values) of elementwise work over arrays replaced by that work over the arrays' kept
    rows, each array's rows taken once (NumPy): the work after it reads compact rows. The
    others stay (the nest gathers them), their masks computed once."""
    if not any(n.op == SELECT_OP and n.arg == 0 for n in toposort(expr.node)):
        return expr
    env, done = dict(expr.env), {}
    shared = shared_reductions(expr.node)

    def visit(node, srcs):
        node = _same(node, srcs)
        if id(node) in shared:  # a reduction a mask and the values read: computed once
            return _leaf(node, env)
        if node.op != SELECT_OP or node.arg != 0 or \
                any(n.op in PICKS for n in toposort(node.srcs[0])):
            return node
        got = _rows_kept(node, env, done, gather=False)
        if got is not None:
            return got
        values, valid, _ = _kept_mask(node.srcs[1], env, done)  # (computed once)
        mask = wrap_array(values) if valid is None else as_expr(masked(values, valid))
        env.update(mask.env)
        return node.replace(srcs=(node.srcs[0], mask.node))
    root = rewrite(expr.node, visit)
    if root is expr.node:
        return expr
    used = {n.arg for n in toposort(root) if n.op == "input"}
    return Expr(root, {k: v for k, v in env.items() if k in used})


def has_picks(root: Node) -> bool:
    """Whether `root` selects or gathers."""
    return any(n.op in PICKS for n in toposort(root))


def evaluate_picks(root: Node, red_node: Node, reduce_arg, env: dict):
    """`root` (then folded as `red_node` when `reduce_arg`) with its selections and gathers
    in one nest where it takes them; the others computed first. A lazyk Array."""
    root, e = inline_branches(root, Expr(root, env), PICKS)  # (where() over missing values)
    env, done = dict(e.env), {}  # done: node -> the leaf of its value, computed once
    given, root = root, _prepared(root, env, done)
    if reduce_arg is None and root.op == "input" and given.op != "input":
        leaf = env[root.arg]  # (a gather answered whole, `_picked_tuples`: no copy)
        if isinstance(leaf, RaggedLeaf) and not isinstance(leaf, PickLeaf):
            return leaf.array
    got = compressed(root, env) if reduce_arg is None else None
    if got is not None:
        return got
    got = _fused(root, red_node, reduce_arg, env)
    if got is not None:
        return got
    picks = [n for n in toposort(root) if n.op in PICKS]
    if len(picks) == 1 and picks[0] is root and reduce_arg is None:
        # a lone selection or gather the nest declines: its operands first, then it alone
        x, key = root.srcs
        if root.op == TAKE_OP and _paired(x, env):  # (positions are checked in each row)
            x = x.srcs[0]
        if x.op == "input" and isinstance(env.get(x.arg), PickLeaf):  # (tuples' items)
            return evaluate_picks(root.replace(srcs=(_computed(x, env, done), key)), red_node,
                                  None, env)
        if x.op == "input" and key.op == "input":
            got = gather_in_missing_rows(root.replace(srcs=(x, key)), env)
            if got is not None:
                return got
            data = [leaf_data(env[n.arg]) for n in (x, key)]
            types = " and ".join(str(d.array.type) if is_ragged(d) else
                                 f"{np.shape(d)} {np.asarray(d).dtype} array" for d in data)
            what, one = ("mask", "mask element") if root.op == SELECT_OP else \
                ("positions", "position")
            raise NotSupportedError(
                f"x[{what}] over {types}: the result would have missing rows against a fixed "
                f"dim (?n): a missing {one} above a fixed dim of the array, or rows of the "
                f"array that may be missing where the {what} dim is fixed; the loop nest does "
                "not write those: replace the missing ones first (lazyk.where)")
        what = "mask" if root.op == SELECT_OP else "positions"
        tx, tk = Expr(x, env).type, Expr(key, env).type
        qn = (tx.missing_fixed_rows, tk.missing_fixed_rows)  # (both: read as `?var` rows)
        kept = all(qn) and root.op == SELECT_OP and not Expr(root, env).type.missing_fixed_rows
        lone = root.replace(srcs=(_leaf(x, env, kept), _leaf(key, env, kept)))
        try:
            if all(s.op == "input" for s in lone.srcs):  # (no leaf holds them: never a loop)
                return evaluate_picks(lone, lone, None, env)
        except NotSupportedError:
            if not kept:
                raise
        raise NotSupportedError(f"x[{what}] over {tx} and {tk}: " + (
            "one has fixed-size rows that may be missing (?n: a fixed dim met ?var rows), "
            "which the loop nest reads from no array; give the operands rows that cannot "
            "be missing (var), or var dims" if any(qn) else "not computed in one loop nest: "
            "evaluate the operands first"))
    rest = rewrite(root, lambda n, srcs: _computed(_same(n, srcs), env, done)
                   if n.op in PICKS else _same(n, srcs))
    return _array(runtime.evaluate(Expr(red_node.replace(srcs=(rest,)) if reduce_arg else
                                        rest, env)))


def positions_in_whole_rows(root: Node, red_node: Node, env: dict):
    """The arg-reduction `red_node` (keepdims) of `root`, work over one selection `y[m]` at
    the folded level, as positions among all the elements of m's rows, not among the kept
    ones (`Keep.every_position`); None where one nest does not take it."""
    env = dict(env)
    return _fused(_prepared(root, env, {}), red_node, red_node.arg, env, every_position=True)


# ---------------------------------------------------------------- what one nest takes
def _prepared(root: Node, env: dict, done: dict) -> Node:
    """`root` with each selection and gather in a form one nest takes (`_fusable`); the
    values gathered whole computed first, those of one shape in one pass: `p4[pairs.i].px`,
    `.py`, ... read the objects' pt, eta, phi once, one kernel."""
    firsts = [n.srcs[0] for n in toposort(root) if n.op == TAKE_OP and _whole(n, env)]
    done.update((x, _as_leaf(v, env)) for x, v in evaluate_together(firsts, env).items())
    return rewrite(root, lambda n, srcs: _fusable(_same(n, srcs), env, done))


def _same(node: Node, srcs: tuple) -> Node:
    return node.replace(srcs=srcs) if srcs != node.srcs else node


def _fusable(node: Node, env: dict, done: dict) -> Node:
    """`node` in a form one nest takes (its sources already are): a selection's operands
    hold no selection, a gather's neither selection nor gather, and at most one leaf of a
    gathered value moves along the gathered level (several are computed together first);
    a row selection (a mask of one dim) becomes a gather of the kept rows."""
    if node.op not in PICKS:
        return node
    x, key = node.srcs
    # (a row selection becomes a gather: no gather inside it either)
    inner = PICKS if node.op == TAKE_OP or node.arg == 0 else (SELECT_OP,)
    x, key = (_without(s, inner, env, done) for s in (x, key))
    own = tuples_at(x, node.arg, env)
    if node.op == TAKE_OP and (own or len(_moving(x, node.arg)) > 1):
        picked = _picked_tuples(_same(node, (x, key)), env, done)
        if picked is not None:
            return picked
        x = _computed(x, env, done)  # (once: `p4[i].px + p4[j].px` gathers it twice)
    elif node.op == SELECT_OP and own and tuples_at(key, node.arg, env) - own:
        # a mask that walks other tuples than x there (a slice of pair values,
        # `p.b[:, 1:]`, walks the pairs' positions) meets x's tuples stored; a mask of
        # plain rows pairs with x's tuples in the nest (`pairs[sfos]`, lengths checked)
        x, key = _computed(x, env, done), _computed(key, env, done)
    node = _same(node, (x, key))
    if node.op == SELECT_OP and node.arg == 0:
        return _rows_kept(node, env, done)
    return node


def _whole(take: Node, env: dict) -> bool:
    """Whether `_fusable` computes the gathered value of `take` (no selection or gather
    in it) before the gather: several of its leaves move along the level, no tuples."""
    x = take.srcs[0]
    return x.op not in _LEAVES and not has_picks(x) and len(_moving(x, take.arg)) > 1 and \
        (take.arg != 1 or picked_fields(x, env) is None)


def _picked_tuples(node: Node, env: dict, done: dict) -> Node | None:
    """`f(tuple fields)[positions]` as f of each field's items gathered at the picked
    tuples' slots (`lazyk.runtime.tuple_picks`): only the picked tuples are computed, never
    every tuple (the trijet of mass closest to 172.5: its pt, not every trijet's). None
    for other forms."""
    found = picked_fields(node.srcs[0], env) if node.arg == 1 else None
    if found is None:
        return None
    picks, tuples, off = found
    pos = _computed(node.srcs[1], env, done)
    data = leaf_data(env[pos.arg])
    held = data.array if is_ragged(data) else data
    memo = rows_memo_dict()  # (the histograms of one evaluation pick the same tuples)
    memo = (done if memo is None else memo).setdefault("tuple slots", {})
    key = (id(held), memory_key(off), tuples)
    if key not in memo:  # (the arrays held: their ids stay theirs)
        memo[key] = (held, off, slot_positions(_array(held), off, tuples))
    slots = memo[key][2]
    if slots is None:
        return None
    taken = {}
    for n, entry in picks.items():
        at = slots[entry.picks[0][2]]  # (a position pick's value: the slot's position)
        e = as_expr(at) if entry.position else index_by(entry.array, at)
        env.update(e.env)
        taken[n] = e.node

    def visit(v, srcs):
        if v in taken:
            return taken[v]
        if srcs == v.srcs or v.op in _LEAVES:
            return v
        return v.replace(srcs=srcs, shape=broadcast_shapes(v.op, [s.shape for s in srcs]))
    return rewrite(node.srcs[0], visit)


def _without(node: Node, ops: tuple, env: dict, done: dict) -> Node:
    """`node` with each selection / gather of `ops` in it computed first (a leaf)."""
    if not any(n.op in ops for n in toposort(node)):
        return node
    return rewrite(node, lambda n, srcs: _computed(_same(n, srcs), env, done) if n.op in ops
                   else _same(n, srcs))


def _moving(x: Node, at: int) -> list:
    """The leaves of `x` gathered at x's dim `at`: those with a dim there other than a
    fixed 1 (a fixed 1 stretches as elementwise work stretches it), or, when all are 1,
    every leaf with the dim (their one element is position 0)."""
    leaves = [n for n in toposort(x) if n.op == "input"]
    own = [n for n in leaves if at - (x.ndim - n.ndim) >= 0]
    moving = [n for n in own if n.shape[at - (x.ndim - n.ndim)] != 1]
    return moving or own


def _fused(root: Node, red_node: Node, reduce_arg, env: dict, every_position: bool = False):
    """The nest's result of `root` with its selections and gathers lowered (`Picks`), or
    None where one nest does not take them."""
    nd = root.ndim
    order = toposort(root)
    sels = [n for n in order if n.op == SELECT_OP]
    if len({(s.srcs[1], s.arg + nd - s.ndim) for s in sels}) > 1:
        return None  # several masks: each selection first
    keep = None
    if sels:
        s = sels[0]
        keep = s.arg + nd - s.ndim
        inside = set(sels)
        for n in toposort(root, descend=lambda n: n not in inside):
            d = keep - (nd - n.ndim)
            if n.op == "input" and d >= 0 and n.shape[d] != 1:
                return None  # work beside the selection moves along its level
        if reduce_arg is None or keep not in [a % nd for a in reduce_arg[1]]:
            # the result keeps the selected level, which a count pass would count: an
            # array's items selected by a mask of its rows are taken natively first
            new = {}
            for t in sels:
                got = compressed(t, env)
                if got is None:
                    break
                new[t] = _as_leaf(got, env)
            else:
                return _fused(rewrite(root, lambda n, srcs: new.get(n) or _same(n, srcs)),
                              red_node, reduce_arg, env, every_position)
    takes = [n for n in order if n.op == TAKE_OP]
    roots, taken, renamed, beside = [], [], {}, []
    if sels:
        m = sels[0].srcs[1]
        extra = sels[0].ndim - sels[0].arg - 1
        if extra and any(n.op == TAKE_OP for n in toposort(m)):
            return None  # (the gathers inside would be lowered twice)
        if sels[0].ndim > sels[0].arg + 1 and tuples_at(sels[0].srcs[0], sels[0].arg, env):
            return None  # (tuples of lists kept by a mask: the tuples' items stored first)
        roots.append(_trailing(m, extra, env))
    for t in takes:
        x, pos = t.srcs
        if tuples_at(x, t.arg, env):
            return None  # (positions of tuples: the tuples' values are stored first)
        names = {}
        moving = _moving(x, t.arg)
        for leaf in moving:  # its own operand, never one leaf with x elsewhere
            name = f"{leaf.arg}~{next(_names)}"
            env[name] = env[leaf.arg]
            names[leaf] = leaf.replace(arg=name)
            taken.append((name, t.arg + nd - t.ndim, len(roots)))
        beside += [(n.arg, t.arg + nd - t.ndim, len(roots)) for n in toposort(x)
                   if n.op == "input" and n not in moving and n.ndim > t.arg - (x.ndim - n.ndim)]
        renamed[t] = rewrite(x, lambda n, srcs, names=names: names.get(n) or _same(n, srcs))
        roots.append(_trailing(pos, t.ndim - t.arg - 1, env))

    def lower(n, srcs):  # (a gather's sources hold no selection or gather: it is itself)
        n = _same(n, srcs)
        return n.srcs[0] if n.op == SELECT_OP else renamed[n] if n.op == TAKE_OP else n
    value = rewrite(root, lower)
    roots = [rewrite(r, lower) for r in roots]
    used = list(dict.fromkeys(n.arg for r in (value, *roots) for n in toposort(r)
                              if n.op == "input"))
    leaves = [leaf_data(env[n]) for n in used]
    array = frozenset(n.arg for n in toposort(rewrite(sels[0].srcs[0], lower))
                      if n.op == "input") if sels else frozenset()
    if every_position and (keep is None or reduce_arg is None or
                           list(reduce_arg[1]) != [keep] or reduce_arg[0] not in ARG_REDUCTIONS):
        return None
    if branch_masks(value, used, leaves):  # (where() of selections over missing values:
        return None  # the selections first, then where() takes each branch's state)
    picks = Picks(keep, tuple(roots), tuple(taken), array, every_position, tuple(beside))
    return nest_run(value, red_node, reduce_arg, used, leaves, picks=picks)


def _trailing(node: Node, n: int, env: dict) -> Node:
    """`node` with n trailing axes of size 1 (its dims then line up with x's first dims
    under the nest's right-aligned levels)."""
    if not n:
        return node
    if any(isinstance(env.get(m.arg), PickLeaf) for m in toposort(node) if m.op == "input"):
        node = _as_leaf(runtime.evaluate(Expr(node, env)), env)  # (positions in tuples first)
    e = Expr(node, {k: v for k, v in env.items()})[(Ellipsis,) + (None,) * n]
    env.update(e.env)
    return e.node


# ---------------------------------------------------------------- computed first
def _computed(node: Node, env: dict, done: dict) -> Node:
    """A leaf holding `node`'s value (a selection or gather computed in a nest of its own,
    once per evaluation: `done`; an array read at tuple levels: the tuples' values)."""
    if node.op == "input" and not isinstance(env.get(node.arg), PickLeaf):
        return node
    if node not in done:
        got = evaluate_picks(node, node, None, env) if node.op in PICKS else \
            runtime.evaluate(Expr(node, env))
        done[node] = _as_leaf(got, env)
    return done[node]


def _paired(x: Node, env: dict) -> bool:
    """Whether `x` is `?n` rows as a lazyk array gives them (`as_expr`): its `?var` rows
    paired with the fixed n (`x - zeros(n)`, `x * ones(n)`), never one leaf."""
    if x.op not in ("subtract", "multiply") or x.srcs[0].op != "input":
        return False
    fixed = x.srcs[1].srcs[0] if x.srcs[1].op == "astype" else x.srcs[1]
    return fixed.op == "input" and is_ragged(env[x.srcs[0].arg]) and \
        not is_ragged(env[fixed.arg])


def _leaf(node: Node, env: dict, rows: bool = False) -> Node:
    """`node` as a leaf (computed now unless it is one); `rows`: `?n` rows read as `?var`."""
    value = None if node.op == "input" else runtime.evaluate(Expr(node, env))
    return node if value is None else _as_leaf(
        var_rows(value)[0] if rows and isinstance(value, Array) else value, env)


def _as_leaf(value, env: dict) -> Node:
    leaf = wrap_array(value) if isinstance(value, np.ndarray) else as_expr(value)
    env.update(leaf.env)
    return leaf.node


def _array(value) -> Array:
    """A lazyk Array of a result (NumPy ones from the fixed path wrapped)."""
    return value if isinstance(value, Array) else array(value)


def _rows_kept(node: Node, env: dict, done: dict, gather: bool = True) -> Node | None:
    """`x[mask]` of a mask of one dim: x over its leaves' kept rows, taken with NumPy once
    per leaf (work after it then reads compact rows: one loop over their items), or the
    gather of its kept rows where x is more than elementwise work; the mask computed
    (a missing element keeps a missing row), `np.flatnonzero` of what it keeps."""
    x, m = node.srcs
    values, valid, pos = _kept_mask(m, env, done)
    if valid is not None and not gather:
        return None
    n = _outer(x, env)
    if n is not None and len(values) != n:
        raise ShapeError(f"x[mask]: the mask has length {len(values)} and the array {n}")
    if valid is None:
        taken = _taken(x, m, values, pos, env, done)
        if taken is not None or not gather:
            return taken
        leaf = wrap_array(pos)
    else:  # (a `?bool` mask's result is `?T`, missing values or not)
        got = _kept_fixed_rows(x, values | ~valid, valid, pos, env, done)
        if got is not None:
            return got
        leaf = as_expr(masked(pos, valid[pos]))
    env.update(leaf.env)
    return Node(TAKE_OP, x.dtype, (len(pos),) + x.shape[1:], (x, leaf.node), 0)


def _kept_fixed_rows(x: Node, keep: np.ndarray, valid: np.ndarray, pos: np.ndarray,
                     env: dict, done: dict) -> Node | None:
    """The fixed-size rows of an array that a `?bool` mask keeps, taken natively: a missing
    mask element keeps a missing row (`?n` rows, which the nest does not write). None
    for other arrays and work (the nest gathers them)."""
    if x.op != "input" or x.ndim < 2 or not all(isinstance(d, int) for d in x.shape[1:]):
        return None
    data = leaf_data(env[x.arg])
    arr = data.array if type(data) is RaggedLeaf else \
        array(data) if type(data) is np.ndarray else None
    if arr is None or not isinstance(arr.type, FixedDim):
        return None
    rows = build_columns(_take_rows(columns(arr), keep, pos, done))
    leaf = as_expr(fixed_rows(rows, {1: valid[pos]}))
    env.update(leaf.env)
    return cast(leaf.node, x.dtype)


def _kept_mask(m: Node, env: dict, done: dict) -> tuple:
    """(values, validity or None, positions kept) of a mask of one dim: computed once per
    evaluation (`rows_memo`: the fields of a collection selected by one mask)."""
    memo = rows_memo_dict()
    memo = (done if memo is None else memo).setdefault("kept", {})
    leaves = tuple(env[n.arg] for n in toposort(m) if n.op == "input")
    key = (m, tuple(map(id, leaves)))
    if key not in memo:  # (the leaves held: their ids stay theirs)
        values, valid = _bools(runtime.evaluate(Expr(m, env)))
        kept = values if valid is None else values | ~valid
        memo[key] = ((values, valid, np.flatnonzero(kept).astype(np.int64, copy=False)),
                     leaves)
    return memo[key][0]


def _taken(x: Node, m: Node, keep: np.ndarray, pos: np.ndarray, env: dict,
           done: dict) -> Node | None:
    """Elementwise work `x` over its leaves' rows where `keep` (at `pos`; each leaf whose
    axis 0 holds those rows taken once, `_take_rows`), or None for other work."""
    n = len(keep)
    nodes = toposort(x)
    if any(v.op not in ELEMENTWISE and v.op not in _LEAVES for v in nodes):
        return None
    new: dict = {}
    for v in nodes:
        if v.op != "input" or v.ndim != x.ndim:
            continue
        data = leaf_data(env[v.arg])
        arr = data.array if type(data) is RaggedLeaf else \
            array(data) if type(data) is np.ndarray else None
        if arr is None or not isinstance(arr.type, FixedDim):
            return None
        if arr.type.size != n:
            if arr.type.size == 1:  # (a fixed 1 stretches over every row)
                continue
            return None
        got = done.get(("taken", v, m))
        if got is None:
            leaf = as_expr(build_columns(_take_rows(columns(arr), keep, pos, done)))
            env.update(leaf.env)  # (in the parameter's dtype: a compiled call's input may
            got = done["taken", v, m] = cast(leaf.node, v.dtype)  # be of another)
        new[id(v)] = got

    def visit(v, srcs):
        if id(v) in new:
            return new[id(v)]
        if srcs == v.srcs or v.op in _LEAVES:
            return v
        shape = broadcast_shapes(v.op, [s.shape for s in srcs])  # (axis 0: the kept rows)
        return v.replace(srcs=srcs, shape=keep_ones(shape, v.shape))
    return rewrite(x, visit)


def _take_rows(tree: Column, keep: np.ndarray, pos: np.ndarray, done: dict) -> Column:
    """The rows of `tree` where `keep` (their positions: `pos`): a list column of numbers
    copies the items of its kept rows (`_kept_rows`: planned once for all the columns over
    one offsets array, a collection's fields, and each column taken once in an
    evaluation); a column of numbers keeps its kept values (NumPy take); other trees
    `Node.take`."""
    if isinstance(tree, Leaf) and tree.values.ndim == 1:
        return tree if len(pos) == len(keep) else Leaf(tree.values.take(pos))
    if not isinstance(tree, Lists) or not isinstance(tree.child, Leaf) or \
            tree.child.values.ndim != 1 or not copies(tree.child.values.dtype):
        return tree.take(pos)
    off, values = tree.offsets, tree.child.values
    plan, taken = _kept_rows(off, keep, pos, done)
    if plan is None:  # (every row kept: the column itself)
        return tree
    key = memory_key(values)
    if key not in taken:  # (values held: their memory stays theirs)
        taken[key] = (values, plan.fill([values], values.dtype))
    return Lists(plan.offsets, Leaf(taken[key][1]))


def _kept_rows(off: np.ndarray, keep: np.ndarray, pos: np.ndarray, done: dict) -> tuple:
    """(the copy of the kept rows, a `RowCopy`, or None when every row is kept, {columns
    taken}) of rows `off` and kept rows `keep` (bool; their positions `pos`). Once per
    offsets array and mask in an evaluation (`rows_memo`): offsets matched by their memory
    (`trees.memory_key`), masks by identity, then by value (each step computes its mask)."""
    memo = rows_memo_dict()
    memo = (done if memo is None else memo).setdefault("kept rows", {})
    seen = memo.setdefault(memory_key(off), [])
    for held_off, held_keep, got in seen:  # (held_off: its memory stays this array's)
        if held_keep is keep or np.array_equal(held_keep, keep):
            return got
    got = (None if len(pos) == len(keep) else RowCopy([off], pos), {})
    seen.append((off, keep, got))
    return got


def _bools(value) -> tuple:
    """(values, present flags or None when it is not `?bool`) of a computed one-dim bool
    result (its columns: no Python per element)."""
    if isinstance(value, np.ndarray):
        return np.asarray(value, bool).reshape(-1), None
    tree = columns(value if isinstance(value.type, FixedDim) else value[None])
    while isinstance(tree, (Lists, Regular)):  # (a one-row `var * bool` mask: its row)
        tree = tree.child
    if isinstance(tree, Masked):  # (present flags even when none is missing: the `?`)
        return np.asarray(tree.child.values, bool), np.asarray(tree.present, bool)
    return np.asarray(tree.values, bool), None


def _outer(x: Node, env: dict):
    """The outer length of `x`, from its leaves (through elementwise work and the picks
    before it: rows gathered at positions have the positions' length), or None where
    that is known only once computed."""
    if x.op == "input":
        if isinstance(x.shape[0], int):
            return x.shape[0]
        d = leaf_data(env[x.arg])
        return len(d.array) if is_ragged(d) else None
    if x.op in PICKS:
        if x.arg != 0:  # (within rows: the outer length stays)
            return _outer(x.srcs[0], env)
        return _outer(x.srcs[1], env) if x.op == TAKE_OP else None
    if x.op not in ELEMENTWISE:
        return None
    for s in x.srcs:
        if s.ndim == x.ndim:
            n = _outer(s, env)
            if n is not None and n != 1:  # (a fixed 1 stretches)
                return n
    return None
