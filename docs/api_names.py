"""Where the API reference documents each public name (read by ``conf.py`` and ``check_site.py``).

The public modules are :data:`PUBLIC_MODULES`, their public names their ``__all__``. A name that
several of them export (``gbdt_plrank.ndcg`` is ``gbdt_plrank.metrics.ndcg``) gets one page,
under the first module of :data:`PUBLIC_MODULES` that exports it; the other paths are its
aliases, and a reference to an alias, or to the private module that defines the object, leads
to that page.
"""

from __future__ import annotations

import inspect
from importlib import import_module

#: The public modules, in the order the reference shows them.
PUBLIC_MODULES = (
    "gbdt_plrank",
    "gbdt_plrank.datasets",
    "gbdt_plrank.metrics",
    "gbdt_plrank.clicks",
    "gbdt_plrank.ranker",
    "gbdt_plrank.dask",
    "gbdt_plrank.nn",
    "gbdt_plrank.tuning",
    "gbdt_plrank.harness",
)


def public_names() -> dict[str, list[str]]:
    """Each public module's names that are not modules, in ``__all__`` order."""
    names = {}
    for modname in PUBLIC_MODULES:
        module = import_module(modname)
        names[modname] = [n for n in module.__all__ if not inspect.ismodule(getattr(module, n))]
    return names


def pages() -> tuple[dict[str, list[str]], dict[str, str]]:
    """``(documented, aliases)``: each module's names documented on a page of their own, in
    ``__all__`` order, and every other path of the same objects, mapped to the documented one
    (other public paths, and the defining private module's path)."""
    documented: dict[str, list[str]] = {}
    aliases: dict[str, str] = {}
    home: dict[object, str] = {}
    for modname, names in public_names().items():
        module = import_module(modname)
        documented[modname] = []
        for name in names:
            obj = getattr(module, name)
            path = f"{modname}.{name}"
            # Constants (tuples, strings) are not unique objects: only classes and functions
            # are followed across modules.
            key: object = id(obj) if inspect.isclass(obj) or callable(obj) else path
            if key in home:
                aliases[path] = home[key]
                continue
            home[key] = path
            documented[modname].append(name)
            defined = f"{getattr(obj, '__module__', modname)}.{getattr(obj, '__qualname__', name)}"
            if defined != path and key != path:
                aliases[defined] = path
    return documented, aliases
