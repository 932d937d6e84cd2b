"""float32 ``tanh`` in generated CPU code: the C library's bits, computed in the kernel
(``weft/runtime/libm_tanh.py``) where this machine's ``tanhf`` is fdlibm's, the library's call
elsewhere. Either way a kernel's ``wp.tanh`` equals the library's ``tanhf`` bit for bit (Warp's
CPU code calls it)."""
import ctypes
import os
import subprocess
import sys

import numba
import numpy as np
import pytest

import weft as wp
from weft.runtime import libm_tanh

libm = ctypes.CDLL("libm.so.6") if sys.platform.startswith("linux") else None
pytestmark = pytest.mark.skipif(libm is None, reason="glibc's libm (Linux)")


@numba.njit(error_model="numpy")
def _library(x, out):  # Numba's np.tanh of a float32: a call of the library's tanhf
    for i in range(x.size):
        out[i] = np.tanh(x[i])


def _library_tanhf(x):
    out = np.empty_like(x)
    _library(x, out)
    return out


def _same_bits(a, b):
    return (a.view(np.uint32) == b.view(np.uint32)) | (np.isnan(a) & np.isnan(b))


def _inputs():
    """Every 4,099th float32 bit pattern (both signs, every binade, nan and inf included), the
    edges of fdlibm's branches and their neighbours."""
    x = np.arange(0, 2 ** 32, 4099, dtype=np.uint64).astype(np.uint32).view(np.float32)
    edges = np.array([0.0, -0.0, 2.0 ** -55, 2.0 ** -25, 0.17328679, 0.519860, 1.0, 9.010913,
                      19.4081, 22.0, 39.16, np.inf, -np.inf, np.nan, 1e-45], np.float32)
    steps = edges.view(np.uint32).astype(np.int64)[:, None] + np.arange(-3, 4)
    near = (steps % 2 ** 32).astype(np.uint32).view(np.float32).ravel()
    return np.concatenate([x, near, -near])


def test_numpy_form_is_this_machines_tanhf_where_it_is_used():
    x = _inputs()
    same = _same_bits(libm_tanh.numpy_tanhf(x), _library_tanhf(x))
    if libm_tanh.variant() == "fdlibm":
        assert same.all(), x[~same][:10]
    else:  # another C library: its bits differ somewhere among the probe inputs
        probe = libm_tanh._probe_inputs()
        assert not _same_bits(libm_tanh.numpy_tanhf(probe), _library_tanhf(probe)).all()


def test_compiled_form_is_the_numpy_form():
    """The straight-line form compiled into kernels against the numpy form (every branch of
    fdlibm's, selected), whatever this machine's library."""
    tanhf = numba.njit(libm_tanh._kernel_tanhf(), error_model="numpy")

    @numba.njit(error_model="numpy")
    def run(x, out):
        for i in range(x.size):
            out[i] = tanhf(x[i])

    x = _inputs()
    out = np.empty_like(x)
    run(x, out)
    same = _same_bits(out, libm_tanh.numpy_tanhf(x))
    assert same.all(), x[~same][:10]


@wp.kernel
def _tanh_kernel(x: wp.array(dtype=float), y: wp.array(dtype=float)):
    i = wp.tid()
    y[i] = wp.tanh(x[i])


@wp.kernel
def _tanh_tiles(x: wp.array2d(dtype=float), y: wp.array2d(dtype=float)):
    i, _lane = wp.tid()
    t = wp.tile_load(x, shape=(4, 16), offset=(0, i * 16))
    wp.tile_store(y, wp.tile_map(wp.tanh, t), offset=(0, i * 16))


def test_kernels_give_the_library_bits_and_its_gradient():
    x = _inputs()[::7][:4096]
    expected = _library_tanhf(x)
    xa = wp.array(x, dtype=float, requires_grad=True)
    y = wp.zeros(x.size, dtype=float, requires_grad=True)
    tape = wp.Tape()
    with tape:
        wp.launch(_tanh_kernel, x.size, inputs=[xa], outputs=[y])
    got = y.numpy()
    assert _same_bits(got, expected).all()
    g = np.random.default_rng(3).normal(size=x.size).astype(np.float32)
    tape.backward(grads={y: g})
    want = g * (np.float32(1.0) - expected * expected)  # d tanh = 1 - tanh^2, in float32
    finite = np.isfinite(x)
    assert _same_bits(xa.grad.numpy()[finite], want[finite]).all()
    # tiles: a tile_map of tanh over 4 x 16 tiles
    x2 = x.reshape(4, -1)
    y2 = wp.zeros(x2.shape, dtype=float)
    wp.launch_tiled(_tanh_tiles, dim=[x2.shape[1] // 16], inputs=[wp.array(x2, dtype=float)],
                    outputs=[y2], block_dim=16)
    assert _same_bits(y2.numpy().ravel(), expected.reshape(4, -1).ravel()).all()


def test_the_choice_is_in_the_cache_key_and_can_be_turned_off(tmp_path):
    code = ("from weft.runtime import libm_tanh, cache; import weft as wp\n"
            "@wp.kernel\ndef k(x: wp.array(dtype=float)):\n    x[0] = wp.tanh(x[0])\n"
            "print(libm_tanh.variant(), cache.key_of(k))")
    keys = {}
    for setting in ("1", "0"):
        env = dict(os.environ, WEFT_LIBM_TANH=setting)
        prog = tmp_path / "prog.py"  # (weft reads a kernel's source from its file)
        prog.write_text(code)
        r = subprocess.run([sys.executable, str(prog)], capture_output=True, text=True,
                           env=env, timeout=120)
        assert r.returncode == 0, r.stderr[-2000:]
        keys[setting] = r.stdout.split()
    assert keys["0"][0] == "libm"
    assert keys["1"][0] == libm_tanh.variant()
    assert (keys["0"][1] != keys["1"][1]) == (libm_tanh.variant() == "fdlibm")


def test_generated_code_compiles_tanh_in_and_other_code_keeps_the_call():
    """The values above equal the library's either way; this checks which way ran: generated
    code (compiled in ``compiling_generated_code``) has no call of ``tanhf`` where the variant
    is fdlibm's, a user's own Numba function keeps it."""
    from weft.runtime import numba_passes
    libm_tanh.install()

    def f(x):
        return np.tanh(x)

    generated = numba.njit(error_model="numpy")(f)
    with numba_passes.compiling_generated_code():
        generated.compile((numba.float32,))
    text = generated.inspect_llvm(generated.signatures[0])
    assert ("@tanhf(" in text) == (libm_tanh.variant() != "fdlibm")
    assert generated(np.float32(0.75)) == _library_tanhf(np.array([0.75], np.float32))[0]
    own = numba.njit(error_model="numpy")(f)
    own.compile((numba.float32,))
    assert "@tanhf(" in own.inspect_llvm(own.signatures[0])
