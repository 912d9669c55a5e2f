"""PL-Rank on a Dask cluster: ``xgboost.dask`` and ``lightgbm.dask`` with whole-query partitions.

Install with ``pip install 'gbdt_plrank[dask]'`` (on the client and on every worker).

.. code-block:: python

    from distributed import Client, LocalCluster
    from gbdt_plrank.dask import DaskPLRankRanker, align_queries

    client = Client(LocalCluster(n_workers=2, threads_per_worker=1))
    X, y, qid = align_queries(X, y, qid)   # dask arrays; no query spans two partitions
    ranker = DaskPLRankRanker(K=10, n_estimators=500).fit(X, y, group=qid)
    scores = ranker.predict(X_test)        # a dask array
    local = ranker.to_local()              # a PLRankRanker with the same booster
"""

from .._util.compat import require

require("dask.array", purpose="gbdt_plrank.dask")
require("distributed", purpose="gbdt_plrank.dask")

from ._align import align_queries, query_keys  # noqa: E402
from ._keyed import KeyedPLRankObjective, keyed_plrank_objective  # noqa: E402
from ._ranker import DaskPLRankRanker  # noqa: E402

__all__ = [
    "DaskPLRankRanker",
    "KeyedPLRankObjective",
    "align_queries",
    "keyed_plrank_objective",
    "query_keys",
]
