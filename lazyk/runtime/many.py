"""`lazyk.evaluate`: one result, or several at once (`lazyk.evaluate(e1, e2, ...)`) with the
work they share run once: histograms that read the same rows fill in one pass over the data
(`lazyk.runtime.histograms`), a reduction two results use is computed once, and a result
asked for twice is computed once. Records (`lazyk.zip`, combinations) and histograms
evaluate here too."""
from __future__ import annotations

import copy
from collections.abc import Mapping
from typing import Any

import numpy as np

from lazyk.arrays.array import Array
from lazyk.arrays.trees import rows_memo
from lazyk.backend.threads import rouse
from lazyk.errors import NotSupportedError, ShapeError
from lazyk.frontend.expression import Expr
from lazyk.frontend.graph import REDUCE_OP, graph_ops, input_names, rewrite, toposort
from lazyk.frontend.histogram import Histogram
from lazyk.frontend.leaves import most_rows
from lazyk.frontend.operands import as_expr, wrap_array
from lazyk.frontend.records import Records
from lazyk.frontend.statistics import stretched_axis
from lazyk.runtime import launch
from lazyk.runtime.best_picks import (
    best_positions,
    gathered_from_whole_rows,
    whole_row_positions,
)
from lazyk.runtime.histograms import bound_histograms, fill_histograms
from lazyk.runtime.launch import evaluate as evaluate_one
from lazyk.runtime.ragged_rules import inline_reductions

_LAZY = (Expr, Histogram, Records)


def evaluate(expr: Any, *more: Any, out: Any = None, local_dict: dict | None = None,
             global_dict: dict | None = None, order: str = "K",
             casting: str = "same_kind", _depth: int = 1, **numexpr_options: Any):
    """Compute `expr` (an Expr, operand, numexpr-style string, histogram or records); into
    `out` when given. Several lazy results, `lazyk.evaluate(e1, e2, ...)`, give a tuple,
    computed together: histograms that read the same rows fill in one pass over the data,
    a reduction they share is computed once.

    Example: `lazyk.evaluate(2 * a + b, out=c)`, `lazyk.evaluate("2*a + b")` or
    `counts_pt, counts_eta = lazyk.evaluate(lazyk.histogram(pt, 50, (0, 100)),
    lazyk.histogram(eta, 50, (-5, 5)))`.

    Args:
        expr: a lazy expression, an array/scalar, a string (names from the dicts or the
            caller's frame), a `lazyk.histogram` (its counts) or records (`lazyk.zip`,
            `lazyk.combinations`: a lazyk array of records).
        more: more lazy results: a tuple of all results is returned. (After a string,
            mappings are `local_dict` and `global_dict`, as in
            `numexpr.evaluate(ex, local_dict)`, and an array is `out`; after an expression,
            an array to write into is given as `out=`.)
        out: NumPy or lazyk array; the result broadcasts into it as assignment does.
            Overlap with an input (other than exact aliasing) goes through a temporary.
        order: memory layout of a fresh result ('C', 'F', 'A', 'K' as NumPy): 'F' gives
            a Fortran-ordered result; 'A' / 'K' do when every input of 2 or more dims is
            Fortran-contiguous (and not C-contiguous); otherwise C order. Ignored when
            `out` is given and for ragged / option and GPU results (always C order).
            Several results take 'C' or 'F'; with 'A' / 'K' they are in C order.
        casting: NumPy casting rule for storing into `out` ('no', 'equiv', 'safe',
            'same_kind', 'unsafe'; checked on every call).
        local_dict, global_dict: mappings (or None) for a string's names; numexpr's
            positional order works too, `evaluate(string, local_dict, global_dict, out,
            order, casting)`.
        numexpr_options: numexpr's `optimization=` and `sanitize=` (accepted, no effect:
            lazyk always optimizes and never runs Python code) and `truediv=` ('auto' or
            True: `/` is true division, as in NumPy).

    Returns:
        A new NumPy array (a lazyk Array for var / option results, histogram counts as
        NumPy), or `out`; a tuple of them for several results.

    Raises:
        ValueError: `out` is read-only; an unknown `casting` or `order`.
        TypeError: `local_dict` / `global_dict` is not a mapping; `out` with several results.
        CastingError: `casting` forbids storing the result dtype into `out`.
        ShapeError: operands, or the result and `out`, do not broadcast.
        DTypeError: an operand or `out` has a dtype lazyk does not compute with (long
            double, object, str, datetime, structured).
        NotSupportedError: one fused kernel would hold more than
            `lazyk.frontend.graph.MAX_KERNEL_OPS` (10,000) operations; evaluate in parts.
    """
    if numexpr_options:
        _numexpr_options(numexpr_options)
    if isinstance(expr, str) and more and (more[0] is None or isinstance(more[0], Mapping)):
        # numexpr's order: evaluate(ex, local_dict, global_dict, out, order, casting)
        if len(more) > 5 or local_dict is not None or (len(more) > 1 and global_dict
                                                       is not None) or (len(more) > 2 and
                                                                        out is not None):
            raise TypeError("evaluate(string, local_dict, global_dict, out, order, casting) "
                            "takes each at most once, by place or by name")
        local_dict = more[0]
        global_dict = more[1] if len(more) > 1 else global_dict
        out = more[2] if len(more) > 2 else out
        order = more[3] if len(more) > 3 else order
        casting = more[4] if len(more) > 4 else casting
        more = ()
    if len(more) == 1 and out is None and isinstance(expr, str) and \
            not isinstance(more[0], (_LAZY, str)):
        out, more = more[0], ()  # evaluate(string, out): a string is evaluated alone
        if not isinstance(out, (np.ndarray, Array)):
            # (before the string's names are looked up: a misplaced argument is named first)
            raise TypeError(f"after a string, evaluate takes local_dict and global_dict "
                            f"(mappings) or out (a NumPy or lazyk array), not "
                            f"{type(out).__name__}")
    elif len(more) == 1 and out is None and not isinstance(more[0], (_LAZY, str)):
        # (an array here would be ambiguous: another result, or where to write the first)
        raise TypeError(f"evaluate takes more lazy results after its first argument, not "
                        f"an object of type {type(more[0]).__name__}: pass the array to write "
                        "into as out= (lazyk.evaluate(expr, out=a))")
    for x in more if not isinstance(expr, str) else ():
        if isinstance(x, str):
            raise TypeError("several results are lazy expressions, not strings: evaluate "
                            "a string alone, lazyk.evaluate('2*a + b')")
    if isinstance(expr, str) and isinstance(more[0] if more else None, str):
        raise TypeError(f"after a string, evaluate takes local_dict and global_dict "
                        f"(mappings) or out, not the string {more[0]!r:.40}: evaluate one "
                        "string at a time")
    if isinstance(expr, str) and more:
        raise TypeError("several results are lazy expressions, not strings: evaluate a "
                        "string alone (lazyk.evaluate('2*a + b'), its names from the "
                        "caller or from local_dict / global_dict)")
    if more or isinstance(expr, (Histogram, Records)):
        if out is not None and not more:
            raise TypeError(f"out= takes an expression's values; a {type(expr).__name__}'s "
                            "result comes back as a new array: evaluate it without out=")
        if out is not None:
            raise TypeError("out= takes one expression's result: evaluate several without "
                            "it, or one with it")
        order = launch.check_options(order, casting)
        got = evaluate_many(expr, *more)
        return _laid_out(got, order) if more else got[0]
    return evaluate_one(expr, out, local_dict, global_dict, order, casting,
                        _depth=_depth + 1)


