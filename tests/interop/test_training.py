"""A PyTorch network trained through a weft simulation (``examples/interop_training.py``): the
gradient of the loss with respect to every weight, which passes through weft's adjoint kernel,
against float64 central differences; and training lowers the loss."""
import importlib.util
import os

import pytest

pytest.importorskip("torch")

EXAMPLE = os.path.join(os.path.dirname(__file__), "..", "..", "examples", "interop_training.py")


@pytest.fixture(scope="module")
def example():
    spec = importlib.util.spec_from_file_location("interop_training", EXAMPLE)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_gradient_through_the_weft_step_matches_central_differences(example):
    net, goal = example.make_network(), example.targets(n=8)
    assert example.gradient_check(net, goal) < 1e-4


def test_training_lowers_the_miss(example):
    net, goal = example.make_network(), example.targets()
    history = example.train(net, goal, iters=30)
    assert history[-1] < 0.1 * history[0]
