"""The documentation pages' Python blocks run (training lengths cut; see ``doc_blocks``)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from doc_blocks import ILLUSTRATIVE, PAGES, README, ROOT, python_blocks, run_blocks

PAGES_ROOT = ROOT / "docs"


def test_the_pages_are_found_and_some_blocks_run() -> None:
    assert any(p.name == "getting-started.md" for p in PAGES)
    assert sum(len(python_blocks(p)) for p in PAGES) >= 5


def test_illustrative_blocks_are_marked_with_a_reason(tmp_path: Path) -> None:
    page = tmp_path / "page.md"
    page.write_text(
        "<!-- illustrative: needs a cluster -->\n```python\nraise SystemExit\n```\n\n"
        "```python\nx = dict(n_estimators=500, num_boost_round=1000, n_samples=1000)\n```\n"
    )
    assert ILLUSTRATIVE.fullmatch("<!-- illustrative: needs a cluster -->")
    (code,) = python_blocks(page)
    assert run_blocks(page, [code])["x"] == {
        "n_estimators": 2,
        "num_boost_round": 2,
        "n_samples": 4,
    }


RUNNABLE = [p for p in PAGES if python_blocks(p)]
#: Pages that take long to run (``make test`` skips them, ``make test-all`` runs them), with why.
SLOW = {"examples/dask.md": "starts a cluster of two worker processes"}


@pytest.mark.parametrize(
    "page",
    [
        pytest.param(p, marks=pytest.mark.slow)
        if p.relative_to(PAGES_ROOT).as_posix() in SLOW
        else p
        for p in RUNNABLE
    ],
    ids=[p.stem for p in RUNNABLE],
)
def test_page_runs(page: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)  # a block that writes files writes them here
    run_blocks(page, python_blocks(page))


#: The most lines the README may have: a newcomer reads it in two minutes.
README_LINES = 120


def test_the_readme_is_short_and_opens_with_the_ranker_and_every_block_runs(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    lines = README.read_text(encoding="utf-8").splitlines()
    assert len(lines) <= README_LINES, f"the README has {len(lines)} lines, over {README_LINES}"
    blocks = python_blocks(README)
    assert "PLRankRanker(" in blocks[0] and ".fit(" in blocks[0]
    assert any("xgboost.train(" in b for b in blocks[1:])
    monkeypatch.chdir(tmp_path)
    namespace = run_blocks(README, blocks)
    assert namespace["ranker"].booster_ is not None and len(namespace["rankings"]) > 0


def _docs_module(name: str):
    import importlib.util

    docs = Path(__file__).resolve().parents[1] / "docs"
    spec = importlib.util.spec_from_file_location(name, docs / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_every_public_name_has_one_page_in_the_api_reference() -> None:
    import pkgutil

    import gbdt_plrank

    pytest.importorskip("gbdt_plrank.dask")
    pytest.importorskip("gbdt_plrank.nn")
    api_names = _docs_module("api_names")
    # Every public module but the command line (its guide is the CLI's --help) has its page.
    public = {f"gbdt_plrank.{m.name}" for m in pkgutil.iter_modules(gbdt_plrank.__path__)}
    public = {m for m in public if not m.rpartition(".")[2].startswith("_")}
    assert public - {"gbdt_plrank.cli"} <= set(api_names.PUBLIC_MODULES)
    index = (Path(__file__).resolve().parents[1] / "docs" / "api" / "index.rst").read_text()
    assert re.findall(r"^   (gbdt_plrank\S*)$", index, re.MULTILINE) == list(
        api_names.PUBLIC_MODULES
    )
    documented, aliases = api_names.pages()
    for modname, names in api_names.public_names().items():
        for name in names:
            path = f"{modname}.{name}"
            home = aliases.get(path, path)
            mod, _, short = home.rpartition(".")
            assert short in documented[mod], path
    # One page per object: gbdt_plrank.ndcg is gbdt_plrank.metrics.ndcg, documented once.
    assert "ndcg" in documented["gbdt_plrank"] and "ndcg" not in documented["gbdt_plrank.metrics"]
    assert aliases["gbdt_plrank.metrics.ndcg"] == "gbdt_plrank.ndcg"
    assert aliases["gbdt_plrank._training.options.PLRankOptions"] == "gbdt_plrank.PLRankOptions"


def test_the_site_check_names_missing_api_pages(tmp_path: Path) -> None:
    check_site = _docs_module("check_site")
    (tmp_path / "api" / "generated").mkdir(parents=True)
    missing = check_site.missing_api_pages(tmp_path)
    assert "api/generated/gbdt_plrank.PLRankRanker.html" in missing
    assert (
        "api/generated/gbdt_plrank.metrics.ndcg.html" not in missing
    )  # documented as gbdt_plrank.ndcg
    (tmp_path / "api" / "generated" / "gbdt_plrank.PLRankRanker.html").write_text("<p></p>")
    assert "api/generated/gbdt_plrank.PLRankRanker.html" not in check_site.missing_api_pages(
        tmp_path
    )


def test_the_site_check_names_private_index_entries(tmp_path: Path) -> None:
    check_site = _docs_module("check_site")
    (tmp_path / "genindex.html").write_text(
        "<li>ndcg() (in module gbdt_plrank)</li><li>train (gbdt_plrank.harness attribute)</li>"
    )
    assert check_site.private_index_entries(tmp_path) == []
    (tmp_path / "genindex.html").write_text(
        "<li>estimate() (in module gbdt_plrank._plrank)</li>"
        "<li>fit() (gbdt_plrank._backends._xgboost.XGBoostBackend method)</li>"
    )
    assert check_site.private_index_entries(tmp_path) == [
        "gbdt_plrank._backends._xgboost",
        "gbdt_plrank._plrank",
    ]


def test_the_site_check_names_quotes_and_mail_links(tmp_path: Path) -> None:
    check_site = _docs_module("check_site")
    (tmp_path / "guide").mkdir()
    (tmp_path / "index.html").write_text("<p>x &gt;= 0</p>")
    assert check_site.slips(tmp_path) == []
    (tmp_path / "guide" / "fairness.html").write_text("<blockquote><p>&gt;= 0</p></blockquote>")
    (tmp_path / "api.html").write_text('<a href="mailto:MRR@10">MRR@10</a>')
    assert check_site.slips(tmp_path) == ["api.html: mailto:", "guide/fairness.html: <blockquote"]
    assert check_site.main([str(tmp_path)]) == 1
