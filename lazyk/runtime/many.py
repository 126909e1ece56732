"""Several results at once (`lazyk.evaluate(e1, e2, ...)`)."""
from __future__ import annotations

from lazyk.runtime import launch


def evaluate_many(*exprs) -> tuple:
    """Each expression's value, in order."""
    return tuple(launch.evaluate(e) for e in exprs)
