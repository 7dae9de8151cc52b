"""Shared fixtures. A test that needs a tool (torch, the bundled binary) skips
where the tool is missing, except under CI=true, where it fails: CI installs
every tool these tests need (.ci/run)."""

import importlib
import os

import pytest


def need(module: str):
    """Imports module, or skips the test (fails under CI=true) when it is missing."""
    try:
        return importlib.import_module(module)
    except ImportError as e:
        if os.environ.get("CI") == "true":
            pytest.fail("%s is required under CI=true: %s" % (module, e))
        pytest.skip("%s is not installed" % module)
