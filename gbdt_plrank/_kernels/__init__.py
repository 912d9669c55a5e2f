"""The Numba kernels of the package, apart from the Python API that validates their input.

LOW LEVEL: nothing here checks its input. ``plrank``: Plackett-Luce sampling and the PL-Rank-3
gradient and Hessian estimate; ``fairness``: the fairness-of-exposure estimate and targets;
``policy``: the exposure of a policy's sampled rankings; ``metrics``: per-query metric values;
``pirank``: the PiRank surrogate; ``cuda``: the estimate on a GPU (numba-cuda, imported only
when ``device="cuda"`` asks for it). The modules import only NumPy and Numba (and one another).
"""
