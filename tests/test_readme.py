"""The README's Python examples run, and every line whose comment shows a value shows the
value it gives (a lazyk repr, a dshape, a signature, or a list for `.to_list()`)."""
import re
from pathlib import Path

import numpy as np
import pytest

README = Path(__file__).resolve().parent.parent / "README.md"
BLOCKS = re.findall(r"```python\n(.*?)```", README.read_text(), re.S)


def shown(value) -> list[str]:
    """The ways a README comment may show `value` (whitespace normalised)."""
    texts = [repr(value)]
    if hasattr(value, "to_list"):
        texts.append(str(value.to_list()))
    if hasattr(value, "tolist"):
        texts.append(str(value.tolist()))
    if isinstance(value, np.ndarray):
        texts.append(np.array2string(value, separator=", ").join(["array(", ")"]))
    return [" ".join(t.split()) for t in texts]


def claim(comment: str) -> str | None:
    """The comment when it opens with a value (then maybe prose after it), else None."""
    text = " ".join(comment.split())
    return text if text.startswith(("array(", "dshape(", "'(", "[")) else None


@pytest.mark.parametrize("k", [k for k, b in enumerate(BLOCKS) if "lazyk.dask" not in b
                               and "import dask" not in b])
def test_readme_example_runs_and_shows_its_values(k):
    pytest.importorskip("pyarrow")
    pytest.importorskip("awkward")
    ns: dict = {"np": np}
    for block in BLOCKS[:k + 1]:  # later examples use the names earlier ones made
        if "lazyk.dask" in block or "import dask" in block:
            continue
        for line in block.splitlines():
            code, _, comment = line.partition("  # ")
            code = code.strip()
            if not code or code.startswith("#"):
                continue
            want = claim(comment)
            error, _, message = comment.partition(": ")
            if error.endswith("Error"):  # an example of an error: its class and message
                with pytest.raises(Exception) as info:
                    exec(code, ns)
                assert type(info.value).__name__ == error
                assert message.split(" + ")[0] in str(info.value)
                continue
            if want is None or block is not BLOCKS[k]:
                exec(code, ns)
                continue
            got = eval(code, ns)
            assert any(want.startswith(t) for t in shown(got)), \
                f"README: {code}  # {comment}\n  gives {shown(got)}"
