"""The Python blocks of the README and the documentation pages, as the tests run them.

A page's fenced ``python`` blocks run in order in one namespace, so that a later block may use
what an earlier one built. A block directly preceded by the line ``<!-- illustrative: why -->``
is shown, not run (it needs a cluster, a long run or the reader's own data); every other block
runs. Training lengths are cut so that a page runs in seconds: :data:`SHORTER` rewrites each
``num_boost_round=``, ``n_estimators=`` and ``n_samples=`` literal.
"""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
README = ROOT / "README.md"
PAGES = sorted((ROOT / "docs").rglob("*.md"))

ILLUSTRATIVE = re.compile(r"<!-- illustrative: .+ -->")
_FENCE = re.compile(r"^```python\n(.*?)^```", re.MULTILINE | re.DOTALL)

#: (pattern, replacement): the page's training lengths, cut for the tests.
SHORTER = (
    (re.compile(r"\bnum_boost_round=\d+"), "num_boost_round=2"),
    (re.compile(r"\bn_estimators=\d+"), "n_estimators=2"),
    (re.compile(r"\bn_samples=\d+"), "n_samples=4"),
)


def python_blocks(path: Path) -> list[str]:
    """The runnable ``python`` blocks of a Markdown file, in order, training lengths cut."""
    text = path.read_text(encoding="utf-8")
    blocks = []
    for match in _FENCE.finditer(text):
        before = text[: match.start()].rstrip("\n").rsplit("\n", 1)[-1]
        if ILLUSTRATIVE.fullmatch(before.strip()):
            continue
        code = match.group(1)
        for pattern, replacement in SHORTER:
            code = pattern.sub(replacement, code)
        blocks.append(code)
    return blocks


def run_blocks(path: Path, blocks: list[str], namespace: dict[str, object] | None = None) -> dict:
    """Run ``blocks`` of ``path`` in one namespace (tracebacks name the file) and return it."""
    namespace = {"__name__": "__main__"} if namespace is None else namespace
    for code in blocks:
        exec(compile(code, str(path), "exec"), namespace)
    return namespace
