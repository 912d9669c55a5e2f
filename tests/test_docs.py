"""The documentation pages' Python blocks run (training lengths cut; see ``doc_blocks``)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from doc_blocks import ILLUSTRATIVE, PAGES, python_blocks, run_blocks


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
    assert run_blocks(page, [code])["x"] == {"n_estimators": 2, "num_boost_round": 2, "n_samples": 4}


RUNNABLE = [p for p in PAGES if python_blocks(p)]


@pytest.mark.parametrize("page", RUNNABLE, ids=[p.stem for p in RUNNABLE])
def test_page_runs(page: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)  # a block that writes files writes them here
    run_blocks(page, python_blocks(page))


def test_every_public_name_is_in_the_api_reference() -> None:
    import gbdt_plrank

    dask_api = pytest.importorskip("gbdt_plrank.dask")
    nn_api = pytest.importorskip("gbdt_plrank.nn")
    text = (Path(__file__).resolve().parents[1] / "docs" / "api" / "index.rst").read_text()
    names = [f"gbdt_plrank.{n}" for n in gbdt_plrank.__all__]
    names += [f"gbdt_plrank.dask.{n}" for n in dask_api.__all__]
    names += [f"gbdt_plrank.nn.{n}" for n in nn_api.__all__]
    names += [f"gbdt_plrank.clicks.{n}" for n in gbdt_plrank.clicks.__all__]
    assert [n for n in names if not re.search(rf"{re.escape(n)}\b", text)] == []


def test_the_site_check_names_quotes_and_mail_links(tmp_path: Path) -> None:
    import importlib.util

    spec = importlib.util.spec_from_file_location(
        "check_site", Path(__file__).resolve().parents[1] / "docs" / "check_site.py"
    )
    check_site = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(check_site)
    (tmp_path / "guide").mkdir()
    (tmp_path / "index.html").write_text("<p>x &gt;= 0</p>")
    assert check_site.slips(tmp_path) == []
    (tmp_path / "guide" / "fairness.html").write_text("<blockquote><p>&gt;= 0</p></blockquote>")
    (tmp_path / "api.html").write_text('<a href="mailto:MRR@10">MRR@10</a>')
    assert check_site.slips(tmp_path) == ["api.html: mailto:", "guide/fairness.html: <blockquote"]
    assert check_site.main([str(tmp_path)]) == 1
