r"""The OpenMP wait: each ranker class's fit time under each wait, on an idle and a busy machine.

Every boosting round alternates the booster's OpenMP threads with the objective's Numba
threads. How long an OpenMP thread spins after a parallel region before it sleeps decides how
much the two runtimes slow each other, and how much each region of the boosters pays to wake
its threads. This benchmark fits ``XGBRanker()``, ``LGBMRanker()``, ``PLRankRanker()`` and
``PLRankRanker(backend="lightgbm")`` at their defaults (no eval set, ``n_jobs=2``) on the first
fold (draw) of each dataset, in a fresh process per wait:

- ``GOMP_SPINCOUNT=300000``: GNU libgomp's own default, a long spin;
- ``OMP_WAIT_POLICY=PASSIVE``: sleep at once;
- the package's (nothing set: ``import gbdt_plrank`` sets
  :data:`gbdt_plrank._util.threads.OPENMP_WAIT`, a short spin).

With ``--busy P``, P processes that spin on the CPU run beside the fits (a shared machine).
Each cell is the fastest of ``--repeats`` fits, in seconds.

    python benchmarks/openmp_wait.py
    python benchmarks/openmp_wait.py --data mq2008 --busy 2 --repeats 1 \
        --out benchmarks/results/openmp_wait_busy.md

It writes ``benchmarks/results/openmp_wait.md`` (``--out``).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
from pathlib import Path

if __package__ in (None, ""):  # run as a script: this checkout's package, not an installed one
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import gbdt_plrank  # noqa: F401  # isort: skip  (first: sets the OpenMP wait before a booster loads)

from benchmarks.first_call import rankers
from benchmarks.harness import command_line, environment, markdown_table
from gbdt_plrank._util.threads import USER_WAIT
from gbdt_plrank.cli._argtypes import text_list

__all__ = ["RANKERS", "WAITS", "main", "measure_wait", "spinner"]

#: Each wait's name and the variables its process starts with (none: the package's own).
WAITS = {
    "GOMP_SPINCOUNT=300000 (libgomp's default)": {"GOMP_SPINCOUNT": "300000"},
    "OMP_WAIT_POLICY=PASSIVE": {"OMP_WAIT_POLICY": "PASSIVE"},
    "the package's (GOMP_SPINCOUNT=1000)": {},
}

#: The ranker classes at their defaults, as the first call fits them
#: (:func:`benchmarks.first_call.fit_predict`).
RANKERS = tuple(rankers([]))

_FIT = """
import json, os, time
import gbdt_plrank
from benchmarks.first_call import fit_predict, rankers
train = gbdt_plrank.load_dataset({data!r}, fold=1).train
fit_predict("xgboost", {{"n_estimators": 2}}, train, train, seed=1, threads=2)  # kernels loaded
seconds = {{}}
for _ in range({repeats}):
    for name, (kind, params) in rankers([]).items():
        _, took = fit_predict(kind, params, train, train, seed=1, threads=2)
        seconds[name] = min(seconds.get(name, float("inf")), took)
wait = {{k: os.environ[k] for k in {user_wait!r} if k in os.environ}}
print(json.dumps({{"seconds": seconds, "wait": wait}}))
"""


#: A busy process: it spins on the CPU until the process that started it ends, however that
#: ends (killed included), so that an interrupted benchmark leaves no spinner behind.
_SPIN = """
import os, sys
parent = int(sys.argv[1])  # given, not read here: the parent may be gone before this line runs
while os.getppid() == parent:
    for _ in range(100_000):
        pass
"""


def spinner() -> subprocess.Popen:
    """Start one process of :data:`_SPIN` beside this one."""
    return subprocess.Popen([sys.executable, "-c", _SPIN, str(os.getpid())])


def measure_wait(
    data: str, wait: dict[str, str], *, repeats: int, busy: int
) -> tuple[dict[str, float], dict[str, str]]:
    """The fastest of ``repeats`` fits of each of :data:`RANKERS` on ``data``'s first fold (a
    dataset name or folder of :func:`gbdt_plrank.load_dataset`), in a process started with
    ``wait`` (and none of :data:`USER_WAIT` inherited), with ``busy`` spinning processes beside
    it; and the variables of :data:`USER_WAIT` that process trained with."""
    env = {k: v for k, v in os.environ.items() if k not in USER_WAIT} | wait
    code = _FIT.format(data=data, repeats=repeats, user_wait=USER_WAIT)
    spinners = [spinner() for _ in range(busy)]
    try:
        done = subprocess.run(
            [sys.executable, "-c", code],
            env=env,
            capture_output=True,
            text=True,
            check=True,
            cwd=Path(__file__).resolve().parent.parent,
        )
    finally:
        for spinning in spinners:
            spinning.kill()
            spinning.wait()
    result = json.loads(done.stdout.strip().splitlines()[-1])
    return result["seconds"], result["wait"]


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data", type=text_list, default="mq2008,mq2007-agg,web-nonlinear")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--busy", type=int, default=0, help="spinning processes beside the fits")
    parser.add_argument("--out", default="benchmarks/results/openmp_wait.md")
    args = parser.parse_args(argv)
    rows = []
    for data in args.data:
        for wait_name, wait in WAITS.items():
            seconds, seen = measure_wait(data, wait, repeats=args.repeats, busy=args.busy)
            print(data, wait_name, seen, seconds, flush=True)
            ran = " ".join(f"{k}={v}" for k, v in seen.items())
            rows.append([data, wait_name, ran, *(f"{seconds[name]:.2f}" for name in RANKERS)])
    env = environment()
    machine = "a busy" if args.busy else "an idle"
    command = command_line("python benchmarks/openmp_wait.py", argv)
    body = (
        f"Written by `{command}`: {env['cpu_count']} cores, 2 threads per fit"
        + (f", {args.busy} spinning processes beside the fits" if args.busy else "")
        + f", load average {env['load_average'][0]:.1f} at the end, xgboost {env['xgboost']}. "
        f"Seconds of a fit at the defaults on the first fold, the fastest of {args.repeats}.\n\n"
        + markdown_table(["data", "OpenMP wait", "the fits' variables", *RANKERS], rows)
    )
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(f"# The OpenMP wait, on {machine} machine\n\n{body}\n")
    print(out.read_text())


if __name__ == "__main__":
    main()