def _numexpr_options(options: dict) -> None:
    """numexpr's options of `evaluate`: accepted where they change nothing in lazyk."""
    for key, value in options.items():
        if key not in ("optimization", "sanitize", "truediv"):
            raise TypeError(f"evaluate() got an unexpected keyword argument {key!r}")
        if key == "optimization" and value not in ("none", "moderate", "aggressive"):
            raise ValueError(f"optimization must be 'none', 'moderate' or 'aggressive', not "
                             f"{value!r:.40}")
        if key == "truediv" and value not in ("auto", True):
            raise NotSupportedError(f"truediv={value!r:.40}: lazyk's / is true division, as "
                                    "NumPy's (use // for floor division)")


def _laid_out(results: tuple, order: str) -> tuple:
    """Several results as fresh arrays, one per result (an expression given twice gives
    two), in `order` ('C' / 'F'; 'A' and 'K' keep what was computed)."""
    seen: set = set()
    out = []
    for r in results:
        if id(r) in seen:  # (the same work asked twice: computed once, copied once)
            r = r.copy() if isinstance(r, np.ndarray) else copy.deepcopy(r)
        seen.add(id(r))
        if isinstance(r, np.ndarray) and r.ndim > 1 and order in "CF":
            r = np.asarray(r, order=order)
        out.append(r)
    return tuple(out)


def evaluate_many(*items: Any) -> tuple:
    """Each item's value, in order (histograms: their counts; records: an array of
    records), the work they share run once (NumPy row work too: `rows_memo`)."""
    with rows_memo():
        return _evaluate_many(items)


