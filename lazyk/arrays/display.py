"""How arrays print: repr's values (abbreviated like NumPy past 1000 elements) and the
notebook's HTML table."""
from __future__ import annotations

import html
from typing import Any

import numpy as np

from lazyk import types as T

HTML_ROWS = 10  # a notebook shows this many rows: the first and the last half of them


_MISSING_HTML = '<i style="color:#888">missing</i>'


def html_view(a: Any) -> str:
    """`_repr_html_` of an array: a header (type, shape) and a table of its first and last
    rows, each abbreviated like `repr`; only the rows shown are read."""
    shape = "(" + ", ".join("var" if n is None else str(n) for n in a.shape) + \
        ("," if len(a.shape) == 1 else "") + ")"
    head = (f"<b>lazyk.Array</b> type <code>{html.escape(str(a.type))}</code>, shape "
            f"<code>{shape}</code>")
    if not a.ndim:
        return f"<div>{head}<br><code>{_html_value(a.to_list())}</code></div>"
    n = len(a)
    half = HTML_ROWS // 2
    index = list(range(n)) if n <= HTML_ROWS else \
        list(range(half)) + [None] + list(range(n - half, n))
    rows = []
    for i in index:
        if i is None:
            rows.append(f'<tr><th></th><td>... {n - 2 * half:,} more rows ...</td></tr>')
            continue
        value = _html_value(a[i].to_list())
        rows.append(f'<tr><th style="text-align:right">{i}</th>'
                    f'<td style="text-align:left"><code>{value}</code></td></tr>')
    return f"<div>{head}<table>{''.join(rows)}</table></div>"


def _html_value(v: Any, depth: int = 0) -> str:
    """A value as HTML: lists abbreviated (first and last 3 past 6), None as missing."""
    if v is None:
        return _MISSING_HTML
    if isinstance(v, list):
        if depth > 2 and v:
            return "[...]"
        items = v[:3] + [...] + v[-3:] if len(v) > 6 else v
        return "[" + ", ".join("..." if x is ... else _html_value(x, depth + 1)
                               for x in items) + "]"
    if isinstance(v, dict):
        return "{" + ", ".join(f"{html.escape(str(k))}: {_html_value(x, depth + 1)}"
                               for k, x in v.items()) + "}"
    if isinstance(v, tuple):
        return "(" + ", ".join(_html_value(x, depth + 1) for x in v) + ")"
    return html.escape(repr(v))


def format_values(a: Any) -> str:
    """Values for repr, abbreviated like NumPy (first and last 3) past 1000 elements;
    float32 and float16 values in their own shortest digits (0.1, not 0.10000000149...)."""
    elem = a.type.dtype
    elem = elem.elem if isinstance(elem, T.Option) else elem
    single = {"float32": np.float32, "float16": np.float16}.get(getattr(elem, "name", None))
    fmt = repr if single is None else \
        (lambda x: str(single(x)) if isinstance(x, float) else repr(x))
    if a._np is not None and a._np.size > 1000:
        return _abbrev_np(a._np, a.type, fmt)
    if a._np is None and isinstance(a.type, T.FixedDim) and a.type.size > 1000:
        # (only the rows shown are read)
        parts = [_abbrev(v, True, fmt) for v in a[:3].to_list()] + ["..."] + \
            [_abbrev(v, True, fmt) for v in a[-3:].to_list()]
        return "[" + ", ".join(parts) + "]"
    try:
        values = a.to_list()
    except ValueError:  # (bytes of a fixed_string that are not text: shown as NumPy does)
        if a._np is None:
            raise
        return _abbrev_np(a._np, a.type, fmt)
    return _abbrev(values, _count(values) > 1000, fmt)


def _count(v: Any) -> int:
    return sum(_count(x) for x in v) if isinstance(v, list) else 1


def _abbrev(v: Any, short: bool, fmt=repr) -> str:
    if isinstance(v, list):
        parts = [_abbrev(x, short, fmt)
                 for x in (v[:3] + v[-3:] if short and len(v) > 6 else v)]
        if short and len(v) > 6:
            parts[3:3] = ["..."]
        return "[" + ", ".join(parts) + "]"
    return fmt(v)


def _plain(v: Any) -> Any:
    """A record field's value as Python data (its sub-arrays as lists)."""
    return v.tolist() if isinstance(v, np.ndarray) else v


def _abbrev_np(arr: np.ndarray, t: T.Type, fmt=repr) -> str:
    if arr.ndim == 0:
        if arr.dtype.names is None:
            return fmt(arr.tolist())
        values = [_plain(v) for v in arr.tolist()]
        return repr(tuple(values)) if isinstance(t.dtype, T.Tuple) else \
            repr(dict(zip(arr.dtype.names, values)))
    idx = list(range(3)) + [None] + list(range(len(arr) - 3, len(arr))) if len(arr) > 6 \
        else list(range(len(arr)))
    parts = ["..." if i is None else _abbrev_np(arr[i], t, fmt) for i in idx]
    return "[" + ", ".join(parts) + "]"
