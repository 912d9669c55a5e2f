"""The measurements behind the defaults and the research notes, one script per page it feeds.

Each script is named after the documentation page that cites its tables (``levers.py`` for
docs/research/levers.md, ``neural_setups.py`` for docs/research/neural.md, ...) and writes them
where that page says, under ``benchmarks/results/``. Run them from the repository root, e.g.
``python -m research.levers --help``; nothing here is imported by the library.
"""
