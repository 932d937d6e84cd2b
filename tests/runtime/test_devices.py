"""Devices and CUDA arrays (under the simulator in CI), and the no-GPU error."""
import numpy as np
import pytest

import weft as wp
from tests.cuda import without_simulator

pytestmark = pytest.mark.cudasim


def test_cpu_device_basics():
    assert str(wp.get_device()) == "cpu"
    assert wp.get_device("cpu").is_cpu
    with wp.ScopedDevice("cpu") as d:
        assert wp.get_device() is d
    wp.synchronize()


def test_cuda_array_round_trip_and_interfaces():
    host = np.arange(6, dtype=np.float32).reshape(2, 3)
    a = wp.array(host, dtype=wp.vec3, device="cuda", requires_grad=True)
    assert str(a.device) == "cuda:0" and a.device.is_cuda
    np.testing.assert_array_equal(a.numpy(), host)
    assert a.grad.device == a.device and not a.grad.numpy().any()
    with pytest.raises(AttributeError):
        a.__array_interface__
    cpu = a.to("cpu")
    assert cpu.device.is_cpu and cpu.__array_interface__["shape"] == (2, 3)
    back = cpu.to("cuda:0")
    np.testing.assert_array_equal(back.numpy(), host)
    z = wp.zeros(2, dtype=wp.vec3, device="cuda")
    wp.copy(z, cpu)
    np.testing.assert_array_equal(z.numpy(), host)
    z.fill_(1.5)
    np.testing.assert_array_equal(z.numpy(), np.full((2, 3), 1.5))
    with wp.ScopedDevice("cuda"):
        assert wp.zeros(3, dtype=float).device.is_cuda


def test_unknown_device_name():
    with pytest.raises(wp.LaunchError, match="unknown device"):
        wp.zeros(3, dtype=float, device="tpu")


def test_cuda_without_gpu_or_simulator_is_a_clear_error():
    r = without_simulator("import weft as wp\n"
                           "try:\n    wp.zeros(3, dtype=float, device='cuda')\n"
                           "except wp.LaunchError as e:\n    print('ERR', e)\n"
                           "print('avail', wp.is_cuda_available())\n")
    if "avail True" in r.stdout:
        pytest.skip("a real CUDA device is present")
    assert "ERR device 'cuda': no CUDA device was found" in r.stdout, r.stdout + r.stderr


def test_no_driver_means_no_cuda_without_importing_numba_cuda():
    # a CPU program asking about GPUs (Warp's examples do) does not import numba.cuda, 0.8 s,
    # to learn that no driver library loads; with one, numba-cuda answers as before
    r = without_simulator(
        "import sys, weft as wp\nfrom weft.runtime import device\n"
        "print(wp.is_cuda_available(), wp.get_cuda_device_count(), wp.get_preferred_device(),"
        " wp.get_devices(), device._driver_loads(), 'numba.cuda' in sys.modules)\n"
        "from numba import cuda\nprint(cuda.is_available())\n")
    assert r.returncode == 0, r.stderr[-2000:]
    first, numba_says = r.stdout.split("\n")[:2]
    if "True" not in first.split()[-2]:  # no driver library: the answer without numba.cuda
        assert first.split() == ["False", "0", "cpu", "['cpu']", "False", "False"], r.stdout
        assert numba_says == "False"  # (as numba-cuda says once imported)
    else:
        assert first.split()[0] == numba_says, r.stdout
