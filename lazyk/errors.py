"""Every error lazyk raises on purpose. Each subclasses a builtin so callers can catch broadly."""
from __future__ import annotations


class TypeParseError(ValueError):
    """A type string (or expression string) that does not parse.

    Carries `.line` and `.column` (1-based), the source `.text`, and a message that
    shows the offending line with a caret under the problem.
    """

    def __init__(self, message: str, text: str = "", line: int = 1, column: int = 1):
        self.reason = message
        self.text = text
        self.line = line
        self.column = column
        super().__init__(self._render())

    def _render(self) -> str:
        lines = self.text.split("\n")  # lines as the parser counts them: "\n" ends one
        src = lines[self.line - 1] if 0 < self.line <= len(lines) else ""
        # (tabs kept before the caret: it lands under the column however tabs expand)
        caret = "".join(c if c == "\t" else " " for c in src[:max(self.column - 1, 0)])
        caret += " " * max(self.column - 1 - len(src), 0) + "^"
        return f"{self.reason} (line {self.line}, column {self.column})\n  {src}\n  {caret}"


class ExprParseError(TypeParseError):
    """An expression string that does not parse, or names an unknown variable or function."""


class TypeMatchError(TypeError):
    """A concrete type does not match a pattern or signature (names both types)."""


class ShapeError(ValueError):
    """Operands whose shapes do not broadcast; the message names operands, axis and sizes."""


class DTypeError(TypeError):
    """An operation applied to operand types it does not support (names op and types)."""


class CastingError(TypeError):
    """A conversion forbidden by the requested casting rule ('safe', 'same_kind', ...)."""


class ArrayConstructionError(ValueError):
    """Python data that does not fit the requested or inferred type (names the index path)."""


class BindError(ValueError):
    """Kernel data could not be built for these arrays (sizes, strides, bounds, read-only)."""


class CompileError(RuntimeError):
    """LLVM / libNVVM / ptxas rejected generated code. Always a lazyk bug; the IR is attached."""


class NotSupportedError(NotImplementedError):
    """A valid request lazyk does not implement yet (e.g. `categorical`, an op on the GPU)."""


class DeviceError(RuntimeError):
    """No usable GPU, driver or CUDA toolchain; or operands on different devices."""


class UnsupportedOperandError(NotSupportedError, DTypeError):
    """An operator or function applied to a type lazyk cannot compute with (strings, bytes,
    records, datetimes, long double, ...); names the operation and the types. It is both a
    NotSupportedError and a DTypeError (a TypeError, as NumPy raises for missing loops)."""
