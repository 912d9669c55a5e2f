"""The Numba kernels of the package, apart from the Python API that validates their input.

LOW LEVEL: nothing here checks its input. The PL-Rank-3 estimate, from the bottom up:
``streams`` (a random stream per query, lattice noise), ``samplers`` (Plackett-Luce rankings
and their normalisers), ``plrank_terms`` (the estimator's terms, one ranking at a time),
``wide_margins`` (the same in log space, for queries whose margins span more than the weights
can hold) and ``plrank`` (every query group in parallel: the estimate, its rankings, the pooled
halves). Beside them ``deep_weights``: the weights ``deep_weight`` puts on the gradient of the
documents placed deep; ``fairness``: the fairness-of-exposure estimate and targets; ``policy``:
the exposure of a policy's sampled rankings; ``metrics``: per-query metric values and the NDCG
normalisation of rewards; ``pirank``: the PiRank surrogate; ``cuda``: the estimate on a GPU
(numba-cuda, imported only when ``device="cuda"`` asks for it). The modules import only NumPy
and Numba (and one another).
"""
