"""Sphinx configuration of the gbdt_plrank documentation (``make docs`` builds it into site/)."""

from __future__ import annotations

import re
import sys
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT), str(ROOT / "docs")]

import api_names  # noqa: E402
from sphinx import addnodes  # noqa: E402
from sphinx.transforms import SphinxTransform  # noqa: E402

import gbdt_plrank  # noqa: E402

project = "gbdt_plrank"
author = "gbdt_plrank developers"
copyright = "gbdt_plrank developers"
release = version = gbdt_plrank.__version__

extensions = [
    "sphinx.ext.autodoc",
    "sphinx.ext.autosummary",
    "sphinx.ext.mathjax",
    "numpydoc",
    "myst_nb",  # Markdown (MyST) and the example notebooks, shown as saved, never executed
    "sphinx_copybutton",
]

source_suffix = {".rst": "restructuredtext", ".md": "myst-nb", ".ipynb": "myst-nb"}
root_doc = "index"
exclude_patterns = ["_build", "_static", "_templates"]
templates_path = ["_templates"]

# A broken cross-reference is an error (the build runs with -W --keep-going).
nitpicky = True
# Third-party names the docstrings mention: the build is offline, so there is no intersphinx
# inventory to resolve them against. Each is named here; anything else must resolve.
nitpick_ignore = [
    ("py:class", "numpy.ndarray"),
    ("py:func", "numpy.unique"),
    ("py:func", "sklearn.metrics.ndcg_score"),
]

# The docstrings carry the types (numpydoc); type hints in signatures would be unresolved links.
autodoc_typehints = "none"
autodoc_member_order = "bysource"
autodoc_default_options = {"members": True}
numpydoc_show_class_members = False
numpydoc_class_members_toctree = False
# Attributes become targets, so that :attr: references to them resolve.
numpydoc_attributes_as_param_list = False
numpydoc_validation_checks: set[str] = set()

# The API reference: one page per public module (its ``__all__``: a summary table), and one per
# public class, function and constant, generated at each build into api/generated/ (git-ignored).
# A name exported by several modules is documented once (see api_names.py); a reference to one
# of its other paths, or to the private module that defines it, leads to that page.
autosummary_generate = True
API_DOCUMENTED, API_ALIASES = api_names.pages()
# A public name that no other public module uses, written without its module, is found too.
_SHORT = [(name, f"{mod}.{name}") for mod, names in API_DOCUMENTED.items() for name in names]
_COUNTS = Counter(name for name, _ in _SHORT)
SHORT_NAMES = {name: full for name, full in _SHORT if _COUNTS[name] == 1}
PRIVATE = re.compile(r"(^|[.-])_[a-z]")
autosummary_context = {
    "api_documented": API_DOCUMENTED,
    "api_aliased": {
        mod: [(n, API_ALIASES[f"{mod}.{n}"]) for n in names if f"{mod}.{n}" in API_ALIASES]
        for mod, names in api_names.public_names().items()
    },
}

myst_enable_extensions = ["dollarmath", "colon_fence"]
nb_execution_mode = "off"
myst_heading_anchors = 3

html_theme = "furo"
html_title = f"gbdt_plrank {release}"
# MathJax is copied into the site (``make docs`` fetches it into _static/mathjax), so that the
# math renders with no network; the path is relative to _static.
html_static_path = ["_static"]
mathjax_path = "mathjax/tex-mml-chtml.js"
html_css_files = ["custom.css"]
# The copy button leaves out prompts and output.
copybutton_prompt_text = r">>> |\.\.\. |\$ "
copybutton_prompt_is_regexp = True


def _public_target(target: str) -> str | None:
    """The documented path a reference's target leads to: another path of a documented object
    (or of its members), or a public name written without its module (``dcg`` in the docstring
    of ``ndcg``, which is documented under ``gbdt_plrank``); None when it is neither."""
    for alias, documented in API_ALIASES.items():
        if target == alias or target.startswith(alias + "."):
            return documented + target[len(alias) :]
    head, _, rest = target.partition(".")
    if head in SHORT_NAMES:
        return SHORT_NAMES[head] + (f".{rest}" if rest else "")
    return None


def _resolve_alias(app, env, node, contnode):
    """Resolve a reference that :func:`_public_target` leads to a documented page."""
    if node.get("refdomain") != "py" or (target := _public_target(node["reftarget"])) is None:
        return None
    node["reftarget"] = target
    return env.domains["py"].resolve_xref(
        env, node["refdoc"], app.builder, node["reftype"], target, node, contnode
    )


class PrivateOutOfIndex(SphinxTransform):
    """Drop the general index's entries of private names (a component that starts with ``_``),
    before the index collects them."""

    default_priority = 800

    def apply(self, **kwargs):
        for node in self.document.findall(addnodes.index):
            node["entries"] = [e for e in node["entries"] if not PRIVATE.search(e[2])]


def _documented_elsewhere(app, what, name, obj, skip, options):
    """Skip a private module's member that the public pages document
    (``_training.options.PLRankOptions`` is ``gbdt_plrank.PLRankOptions``): each object is
    documented once."""
    defined = f"{getattr(obj, '__module__', '')}.{getattr(obj, '__qualname__', '')}"
    return True if defined in API_ALIASES else None


def setup(app):
    app.connect("autodoc-skip-member", _documented_elsewhere)
    app.connect("missing-reference", _resolve_alias)
    app.add_transform(PrivateOutOfIndex)
