"""What the first runs on a real GPU (an H200, stop 78) found that Numba's simulator hides, each
checked here without one:

* numba-cuda types no tuple subclass but a named one: a launch handed its kernel the launch's
  ``Blocks`` and every CUDA launch failed before it ran;
* numba-cuda's device arrays have no ``itemsize`` (the simulator's have): copying a CUDA array
  to the host, and its views, failed;
* numba-cuda's disk cache cannot pickle a kernel that links files beside its code (every tile
  kernel called the reshape helpers of ``reshape_funcs.cu`` until stop 79, whose views are
  made in place): the save raised and the launch failed;
* blocks storing one tile region run at once on a GPU (one after another in the simulator):
  each read the region's adjoint before any reset it, and the gradient counted every block's
  store (x.grad 6 where it is 2, ``tests/tiles/test_tile_store_once.py``).
"""
import warnings

import numpy as np
import pytest

import weft as wp
from tests.cuda import without_simulator


@wp.kernel
def _same_region(x: wp.array(dtype=float), out: wp.array(dtype=float)):
    t = wp.tile_load(x, shape=4)
    wp.tile_store(out, t * 2.0)


def test_a_cuda_kernel_is_handed_its_launch_dims_as_a_plain_tuple(monkeypatch):
    from weft.runtime import entries
    seen = []
    call = entries.call_once

    def spy(ck_, kind, fn, dims, values, extra=()):
        seen.append((kind, type(dims), dims))
        return call(ck_, kind, fn, dims, values, extra)
    monkeypatch.setattr(entries, "call_once", spy)
    x = wp.array(np.arange(4, dtype=np.float32), dtype=float, device="cuda")
    out = wp.zeros(4, dtype=float, device="cuda")
    wp.launch_tiled(_same_region, dim=[3], inputs=[x, out], block_dim=4, device="cuda")
    assert seen == [("forward", tuple, (3, 4))]  # (the blocks, then each block's threads)
    np.testing.assert_array_equal(out.numpy(), 2 * np.arange(4))


class _WithoutItemsize:
    """A device array as numba-cuda's: every attribute of the simulator's but ``itemsize``."""

    def __init__(self, data):
        self._wrapped = data

    def __getattr__(self, name):
        if name == "itemsize":
            raise AttributeError(name)
        return getattr(self._wrapped, name)


def test_cuda_arrays_need_no_itemsize_of_their_device_data():
    a = wp.array(np.arange(12, dtype=np.float32).reshape(4, 3), dtype=wp.vec3, device="cuda")
    a._data = _WithoutItemsize(a._data)
    assert a.is_contiguous
    flat = a.view(float)  # (the same memory as scalars)
    assert flat.shape == (4, 3)
    np.testing.assert_array_equal(a.to("cpu").numpy(), np.arange(12).reshape(4, 3))


def test_a_stores_adjoint_on_cuda_takes_each_element_atomically():
    src = _same_region.source("adjoint", target="cuda")
    assert "_wk.tile_load_reset1_into(" in src
    assert "_wk.tile_store1(adj_out" not in src  # (no separate reset another block could race)
    cpu = _same_region.source("adjoint")
    assert "tile_load_reset" not in cpu  # the CPU's blocks keep the load and the reset
    x = wp.array(np.arange(4, dtype=np.float32) + 1, dtype=float, requires_grad=True,
                 device="cuda")
    out = wp.zeros(4, dtype=float, requires_grad=True, device="cuda")
    tape = wp.Tape()
    with tape:
        wp.launch_tiled(_same_region, dim=[3], inputs=[x, out], block_dim=4, device="cuda")
    tape.backward(grads={out: wp.ones(4, dtype=float, device="cuda")})
    np.testing.assert_array_equal(x.grad.numpy(), np.full(4, 2.0))
    np.testing.assert_array_equal(out.grad.numpy(), np.zeros(4))


CACHE_CHECK = """
from weft.runtime import numba_start
numba_start._cache_only_what_pickles()
numba_start._cache_only_what_pickles()  # (once: a second call wraps nothing again)
from numba.cuda.dispatcher import NRT_LIBRARY, CUDACacheImpl

class Library:
    def __init__(self, files):
        self._linking_files = set(files)

class Kernel:
    def __init__(self, files):
        self._codelibrary = Library(files)

check = CUDACacheImpl.check_cachable
print(check(None, Kernel([])), check(None, Kernel([NRT_LIBRARY])),
      check(None, Kernel(["reshape_funcs.cu"])), check(None, Kernel([NRT_LIBRARY, "x.o"])))
"""


def test_kernels_that_link_files_are_compiled_not_cached():
    pytest.importorskip("numba.cuda")
    r = without_simulator(CACHE_CHECK)
    assert r.returncode == 0, r.stderr[-3000:]
    assert r.stdout.split() == ["True", "True", "False", "False"]


def test_a_tile_adjoint_on_a_gpu_warns_once_and_not_under_the_simulator(monkeypatch):
    from numba import config as numba_config

    from weft.runtime import entries
    ck = _same_region.compiled("cuda")
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        entries._warn_tile_adjoint_on_gpu(ck)  # the simulator: nothing to say
    monkeypatch.setattr(numba_config, "ENABLE_CUDASIM", 0)
    monkeypatch.setattr(entries, "_WARNED_TILE_ADJOINTS", set())
    with pytest.warns(RuntimeWarning, match="tile kernel '.*_same_region.*' ran on a GPU"):
        entries._warn_tile_adjoint_on_gpu(ck)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        entries._warn_tile_adjoint_on_gpu(ck)  # once per kernel


def test_a_tile_view_is_made_in_place_of_a_c_contiguous_buffer_only():
    # the intrinsic a GPU's tile code calls (numba-cuda's reshape links a CUDA C helper that its
    # cache cannot keep), compiled here for the CPU: the same IR
    import numba

    from weft.native import cuda_views

    @numba.njit
    def views(a, b):
        f = cuda_views._c_view(a, a.size)
        f[3] = 100.0                                   # writes through to a[0, 3]
        g = cuda_views._c_view(a, (a.size // 2, 2))
        h = cuda_views._c_view(b[2:6], (2, np.int32(2)))  # a slice of a 1-D buffer
        return f.shape, g.shape, g.strides, g[2, 1], h.strides, h[1, 0]

    a = np.arange(12, dtype=np.float32).reshape(3, 4)
    assert views(a, np.arange(8.0)) == ((12,), (6, 2), (8, 4), 5.0, (16, 8), 4.0)
    assert a[0, 3] == 100.0

    # not C-contiguous: no view of it is made (typing fails). In this process again: the extra
    # compile once shifted Numba's function ids under later cached kernels (stop 79's wrong
    # gradients; the ids are now random, tests/runtime/test_cached_symbols.py)
    @numba.njit
    def of_a_transpose(a):
        return cuda_views._c_view(a.T, 12)

    with pytest.raises(numba.core.errors.TypingError):
        of_a_transpose(np.zeros((3, 4), np.float32))
    if cuda_views.tile_view is not cuda_views._c_view:  # the simulator's: the same refusal
        with pytest.raises(ValueError, match="not C-contiguous"):
            cuda_views.tile_view(a.T, 12)
        assert cuda_views.tile_view(a, (2, 6))[0, 3] == 100.0
