"""PL-Rank with a neural network: a scikit-learn ranker whose scores are an MLP's outputs.

Install with ``pip install 'gbdt_plrank[nn]'`` after a CPU build of torch
(``pip install torch --index-url https://download.pytorch.org/whl/cpu``), or a plain ``torch``
requirement pulls the CUDA wheels (about 3 GB).

.. code-block:: python

    from gbdt_plrank.nn import PLRankMLPRanker

    ranker = PLRankMLPRanker(K=5, n_layers=2, units=32, max_epochs=200, random_state=0)
    ranker.fit(X, y, group=qid, eval_set=[(X_val, y_val, qid_val)], early_stopping_rounds=20)
    ranker.score(X_test, y_test, group=qid_test)    # NDCG@5 of the ranking by score
"""

from .._util.compat import require

require("torch", purpose="gbdt_plrank.nn")

from ._ranker import PLRankMLPRanker  # noqa: E402

__all__ = ["PLRankMLPRanker"]
