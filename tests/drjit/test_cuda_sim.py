"""The Dr.Jit layer on the CUDA target (Numba's CUDA simulator in CI; a real GPU with
WEFT_TEST_REAL_CUDA=1): checkpointed loops and custom ops on device arrays give the same
results as on the CPU."""
import numpy as np
import pytest

import weft as wp

from . import test_custom, test_loop

pytestmark = pytest.mark.cudasim


def test_loop_gradients_on_cuda():
    with wp.ScopedDevice("cuda"):
        ref, _, _ = test_loop.grads(5, "full")
        for k, schedule in ((2, "uniform"), (2, "revolve")):
            got, _, tape = test_loop.grads(5, "loop", checkpoints=k, schedule=schedule)
            assert tape.launches[0].in_arrays[0].device.is_cuda
            for r, g in zip(ref, got):
                assert np.allclose(r, g, rtol=1e-12, atol=1e-15)
        test_loop.test_forward_mode_equals_full_recording(4, 2, "uniform")


def test_custom_ops_on_cuda():
    with wp.ScopedDevice("cuda"):
        for op in (test_custom.SinMul, test_custom.AutoSinMul):
            test_custom.test_reverse_mode(op)
            test_custom.test_forward_mode_through_tape(op)
        test_custom.test_several_outputs()
