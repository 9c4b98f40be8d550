"""`import parsers` is cheap in an isolated child: a public name's module is imported on first
use, so a child that only reads its settings and picks a route does not import the streaming
engine. Run in a child, where nothing has imported parsers yet."""

from __future__ import annotations

import importlib
import sys

import pytest


@pytest.mark.isolated()
def test_import_parsers_imports_what_is_used_and_nothing_more() -> None:
    assert "parsers" not in sys.modules  # a fresh child: the server never imports it
    import parsers

    assert "parsers.api" not in sys.modules
    assert parsers.load_settings({}).version == "auto"
    assert parsers.select_route
    assert "parsers.api" not in sys.modules  # routing alone
    assert parsers.parse("hello").content == "hello"
    assert "parsers.api" in sys.modules


@pytest.mark.isolated()
def test_every_public_name_is_its_modules_object_and_submodules_resolve() -> None:
    import parsers

    exports: dict[str, str] = parsers._EXPORTS  # type: ignore[attr-defined]
    assert sorted(exports) == sorted(parsers.__all__)
    for name, module in exports.items():
        assert getattr(parsers, name) is getattr(importlib.import_module(module), name)
    assert set(parsers.__all__) <= set(dir(parsers))
    assert parsers.policy.plan_request  # a submodule after a bare `import parsers`
    with pytest.raises(AttributeError, match="no attribute 'no_such_name'"):
        parsers.no_such_name  # noqa: B018
    with pytest.raises(AttributeError):
        parsers._private  # noqa: B018
