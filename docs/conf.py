"""Sphinx configuration of the gbdt_plrank documentation (``make docs`` builds it into site/)."""

from __future__ import annotations

import os
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")

import gbdt_plrank  # noqa: E402

project = "gbdt_plrank"
author = "gbdt_plrank developers"
copyright = "gbdt_plrank developers"
release = version = gbdt_plrank.__version__

extensions = [
    "sphinx.ext.autodoc",
    "sphinx.ext.mathjax",
    "numpydoc",
    "myst_parser",
    "sphinx_copybutton",
]

source_suffix = {".rst": "restructuredtext", ".md": "markdown"}
root_doc = "index"
exclude_patterns = ["_build", "_static"]

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

myst_enable_extensions = ["dollarmath", "colon_fence"]
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
