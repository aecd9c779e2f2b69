"""Packages that are also functions: ``legalir.evaluate(...)`` and ``legalir.index(...)``.

``legalir.evaluate`` and ``legalir.index`` name both a layer of the package (``legalir/evaluate/``,
``legalir/index/``) and a function of the public API (:func:`legalir.api.evaluate`,
:func:`legalir.api.index`). Python binds a subpackage to its parent's attribute once it is
imported, so the attribute cannot stay a plain function; instead each subpackage's module object
is made callable, forwarding to the API function: ``legalir.evaluate(qrels, run, ["nDCG@10"])``
and ``legalir.evaluate.evaluate_files(...)`` both work, whatever was imported first.
"""
from __future__ import annotations

import sys
import types


def make_callable(module_name: str, api_name: str) -> None:
    """Make the module ``module_name`` callable as :mod:`legalir.api`'s ``api_name``."""

    class CallableModule(types.ModuleType):
        def __call__(self, *args, **kwargs):
            from legalir import api

            return getattr(api, api_name)(*args, **kwargs)

    CallableModule.__call__.__doc__ = f"Call :func:`legalir.api.{api_name}` (see its documentation)."
    sys.modules[module_name].__class__ = CallableModule
