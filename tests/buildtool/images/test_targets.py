"""Target names on the command line."""

from __future__ import annotations

import pytest

from buildtool.images.targets import TARGETS, image_tag, parse_targets


def test_no_names_means_all_three() -> None:
    assert parse_targets([]) == TARGETS == ("sidecar-vllm", "sidecar-sglang", "sidecar-trtllm")


def test_short_and_long_names_deduplicated_in_order() -> None:
    assert parse_targets(["sglang", "sidecar-vllm", "vllm"]) == ("sidecar-sglang", "sidecar-vllm")


def test_unknown_name_is_named() -> None:
    with pytest.raises(ValueError, match="'tgi'"):
        parse_targets(["tgi"])


def test_image_tag() -> None:
    assert image_tag("sidecar-vllm") == "sidecar-forge/sidecar-vllm:dev"
    assert image_tag("sidecar-vllm", "reg/x", "1.0") == "reg/x/sidecar-vllm:1.0"
