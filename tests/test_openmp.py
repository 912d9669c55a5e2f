"""Importing the package sets OMP_WAIT_POLICY=PASSIVE, and warns when a booster came first."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest


def _import(code: str, **env: str) -> subprocess.CompletedProcess:
    clean = {k: v for k, v in os.environ.items() if k != "OMP_WAIT_POLICY"}
    return subprocess.run(
        [sys.executable, "-W", "always", "-c", code],
        env={**clean, **env},
        capture_output=True,
        text=True,
        check=True,
    )


@pytest.mark.parametrize("booster", ["xgboost", "lightgbm"])
def test_a_booster_imported_first_without_the_policy_is_warned_about(booster):
    out = _import(f"import {booster}, gbdt_plrank, os; print(os.environ['OMP_WAIT_POLICY'])")
    assert out.stdout.strip() == "PASSIVE"
    assert (
        f"RuntimeWarning: {booster} was imported before gbdt_plrank without OMP_WAIT_POLICY "
        f"set" in out.stderr
    )
    assert out.stderr.startswith("<string>:1:")  # points at the user's import


@pytest.mark.parametrize(
    ("code", "env", "policy"),
    [
        ("import gbdt_plrank, xgboost, lightgbm", {}, "PASSIVE"),  # package first
        ("import xgboost, gbdt_plrank", {"OMP_WAIT_POLICY": "ACTIVE"}, "ACTIVE"),  # user's choice
    ],
)
def test_no_warning_when_the_policy_is_in_place(code, env, policy):
    out = _import(code + "; import os; print(os.environ['OMP_WAIT_POLICY'])", **env)
    assert out.stdout.strip() == policy and "RuntimeWarning" not in out.stderr
