"""Small utilities every layer uses: input checks, option schemas, threads, optional imports.

``validation``: the input checks and their messages; ``schema``: the pydantic base of every
options and configuration model; ``threads``: the OpenMP wait policy and ``n_jobs``;
``compat``: optional dependencies with a clear message when one is missing; ``cache``: values
computed once per data object a booster hands over; ``docs``: numpydoc entries written once and
filled into the docstrings that share them; ``seeds``: seeds drawn from a ``random_state``;
``frames``: the stack level that points a warning at the user's code. None imports another
module of the package.
"""
