"""Importing the package sets a short OpenMP wait, and warns when a booster came first."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from gbdt_plrank._util.threads import OPENMP_WAIT, USER_WAIT

SHOW = f"; import os; print(*(os.environ.get(k) for k in {('OMP_WAIT_POLICY', *OPENMP_WAIT)!r}))"
#: What the package sets: no wait policy, a short spin (libgomp), no block time (LLVM/Intel).
SET = "None 1000 0"


def _import(code: str, **env: str) -> subprocess.CompletedProcess:
    clean = {k: v for k, v in os.environ.items() if k not in USER_WAIT}
    return subprocess.run(
        [sys.executable, "-W", "always", "-c", code + SHOW],
        env={**clean, **env},
        capture_output=True,
        text=True,
        check=True,
    )


@pytest.mark.parametrize("booster", ["xgboost", "lightgbm"])
def test_a_booster_imported_first_without_a_wait_is_warned_about(booster):
    out = _import(f"import {booster}, gbdt_plrank")
    assert out.stdout.strip() == SET
    assert (
        f"RuntimeWarning: {booster} was imported before gbdt_plrank without an OpenMP wait set "
        f"(OMP_WAIT_POLICY, GOMP_SPINCOUNT, KMP_BLOCKTIME)" in out.stderr
    )
    assert "set GOMP_SPINCOUNT=1000 KMP_BLOCKTIME=0 in the environment" in out.stderr
    assert out.stderr.startswith("<string>:1:")  # points at the user's import


@pytest.mark.parametrize(
    ("code", "env", "shown"),
    [
        ("import gbdt_plrank, xgboost, lightgbm", {}, SET),  # package first
        ("import xgboost, gbdt_plrank", {"OMP_WAIT_POLICY": "PASSIVE"}, "PASSIVE None None"),
        ("import lightgbm, gbdt_plrank", {"GOMP_SPINCOUNT": "50"}, "None 50 None"),
        ("import xgboost, gbdt_plrank", {"KMP_BLOCKTIME": "5"}, "None None 5"),
    ],
)
def test_no_warning_and_the_users_wait_kept_when_one_is_in_place(code, env, shown):
    out = _import(code, **env)
    assert out.stdout.strip() == shown and "RuntimeWarning" not in out.stderr
