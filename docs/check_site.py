"""Check the built site for rendering slips that Sphinx does not warn about.

A line of Markdown that starts with ``>`` becomes a quote (``<blockquote>``), and text such as
``MRR@10`` becomes a ``mailto:`` link; neither is ever meant in these pages. Run after the build:
``python docs/check_site.py site`` exits non-zero and names every page and slip it finds.
"""

from __future__ import annotations

import sys
from pathlib import Path

SLIPS = ("<blockquote", "mailto:")


def slips(site: Path) -> list[str]:
    """Return ``"page: slip"`` for every slip in the site's HTML pages."""
    found = []
    for page in sorted(site.rglob("*.html")):
        text = page.read_text(encoding="utf-8")
        found += [f"{page.relative_to(site)}: {s}" for s in SLIPS if s in text]
    return found


def main(argv: list[str]) -> int:
    if len(argv) != 1 or not Path(argv[0]).is_dir():
        print("usage: python docs/check_site.py SITE_DIR (a built site's folder)", file=sys.stderr)
        return 2
    found = slips(Path(argv[0]))
    for line in found:
        print(line, file=sys.stderr)
    return 1 if found else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
