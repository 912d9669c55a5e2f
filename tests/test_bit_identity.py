"""Faster kernels, same numbers: the outputs are pinned to digests.

The sampled rankings, and so the estimates and the trained models, must not change when the kernels
get faster. ``GOLDEN`` holds the sha256 of the outputs of :func:`_outputs`: the estimate at cut-off
20 (the ranker's default at K=10) and N=100, queries of 1 to 400 documents, every sampler, margins
far apart, the fairness objective, and the policy's sampled rankings.
``python tests/test_bit_identity.py`` prints the digests.

The "far apart" entry (margins spanning thousands) was re-pinned when such queries got their
exact path (the log-space race and ratio terms): before it, every document more than 300 below
a query's top was treated as tied with the others there. Every other entry is unchanged.
"""

from __future__ import annotations

import hashlib
import json

import numpy as np

from gbdt_plrank import plrank_grad_hess
from gbdt_plrank._kernels import plrank, samplers

GOLDEN = "5fad74a0df546cbb4c9c2f07c7dce57ec7f5d57855e9603ea24649521a181062"


def _dataset() -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    rng = np.random.default_rng(22)
    sizes = [1, 2, 3, 7, 19, 20, 21, 33, 64, 65, 120, 400]
    ptr = np.concatenate(([0], np.cumsum(sizes)))
    scores = rng.normal(scale=1.5, size=ptr[-1])
    labels = rng.integers(0, 5, size=ptr[-1]).astype(float)
    return scores, labels, ptr


def _digest(*arrays: np.ndarray) -> str:
    return hashlib.sha256(b"".join(a.tobytes() for a in arrays)).hexdigest()[:16]


def _outputs() -> dict[str, str]:
    scores, labels, ptr = _dataset()
    out = {}
    for sampler in ("auto", "tree", "race"):
        for K in (1, 10, 20, 40):
            for N in (7, 100):
                est = plrank_grad_hess(
                    scores, labels, ptr, K=K, N=N, hessian="raw", sampler=sampler, seed=3, n_jobs=2
                )
                out[f"{sampler} K={K} N={N}"] = _digest(*est)
    far = scores * 200.0
    out["far apart"] = _digest(
        *plrank_grad_hess(far, labels, ptr, K=20, N=100, hessian="raw", seed=1)
    )
    fair = plrank_grad_hess(
        scores, labels, ptr, K=20, N=9, fairness="expected-exposure", fairness_weight=0.5, seed=2
    )
    out["fairness"] = _digest(*fair)
    rankings = np.full(((ptr.shape[0] - 1) * 6, 20), -7, dtype=np.int64)
    plrank.sample_groups(scores, ptr, 20, 6, 4, 0, rankings)
    out["sample_groups"] = _digest(rankings)
    return out


def _golden() -> str:
    listing = json.dumps(sorted(_outputs().items()))
    return hashlib.sha256(listing.encode()).hexdigest()


def test_outputs_are_bit_identical_to_before_the_speed_work():
    assert _golden() == GOLDEN


def test_unchecked_descent_with_its_fallback_finds_the_checked_leaf():
    """Targets on every boundary of partly emptied trees, at margins up to e^-40 apart.

    Rounding sometimes carries the unchecked descent into an empty subtree; the fallback must then
    give :func:`_tree_find`'s leaf, as the unchecked descent does everywhere else.
    """
    rng = np.random.default_rng(0)
    fallbacks = 0
    for trial in range(1000):
        D = int(rng.integers(2, 12))
        e = np.exp(rng.uniform(-40.0, 0.0, size=D)) if trial % 2 else rng.uniform(size=D)
        e[rng.random(D) < 0.4] = 0.0
        if not e.any():
            e[0] = 1.0
        P = samplers._tree_size(D)
        tree = np.empty(2 * P)
        samplers._tree_build(tree, e, P)
        edges = np.cumsum(e)
        targets = np.concatenate((edges, np.nextafter(edges, 0.0), rng.random(8) * tree[1]))
        for x in targets[targets < tree[1]]:
            leaf, y = 1, x
            while leaf < P:
                leaf, y = samplers._descend(tree, leaf, y)
            fallbacks += tree[leaf] == 0.0
            ranking = np.empty(1, dtype=np.int64)
            samplers._take(tree.copy(), P, leaf, x, ranking, 0)
            assert ranking[0] == samplers._tree_find(tree, P, x)
    assert fallbacks > 0


if __name__ == "__main__":
    print(_golden())
