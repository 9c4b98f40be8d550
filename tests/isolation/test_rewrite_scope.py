"""pytest rewrites the plugin's package, not the project's libraries shipped beside it."""

from __future__ import annotations

import importlib.metadata
import sys

import pytest
from _pytest.assertion.rewrite import AssertionRewritingHook

from buildtool.isolation import rewrite_scope
from buildtool.isolation.plugin import REWRITE_SCOPE


def test_the_library_packages_are_the_distributions_other_top_level_packages() -> None:
    top_level = importlib.metadata.distribution("sidecar-forge").read_text("top_level.txt")
    assert top_level is not None
    assert set(top_level.split()) - {"buildtool"} == set(rewrite_scope.LIBRARY_PACKAGES)


def _loader_of(name: str) -> object:
    __import__(name)
    return sys.modules[name].__loader__


def test_in_a_session_libraries_load_as_usual_and_the_plugin_stays_marked(
    request: pytest.FixtureRequest,
) -> None:
    hook = request.config.pluginmanager.rewrite_hook
    assert isinstance(hook, AssertionRewritingHook)
    assert "buildtool" in hook._must_rewrite
    if not request.config.stash[REWRITE_SCOPE]:  # --isolated-plain: pytest's own choice
        assert set(rewrite_scope.LIBRARY_PACKAGES) <= hook._must_rewrite
        return
    assert not set(rewrite_scope.LIBRARY_PACKAGES) & hook._must_rewrite
    for name in ("parsers.engine", "sidecar.sse"):
        assert not isinstance(_loader_of(name), AssertionRewritingHook), name


@pytest.mark.isolated(env={"REWRITE_SCOPE_PROBE": "1"})
def test_an_isolated_child_imports_the_libraries_without_the_rewrite_hook(
    request: pytest.FixtureRequest,
) -> None:
    used = request.config.getoption("isolated_accelerators").split(",")
    assert request.config.stash[REWRITE_SCOPE] == ("rewrite_scope" in used)
    for name in ("parsers.engine", "parsers.families.hermes", "sidecar.sse"):
        rewritten = isinstance(_loader_of(name), AssertionRewritingHook)
        assert rewritten == ("rewrite_scope" not in used), name


def test_limit_leaves_other_hooks_and_other_names_alone() -> None:
    class Plain:  # pytest's stand-in under --assert=plain
        pass

    rewrite_scope.limit(Plain())

    class Fake:
        def __init__(self) -> None:
            self._must_rewrite = {"parsers", "sidecar", "xdist"}
            self._marked_for_rewrite_cache = {"parsers.api": True, "xdist.plugin": True}

    fake = Fake()
    rewrite_scope.limit(fake)
    assert fake._must_rewrite == {"xdist"}
    assert fake._marked_for_rewrite_cache == {"xdist.plugin": True}
