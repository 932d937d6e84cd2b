"""The test helpers of Warp's ``warp/tests/unittest_utils.py``, for running its tests on weft.

Same names and behaviour as Warp's helpers, with devices restricted to "cpu" (weft runs on
the CPU). Only test glue lives here; no weft functionality is added or emulated. Two helpers
that drive Warp internals are reduced to their purpose: ``suppress_native_error_output`` (weft
has no native error stream), the ``kernel.module.load`` pre-load in ``add_kernel_test`` is left
out (weft logs nothing on a first launch), and ``make_isolated_kernel`` is ``wp.kernel(func)``
(weft compiles each kernel on its own, so every kernel is isolated).
"""
import contextlib
import ctypes
import ctypes.util
import functools
import importlib.util
import io
import os
import re
import subprocess
import sys
import tempfile
import unittest

import numpy as np

import warp as wp

USD_AVAILABLE = importlib.util.find_spec("pxr") is not None
test_mode = "unique_or_2x"
coverage_enabled = False

try:
    LIBC = ctypes.CDLL(ctypes.util.find_library("c"))
except OSError:
    LIBC = None


# ---- devices: the CPU only (WEFT_COMPAT_DEVICES=cuda: Numba's CUDA simulator instead, with
# NUMBA_ENABLE_CUDASIM=1, to run Warp's tests of its GPU semantics against weft's CUDA target)
_CUDA = os.environ.get("WEFT_COMPAT_DEVICES") == "cuda"


def get_cpu_test_devices():
    return [wp.get_device("cpu")] if not _CUDA else []


def get_test_devices(mode=None):
    return get_cpu_test_devices() or get_cuda_test_devices()


def get_selected_cuda_test_devices(mode=None):
    return get_cuda_test_devices()


def get_cuda_test_devices(mode=None):
    return [wp.get_device("cuda:0")] if _CUDA else []


def get_cuda_test_devices_with_mempool(mode=None):
    return []


def get_selected_cuda_test_devices_with_mempool(mode=None):
    return []


def get_cuda_device_pair_with_peer_access_support(devices=None):
    return None


def get_cuda_device_pair_with_mempool_access_support(devices=None):
    return None


def is_cuda_graph_module_load_supported(device):
    return not getattr(device, "is_cuda", False)


# Warp: CPU graph capture always allocates and loads modules, so these keep the CPU device
def get_test_devices_with_graph_capture_allocation(mode=None):
    return get_test_devices(mode)


def get_test_devices_with_cuda_graph_module_load(mode=None):
    return get_test_devices(mode)


def get_test_devices_with_graph_capture_allocation_and_cuda_graph_module_load(mode=None):
    return get_test_devices(mode)


@contextlib.contextmanager
def suppress_native_error_output():
    yield


def make_isolated_kernel(func, **kwargs):
    # weft compiles every kernel on its own, so a kernel is always isolated from its neighbours
    return wp.kernel(func, **kwargs)


# ---- output capture (file-descriptor level, as Warp's) ---------------------------------------
class StreamCapture:
    def __init__(self, stream_name):
        self.stream_name = stream_name

    def begin(self):
        if LIBC is not None:
            LIBC.fflush(None)
        self.saved = getattr(sys, self.stream_name)
        self.saved.flush()
        self.target = os.dup(self.saved.fileno())
        self.tempfile = io.TextIOWrapper(tempfile.TemporaryFile(buffering=0), encoding="utf-8",
                                         errors="replace", newline="", write_through=True)
        os.dup2(self.tempfile.fileno(), self.saved.fileno())
        setattr(sys, self.stream_name, self.tempfile)

    def end(self):
        if LIBC is not None:
            LIBC.fflush(None)
        os.dup2(self.target, self.saved.fileno())
        os.close(self.target)
        self.tempfile.seek(0)
        res = self.tempfile.buffer.read()
        self.tempfile.close()
        setattr(sys, self.stream_name, self.saved)
        return str(res.decode("utf-8"))


class StdErrCapture(StreamCapture):
    def __init__(self):
        super().__init__("stderr")


class StdOutCapture(StreamCapture):
    def __init__(self):
        super().__init__("stdout")


def synchronize_after_test(test, test_failed=False):
    wp.synchronize()


class CheckOutput:
    def __init__(self, test):
        self.test = test

    def __enter__(self):
        self.capture = StdOutCapture()
        self.capture.begin()

    def __exit__(self, exc_type, exc_value, traceback):
        try:
            synchronize_after_test(self.test, test_failed=exc_type is not None)
        finally:
            s = self.capture.end()
            if s != "":
                print(s.rstrip())
        if s != "":
            filtered = "\n".join(line for line in s.splitlines()
                                 if not (line.startswith("Module") and "load on device" in line))
            if exc_type is None and filtered.strip():
                self.test.fail(f"Unexpected output:\n'{s.rstrip()}'")


