"""Check the built site for what Sphinx does not warn about.

A line of Markdown that starts with ``>`` becomes a quote (``<blockquote>``), and text such as
``MRR@10`` becomes a ``mailto:`` link; neither is ever meant in these pages. Every public name
must have its page in the API reference (``api_names.py`` says where), and the general index
must name no private module. Run after the build: ``python docs/check_site.py site`` exits
non-zero and names every slip, missing page and private index entry.
"""

from __future__ import annotations

import re
import sys
from pathlib import Path

DOCS = Path(__file__).resolve().parent
sys.path[:0] = [str(DOCS.parent), str(DOCS)]

import api_names  # noqa: E402

SLIPS = ("<blockquote", "mailto:")


def slips(site: Path) -> list[str]:
    """Return ``"page: slip"`` for every slip in the site's HTML pages."""
    found = []
    for page in sorted(site.rglob("*.html")):
        text = page.read_text(encoding="utf-8")
        found += [f"{page.relative_to(site)}: {s}" for s in SLIPS if s in text]
    return found


def missing_api_pages(site: Path) -> list[str]:
    """Return the page of every public module and documented name that the site lacks."""
    documented, _ = api_names.pages()
    pages = [f"{mod}.html" for mod in documented]
    pages += [f"{mod}.{name}.html" for mod, names in documented.items() for name in names]
    return [f"api/generated/{p}" for p in pages if not (site / "api" / "generated" / p).is_file()]


def private_index_entries(site: Path) -> list[str]:
    """Return the private names (``gbdt_plrank._x``) that the general index lists."""
    index = site / "genindex.html"
    text = index.read_text(encoding="utf-8") if index.is_file() else ""
    return sorted(set(re.findall(r"gbdt_plrank(?:\.\w+)*\._\w+", text)))


def main(argv: list[str]) -> int:
    if len(argv) != 1 or not Path(argv[0]).is_dir():
        print("usage: python docs/check_site.py SITE_DIR (a built site's folder)", file=sys.stderr)
        return 2
    site = Path(argv[0])
    found = slips(site) + [f"{p}: missing" for p in missing_api_pages(site)]
    found += [f"genindex.html: {name}" for name in private_index_entries(site)]
    for line in found:
        print(line, file=sys.stderr)
    return 1 if found else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
