"""What a pip user gets: the wheel, installed into a fresh environment, run from another folder.

The wheel is built from a copy of the sources (no network: ``--no-build-isolation`` uses the
setuptools installed here) and installed with ``--no-deps`` into a new virtual environment that
reaches the current environment's dependencies through a ``.pth`` line, so nothing is
downloaded; the package itself comes from the wheel alone.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import sysconfig
import zipfile
from pathlib import Path

import pytest
from doc_blocks import README, ROOT, python_blocks

from gbdt_plrank._util.schema import tomllib
from gbdt_plrank.harness import bundled

#: What a wheel is built from (everything else in the repository is not part of it).
SOURCES = ("pyproject.toml", "README.md", "LICENSE", "configs", "gbdt_plrank")


def test_the_package_list_names_every_package() -> None:
    """pyproject.toml lists the packages (so that configs/ can ship as gbdt_plrank/configs): a
    new folder of the package must be added there, or the wheel would lack it."""
    listed = set(
        tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]["packages"]
    )
    package = ROOT / "gbdt_plrank"
    folders = {
        ".".join(("gbdt_plrank", *path.relative_to(package).parts))
        for path in [package, *package.rglob("*")]
        if path.is_dir() and path.name != "__pycache__"
    }
    assert folders - listed == set(), "add these to [tool.setuptools] packages"
    assert listed - folders == {"gbdt_plrank.configs", "gbdt_plrank.configs.spaces"}


def test_the_package_copy_of_the_configurations_wins(tmp_path: Path, monkeypatch) -> None:
    """An installed wheel reads its own gbdt_plrank/configs; a checkout reads configs/."""
    assert bundled.config_folder() == ROOT / "configs"
    package = tmp_path / "site" / "gbdt_plrank"
    (package / "configs").mkdir(parents=True)
    (package / "configs" / "mine.toml").write_text("# mine\n")
    monkeypatch.setattr(bundled, "_PACKAGE", package)
    assert bundled.config_folder() == package / "configs"
    assert list(bundled.bundled_configs()) == ["mine"]
    (package / "configs" / "mine.toml").unlink()
    with pytest.raises(FileNotFoundError, match="the bundled configurations are missing"):
        bundled.config_folder()


def _build_wheel(tmp_path: Path) -> Path:
    source = tmp_path / "source"
    source.mkdir()
    ignore = shutil.ignore_patterns("__pycache__", "*.pyc", "*.nbi", "*.nbc")
    for name in SOURCES:
        if (ROOT / name).is_dir():
            shutil.copytree(ROOT / name, source / name, ignore=ignore)
        else:
            shutil.copy2(ROOT / name, source / name)
    dist = tmp_path / "dist"
    subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "wheel",
            "--quiet",
            "--no-deps",
            "--no-build-isolation",
            "--no-index",
            "--wheel-dir",
            str(dist),
            str(source),
        ],
        check=True,
        capture_output=True,
        text=True,
    )
    (wheel,) = dist.glob("gbdt_plrank-*.whl")
    return wheel


def _fresh_environment(tmp_path: Path, wheel: Path) -> Path:
    """A virtual environment with the wheel installed; the current environment's packages are
    reachable (appended to sys.path), its own gbdt_plrank is not (its editable finder is a
    .pth file, which a plain path line does not run)."""
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True)
    python = venv / "bin" / "python"
    purelib = subprocess.run(
        [str(python), "-c", "import sysconfig; print(sysconfig.get_path('purelib'))"],
        check=True,
        capture_output=True,
        text=True,
    ).stdout.strip()
    here = {sysconfig.get_path("purelib"), sysconfig.get_path("platlib")}
    Path(purelib, "current-environment.pth").write_text("\n".join(sorted(here)) + "\n")
    subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "--python",
            str(python),
            "install",
            "--quiet",
            "--no-deps",
            "--no-index",
            str(wheel),
        ],
        check=True,
        capture_output=True,
        text=True,
    )
    return venv


def _reuse_compiled_kernels(venv: Path) -> None:
    """Give the installed kernels the repository's Numba cache, if the tests here have written
    one: the sources are the same files, and Numba takes a cache entry only when the source's
    modification time and size match, so the installed sources get the repository's times.
    Without a cache the kernels compile (about 90 s on 2 cores); with it the run takes seconds."""
    here = ROOT / "gbdt_plrank" / "_kernels"
    (installed,) = venv.glob("lib/python*/site-packages/gbdt_plrank/_kernels")
    cache = installed / "__pycache__"
    cache.mkdir(exist_ok=True)
    for compiled in [*here.glob("__pycache__/*.nbi"), *here.glob("__pycache__/*.nbc")]:
        shutil.copy2(compiled, cache / compiled.name)
    for source in here.glob("*.py"):
        stat = source.stat()
        os.utime(installed / source.name, ns=(stat.st_atime_ns, stat.st_mtime_ns))


@pytest.mark.slow
def test_the_wheel_runs_the_readme_the_demo_and_a_verbose_fit_from_another_folder(
    tmp_path: Path,
) -> None:
    wheel = _build_wheel(tmp_path)
    names = zipfile.ZipFile(wheel).namelist()
    assert "gbdt_plrank-0.1.0.dist-info/licenses/LICENSE" in names
    assert "gbdt_plrank/configs/demo.toml" in names and "gbdt_plrank/data/mq2008/S1.txt.gz" in names
    venv = _fresh_environment(tmp_path, wheel)
    _reuse_compiled_kernels(venv)
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    env = {**os.environ, "PYTHONPATH": "", "OMP_NUM_THREADS": "1"}

    def run(*argv: str) -> str:
        done = subprocess.run(argv, cwd=elsewhere, env=env, capture_output=True, text=True)
        assert done.returncode == 0, done.stderr[-3000:]
        return done.stdout

    where = run(
        str(venv / "bin" / "python"), "-c", "import gbdt_plrank; print(gbdt_plrank.__file__)"
    )
    assert where.startswith(str(venv)), where  # the wheel's copy, not the repository's
    examples = "\n".join(python_blocks(README))  # the README's blocks, their rounds cut to 2
    printed = run(str(venv / "bin" / "python"), "-c", examples)
    assert "test NDCG@10" in printed and "XGBoost test NDCG@5" in printed, printed
    verbose_fit = (
        "from gbdt_plrank import PLRankRanker, load_dataset\n"
        "d = load_dataset('mq2008')\n"
        "PLRankRanker(n_estimators=3, N=10, verbose=True).fit(d.train.X, d.train.y, "
        "group=d.train.qid, eval_set=[(d.vali.X, d.vali.y, d.vali.qid)])\n"
    )
    printed = run(str(venv / "bin" / "python"), "-c", verbose_fit)
    assert [line.split("\t")[0] for line in printed.splitlines()] == ["[0]", "[1]", "[2]"], printed
    printed = run(
        str(venv / "bin" / "gbdt-plrank"),
        "compare",
        "demo",
        "--rounds",
        "2",
        "--seeds",
        "1",
        "--k",
        "5",
        "--methods",
        "plrank-xgb,lambdamart-xgb",
    )
    assert "the bundled configuration 'demo'" in printed and "| plrank-xgb |" in printed
    assert (elsewhere / "runs" / "demo" / "results.md").is_file()