def assert_array_equal(result, expect):
    np.testing.assert_equal(result.numpy(), expect.numpy())


def assert_np_equal(result, expect, tol=0.0):
    if tol != 0.0:
        np.testing.assert_allclose(result.flatten(), expect.flatten(), atol=tol, equal_nan=True)
    else:
        np.testing.assert_array_equal(result, expect)


# ---- subprocesses (children inherit PYTHONPATH, so they see this shim too) --------------------
def run_python_subprocess(source, *args, timeout=60, hide_gpu=False, env_updates=None):
    env = os.environ.copy()
    env.update(env_updates or {})
    if hide_gpu:
        env["CUDA_VISIBLE_DEVICES"] = ""
    source = f"import resource as _r; _r.setrlimit(_r.RLIMIT_CORE, (0, 0));\n{source}"
    return subprocess.run([sys.executable, "-u", "-c", source, *args], check=False,
                          capture_output=True, text=True, timeout=timeout, env=env)


def run_test_in_subprocess(test, *, timeout=600, hide_gpu=False, env_updates=None):
    test_id = test.id()
    if os.environ.get("WARP_ISOLATED_TEST_ID") == test_id:
        return False
    env = dict(env_updates or {}, WARP_ISOLATED_TEST_ID=test_id)
    result = run_python_subprocess("import unittest as _u; _u.main(module=None)", test_id,
                                   timeout=timeout, hide_gpu=hide_gpu, env_updates=env)
    if result.returncode != 0:
        test.fail(f"Isolated test process exited with code {result.returncode}.\n"
                  f"stdout:\n{result.stdout}\nstderr:\n{result.stderr}")
    return True


# ---- test registration (as Warp's) -----------------------------------------------------------
def create_test_func(func, device, check_output, device_check=None, enable_cpu_blocks=False, **kwargs):
    @functools.wraps(func)
    def test_func(self):
        previous = getattr(wp.config, "enable_cpu_blocks", None)
        if enable_cpu_blocks:
            wp.config.enable_cpu_blocks = True
        try:
            if device_check is not None:
                device_check(self, device)
            if check_output:
                with CheckOutput(self):
                    func(self, device, **kwargs)
            else:
                func(self, device, **kwargs)
        finally:
            if enable_cpu_blocks:
                wp.config.enable_cpu_blocks = previous

    return test_func


def skip_test_func(self):
    self.skipTest("No suitable devices to run the test.")


def sanitize_identifier(s):
    s = str(s)
    return s if s.isidentifier() else re.sub(r"\W|^(?=\d)", "_", s)


def add_function_test(cls, name, func, devices=None, check_output=True, device_check=None, **kwargs):
    if devices is None:
        setattr(cls, name, create_test_func(func, None, check_output, device_check=device_check, **kwargs))
    elif isinstance(devices, list):
        if not devices:
            setattr(cls, name, skip_test_func)
        else:
            for device in devices:
                setattr(cls, name + "_" + sanitize_identifier(device),
                        create_test_func(func, device, check_output, device_check=device_check, **kwargs))
    else:
        setattr(cls, name + "_" + sanitize_identifier(devices),
                create_test_func(func, devices, check_output, device_check=device_check, **kwargs))


def add_kernel_test(cls, kernel, dim, name=None, expect=None, inputs=None, devices=None, inputs_factory=None):
    if inputs is not None and inputs_factory is not None:
        raise ValueError("Only one of `inputs` and `inputs_factory` may be provided.")

    def test_func(self, device):
        args = []
        test_inputs = inputs_factory(device) if inputs_factory is not None else inputs
        if test_inputs:
            args.extend(test_inputs)
        if expect:
            result = wp.array(expect, dtype=int, device=device)
            output = wp.zeros_like(result)
            args.append(output)
        with CheckOutput(self):
            wp.launch(kernel, dim=dim, inputs=args, device=device)
        if expect:
            assert_array_equal(output, result)

    if name is None:
        name = kernel.key
    if devices is None:
        devices = get_test_devices()
    for d in devices:
        def test_func_wrapper(test, device=d):
            test_func(test, device)
        setattr(cls, name + "_" + sanitize_identifier(d), test_func_wrapper)


def add_function_test_register_kernel(cls, name, func, devices=None, **kwargs):
    func(None, None, **kwargs, register_kernels=True)
    add_function_test(cls, name, func, devices=devices, **kwargs)