def _weights_fit(h: Histogram) -> None:
    """ShapeError where the values would stretch to the weights' rows (a row of one value
    against a row of three weights counted that value three times): the weights broadcast
    to the values, never the values to the weights (numpy.histogram takes weights of the
    values' shape)."""
    k = None if h.weights is None else stretched_axis(h.x, h.weights)
    if k is not None:
        raise ShapeError(
            f"histogram of values ({h.x.type}) with weights ({h.weights.type}): a row "
            f"of one value at axis {k} meets a row of another number of weights: the "
            "weights broadcast to the values (one weight per value, or a row of one "
            "weight per row of values), never the values to the weights")


def _evaluate_many(items: tuple) -> tuple:
    if all(type(x) is Histogram for x in items):  # (a pass kept bound to its arrays)
        got = bound_histograms(list(items))
        if got is not None:
            return tuple(got)
    rouse(most_rows(getattr(x.x if isinstance(x, Histogram) else x, "env", {})
                    for x in items))  # (the workers spin while this plans)
    results: list = [None] * len(items)
    hists: dict = {}  # one pass for the histograms whose bins are counted over one shape
    for i, x in enumerate(items):
        if isinstance(x, Histogram):
            x.reread()  # (edges from the data: read now)
            _weights_fit(x)
            hists.setdefault(x.kept_index()[0].shape, []).append(i)
    for group in hists.values():
        hs = [items[i] for i in group]
        counts = fill_histograms(hs)
        if counts is None:  # their bins computed first (the work they share once), counted
            weighted = [h for h in hs if h.weights is not None]
            got = evaluate_many(*[_nowhere_if_empty(h.index()) for h in hs],
                                *[_nowhere_if_empty(h.weight()) for h in weighted])
            weights = dict(zip(map(id, weighted), got[len(hs):]))
            counts = fill_histograms(hs, [(i, weights.get(id(h))) for h, i in zip(hs, got)])
        for i, c in zip(group, counts):
            results[i] = c
    exprs = {i: as_expr(x) for i, x in enumerate(items)
             if not isinstance(x, (Histogram, Records))}
    exprs = _shared_reductions_once(exprs)
    done: dict = {}
    for i, x in enumerate(items):
        if isinstance(x, Records):
            results[i] = x.eval()
        elif i in exprs:
            key = (exprs[i].node, tuple(sorted(map(id, exprs[i].env.values()))))
            if key not in done:
                done[key] = launch.evaluate(exprs[i])
            results[i] = done[key]
    return tuple(results)


def _nowhere_if_empty(index: Expr) -> Expr:
    """A histogram's bin index with its min / max folds computed first, a result that folds
    nothing missing (its value counts nowhere, as Awkward's None) instead of a ValueError."""
    if not any(n.op == REDUCE_OP and n.arg[0] in ("min", "max") for n in toposort(index.node)):
        return index
    return inline_reductions(index.node, index, empty_missing=True)[1]


def _shared_reductions_once(exprs: dict) -> dict:
    """The expressions with each reduction that two of them read (below their roots)
    computed once and read as an array."""
    seen: dict = {}
    for e in exprs.values():
        if REDUCE_OP not in graph_ops(e.node):
            continue
        for n in toposort(e.node):
            if n.op == REDUCE_OP and n is not e.node:
                seen.setdefault(id(n), [n, set()])[1].add(id(e))
    shared = {k for k, (_, users) in seen.items() if len(users) > 1}
    if not shared:
        return exprs
    # positions only gathers from a selection read (`best_picks`): in whole rows
    best = {id(e): best_positions(e.node) for e in exprs.values()}
    best = {k for k in shared if all(k in best[u] for u in seen[k][1])}
    env: dict = {}
    for e in exprs.values():
        env.update(e.env)
    values: dict = {}
    whole: set = set()

    def visit(node, srcs):
        if id(node) not in shared:
            got = gathered_from_whole_rows(node, srcs, whole)
            return got if got is not None else \
                node.replace(srcs=srcs) if srcs != node.srcs else node
        key = id(node)
        if key not in values:  # (sources first: a shared one inside is a leaf now)
            node = node.replace(srcs=srcs) if srcs != node.srcs else node
            used = set(input_names(node))
            ex = Expr(node, {k: v for k, v in env.items() if k in used})
            value = whole_row_positions(ex) if key in best else None
            in_whole_rows = value is not None
            value = launch.evaluate(ex) if value is None else value
            leaf = wrap_array(value) if isinstance(value, np.ndarray) else as_expr(value)
            if in_whole_rows:
                whole.add(leaf.node)
            env.update(leaf.env)
            values[key] = leaf
        return values[key].node

    out = {}
    for i, e in exprs.items():
        root = rewrite(e.node, visit)
        new_env = dict(e.env)
        for leaf in values.values():
            new_env.update(leaf.env)
        used = set(input_names(root))
        out[i] = Expr(root, {k: v for k, v in new_env.items() if k in used})
    return out


__all__ = ["evaluate", "evaluate_many"]
