"""The PL-Rank objective on a GPU (``device="cuda"``) against XGBoost's GPU LambdaMART.

On synthetic MSLR-shaped data (136 features; by default about 233 thousand and 3.57 million
documents, the sizes of an MSLR-WEB30K fold's validation set and of the whole dataset), with
K=10, N=100, ``hessian="abs"``, XGBoost ``device="cuda"``, ``tree_method="hist"``, depth 6:

- the GPU objective's call ``obj(preds, dtrain)`` (XGBoost's float32 margins uploaded as they
  are and widened on the device, gradient and Hessian left
  on the device), at round-0 margins and at the margins after the timed rounds;
- one whole PL-Rank round on the GPU (``Booster.update(dtrain, i, fobj=obj)``: XGBoost's
  prediction, its download, the objective and the tree), and XGBoost's tree alone on fixed
  device gradients (``Booster.boost``);
- one XGBoost GPU ``rank:ndcg`` round (``Booster.update``), the reference of the ratios;
- the CPU objective on the same margins (``sampler="auto"`` and ``"race"``, all cores);
- how far the GPU estimate is from the CPU's with ``sampler="race"`` on the same random streams
  (equal to rounding: the largest difference relative to the largest entry).

The aims: an objective call at most 0.5 times, and a whole round at most 1.5 times, a GPU
``rank:ndcg`` round at 3.57 million documents. Times are wall-clock medians after a warm-up call
(:func:`benchmarks.harness.measure`), the GPU's work synchronised before the clock stops. Without
a CUDA GPU (or without numba-cuda, or with an XGBoost built without CUDA) the script stops
with a message saying which.

    python benchmarks/gpu_objective.py [--queries 2000 29750] [--rounds 5] [--out DIR]
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

# gbdt_plrank first: its import sets the OpenMP wait before xgboost loads OpenMP.
import gbdt_plrank  # noqa: E402  # isort: skip
import numpy as np  # noqa: E402
import xgboost  # noqa: E402

from benchmarks import harness, synthetic  # noqa: E402
from benchmarks.bench_round import _time_rounds  # noqa: E402
from gbdt_plrank._training.gpu import check_device, to_host  # noqa: E402
from gbdt_plrank._util.compat import MissingDependencyError  # noqa: E402

K, N = 10, 100
PARAMS = {"device": "cuda", "tree_method": "hist", "max_depth": 6, "seed": 0}


def gpu_or_exit() -> Any:
    """``numba.cuda`` when numba-cuda, a GPU and a CUDA build of XGBoost are there; else exit."""
    try:
        check_device("cuda", sampler="race", fairness=None)
    except (MissingDependencyError, RuntimeError) as err:
        sys.exit(f"gpu_objective.py measures on a CUDA GPU and cannot run here: {err}")
    if not xgboost.build_info().get("USE_CUDA"):
        sys.exit("gpu_objective.py needs an XGBoost built with CUDA (the PyPI wheel for Linux).")
    from numba import cuda

    return cuda


def measure_size(cuda: Any, n_queries: int, rounds: int, budget: float) -> dict[str, Any]:
    """Every timing of the module docstring on MSLR-shaped data of ``n_queries`` queries."""
    data = synthetic.mslr_like(n_queries=n_queries)
    dtrain = data.dmatrix()

    def on_gpu(obj: Any, margins: np.ndarray) -> Any:
        return lambda: (obj(margins, dtrain), cuda.synchronize())

    gpu_obj = gbdt_plrank.plrank_objective(K, N, train_K=K, device="cuda")
    zero = np.zeros(data.n_docs, dtype=np.float32)
    gpu_obj(zero, dtrain)  # compiles the kernels, uploads the training set
    t_zero = harness.measure(on_gpu(gpu_obj, zero), budget=budget)

    lambdamart = xgboost.Booster({**PARAMS, "objective": "rank:ndcg"}, [dtrain])
    ndcg = _time_rounds(lambda i: lambdamart.update(dtrain, i), rounds)

    round_obj = gbdt_plrank.plrank_objective(K, N, train_K=K, device="cuda")
    plrank = xgboost.Booster({**PARAMS, "base_score": 0.0}, [dtrain])
    full = _time_rounds(
        lambda i: (plrank.update(dtrain, i, fobj=round_obj), cuda.synchronize()), rounds
    )
    warm = np.asarray(plrank.predict(dtrain, output_margin=True), dtype=np.float32)
    t_warm = harness.measure(on_gpu(gpu_obj, warm), budget=budget)
    upload = harness.measure(  # the objective uploads XGBoost's float32 margins as they are
        lambda: (cuda.to_device(warm), cuda.synchronize()), budget=budget
    )

    grad, hess = gpu_obj(warm, dtrain)
    fixed = xgboost.Booster({**PARAMS, "base_score": 0.0}, [dtrain])
    trees = _time_rounds(lambda i: fixed.boost(dtrain, i, grad=grad, hess=hess), rounds)

    cpu = {}
    for sampler in ("auto", "race"):
        obj = gbdt_plrank.plrank_objective(K, N, train_K=K, sampler=sampler)
        obj(zero, dtrain)
        cpu[sampler] = harness.measure(lambda obj=obj: obj(warm, dtrain), budget=budget)

    # the same stream on both: round 0 of fresh objectives, on the warm margins
    g_cpu, h_cpu = gbdt_plrank.plrank_objective(K, N, train_K=K, sampler="race")(warm, dtrain)
    g_gpu, h_gpu = (
        to_host(a)
        for a in gbdt_plrank.plrank_objective(K, N, train_K=K, device="cuda")(warm, dtrain)
    )
    agreement = {
        "grad": float(np.abs(g_gpu - g_cpu).max() / np.abs(g_cpu).max()),
        "hess": float(np.abs(h_gpu - h_cpu).max() / np.abs(h_cpu).max()),
    }
    return {
        "data": data.summary(),
        "objective_round0": t_zero.as_dict(),
        "objective_warm": t_warm.as_dict(),
        "margins_upload": upload.as_dict(),
        "plrank_round": full,
        "tree_on_device_gradients": trees,
        "rank_ndcg_round": ndcg,
        "cpu_objective_auto": cpu["auto"].as_dict(),
        "cpu_objective_race": cpu["race"].as_dict(),
        "agreement_with_cpu_race": agreement,
    }


def table(results: dict[str, dict[str, Any]]) -> str:
    """One Markdown table per data size: seconds and the ratio to a GPU ``rank:ndcg`` round."""
    parts = []
    for size in results.values():
        ref = size["rank_ndcg_round"]["median"]
        rows = [
            [
                "GPU objective `obj(preds, dtrain)`, round-0 margins",
                size["objective_round0"]["median"],
            ],
            ["GPU objective, warm margins", size["objective_warm"]["median"]],
            ["  of which: uploading the margins (float32)", size["margins_upload"]["median"]],
            [
                "whole PL-Rank round on the GPU (`Booster.update`, fobj)",
                size["plrank_round"]["median"],
            ],
            [
                "XGBoost tree on device gradients (`Booster.boost`)",
                size["tree_on_device_gradients"]["median"],
            ],
            ["XGBoost GPU `rank:ndcg` round", ref],
            ["CPU objective, sampler='auto'", size["cpu_objective_auto"]["median"]],
            ["CPU objective, sampler='race'", size["cpu_objective_race"]["median"]],
        ]
        d, a = size["data"], size["agreement_with_cpu_race"]
        parts.append(
            f"### {d['documents']:,} documents, {d['queries']:,} queries, "
            f"{d['features']} features\n\n"
            + harness.markdown_table(
                ["what", "seconds", "/ GPU rank:ndcg round"],
                [[what, s, s / ref] for what, s in rows],
            )
            + f"\n\nGPU estimate against the CPU's (sampler='race', same streams): largest "
            f"difference {a['grad']:.1e} (gradient) and {a['hess']:.1e} (Hessian) of the largest "
            f"entry."
        )
    return "\n\n".join(parts)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--queries", type=int, nargs="+", default=[2000, 29750])
    parser.add_argument(
        "--rounds", type=int, default=5, help="timed boosting rounds (after round 0)"
    )
    parser.add_argument("--budget", type=float, default=3.0, help="seconds per measured cell")
    parser.add_argument("--out", type=Path, default=REPO / "benchmarks" / "results")
    args = parser.parse_args()
    cuda = gpu_or_exit()
    results = {str(q): measure_size(cuda, q, args.rounds, args.budget) for q in args.queries}
    device = cuda.get_current_device().name
    name = device.decode() if isinstance(device, bytes) else str(device)
    markdown = (
        f"## PL-Rank objective on a GPU ({name})\n\nK={K}, N={N}, hessian='abs'; XGBoost "
        f"{xgboost.__version__} device='cuda', tree_method='hist', depth 6. Medians; command: "
        f"`python benchmarks/gpu_objective.py --queries {' '.join(map(str, args.queries))}`.\n\n"
        + table(results)
    )
    harness.write_section(
        args.out,
        "gpu_objective",
        markdown,
        {"device": name, "results": results, "environment": harness.environment()},
    )


if __name__ == "__main__":
    main()
