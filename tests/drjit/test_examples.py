"""The Dr.Jit-layer examples run and pass their own checks (figures go to a temporary
folder; without matplotlib the elliptic_k figure is skipped, as the script says)."""
import importlib.util
import os

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def load(name):
    spec = importlib.util.spec_from_file_location(name, os.path.join(ROOT, "examples",
                                                                     f"{name}.py"))
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def test_normalize_op():
    assert load("normalize_op").main(n=8)


def test_elliptic_k(tmp_path):
    assert load("elliptic_k").main(str(tmp_path), points=12)


def test_ballistic(tmp_path):
    pytest.importorskip("PIL")
    assert load("ballistic").main(str(tmp_path))
    assert (tmp_path / "ballistic.gif").exists()
    assert len(os.listdir(tmp_path / "ballistic")) == 16
