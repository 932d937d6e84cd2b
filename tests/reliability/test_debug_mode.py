"""Debug mode (wp.config.mode = "debug", or @wp.kernel(mode="debug")): every array access of the
forward, adjoint and tangent kernels is checked, on the CPU (threads or not) and on CUDA; an
out-of-range or negative index raises KernelIndexError naming the kernel, the pass, the array,
the index, its shape and the source line. wp.config.verify_fp checks launches' outputs and
adjoints for NaN and Inf. Release mode checks none of this (docs/reliability.md)."""
import numpy as np
import pytest

import weft as wp


@wp.kernel(mode="debug")
def gather(a: wp.array(dtype=float), idx: wp.array(dtype=int), out: wp.array(dtype=float)):
    i = wp.tid()
    out[i] = a[idx[i]] * 2.0  # GATHER


@wp.kernel(mode="debug")
def scatter(a: wp.array(dtype=float), idx: wp.array(dtype=int), out: wp.array2d(dtype=float)):
    i = wp.tid()
    out[idx[i], 1] = a[i]  # SCATTER


def _line(marker):
    with open(__file__) as f:
        return next(n for n, line in enumerate(f, 1)
                    if f"# {marker}" in line and "_line" not in line)


def _ints(values):
    return wp.array(np.array(values, np.int32))


@pytest.mark.parametrize("n", [4, 300])  # the serial and the threaded kernel
def test_out_of_bounds_read_in_forward(n):
    a = wp.array(np.arange(n, dtype=np.float32))
    out = wp.zeros(n, dtype=float)
    good = np.arange(n)
    wp.launch(gather, n, inputs=[a, _ints(good)], outputs=[out])
    np.testing.assert_array_equal(out.numpy(), 2 * good)
    bad = good.copy()
    bad[n // 2] = n + 5
    with pytest.raises(wp.KernelIndexError) as e:
        wp.launch(gather, n, inputs=[a, _ints(bad)], outputs=[out])
    text = str(e.value)
    assert "kernel 'gather' (forward pass" in text and f"index {n + 5} is out of bounds" in text
    assert f"array 'a' with shape ({n},)" in text
    assert f"test_debug_mode.py:{_line('GATHER')}: out[i] = a[idx[i]] * 2.0" in text


def test_negative_index_is_an_error_not_a_wraparound():
    a = wp.array(np.arange(4, dtype=np.float32))
    out = wp.zeros((4, 2), dtype=float)
    with pytest.raises(wp.KernelIndexError, match="index -1 is negative for axis 0 of array "
                       "'out' with shape \\(4, 2\\)"):
        wp.launch(scatter, 4, inputs=[a, _ints([0, 1, -1, 3])], outputs=[out])


def test_out_of_bounds_write_in_adjoint_and_tangent():
    a = wp.array(np.arange(4, dtype=np.float32), requires_grad=True)
    out = wp.zeros((4, 2), dtype=float, requires_grad=True)
    idx = _ints([0, 1, 9, 3])
    with pytest.raises(wp.KernelIndexError, match=r"\(adjoint pass.*index 9 is out of bounds "
                       "for axis 0 of array 'the adjoint of out'"):
        wp.launch(scatter, 4, inputs=[a, idx], outputs=[out], adjoint=True)
    with pytest.raises(wp.KernelIndexError, match=r"\(tangent pass.*index 9"):
        wp.jvp(scatter, 4, inputs=[a, idx], outputs=[out],
               tangents={a: np.ones(4, np.float32)})


def test_debug_on_the_cuda_simulator():
    dev = "cuda"
    a = wp.array(np.arange(4, dtype=np.float32), device=dev)
    out = wp.zeros(4, dtype=float, device=dev)
    wp.launch(gather, 4, inputs=[a, wp.array(np.array([3, 2, 1, 0], np.int32), device=dev)],
              outputs=[out], device=dev)
    np.testing.assert_array_equal(out.numpy(), [6, 4, 2, 0])
    with pytest.raises(wp.KernelIndexError, match="index 4 is out of bounds"):
        wp.launch(gather, 4, inputs=[a, wp.array(np.array([0, 4, 1, 0], np.int32), device=dev)],
                  outputs=[out], device=dev)


@wp.kernel
def halve(a: wp.array(dtype=float), out: wp.array(dtype=float)):
    i = wp.tid()
    out[i] = wp.log(a[i])


def test_release_mode_has_no_checks_and_verify_fp_names_the_array():
    assert "_dbg" not in halve.source("all") and "_dbg" in gather.source("all")
    a = wp.array(np.array([1.0, -1.0], np.float32), requires_grad=True)
    out = wp.zeros(2, dtype=float, requires_grad=True)
    wp.launch(halve, 2, inputs=[a], outputs=[out])  # NaN written, nothing checked
    assert np.isnan(out.numpy()[1])
    try:
        wp.config.verify_fp = True
        with pytest.raises(wp.KernelFloatError, match="kernel 'halve' \\(forward\\): array "
                           "'out' holds 1 non-finite"):
            wp.launch(halve, 2, inputs=[a], outputs=[out])
        a.assign(np.array([1.0, 0.0], np.float32))
        out.grad.fill_(1.0)
        with pytest.raises(wp.KernelFloatError, match="\\(adjoint\\): array 'adj_a'"):
            wp.launch(halve, 2, inputs=[a], outputs=[out], adjoint=True)
    finally:
        wp.config.verify_fp = False


def test_checks_compile_once_per_signature_not_per_site():
    # each checked access passes its site number; as a literal, Numba compiled the check once
    # per site (hundreds per kernel). The sites here are six, and the values still right.
    import weft.native.helpers as h
    a = wp.array(np.arange(8, dtype=np.float32))
    out = wp.zeros(4, dtype=float)
    wp.launch(gather, 4, inputs=[a, _ints([1, 3, 5, 7])], outputs=[out])
    np.testing.assert_array_equal(out.numpy(), [2.0, 6.0, 10.0, 14.0])
    # the generated calls pass no literal (on a warm cache nothing compiles: read the source)
    import re
    calls = re.findall(r"_wk\.chk\(([^\n]*)_dbg\)", gather.source("forward"))
    assert calls and all(c.count("int64(") == 2 for c in calls), calls
    # a constant index (scatter's ``out[idx[i], 1]``) is no literal either: one compile per value
    calls = re.findall(r"_wk\.(?:chk|inb)\(([^\n]*?)_dbg\)", scatter.source("forward"))
    assert any(c.startswith("int64(1)") for c in calls), calls
    assert not any(re.match(r"\s*-?\d", c) for c in calls), calls
    a2 = wp.zeros((3, 2), dtype=float)
    wp.launch(scatter, 2, inputs=[a[:2], _ints([2, 0])], outputs=[a2])
    np.testing.assert_array_equal(a2.numpy(), [[0, 1], [0, 0], [0, 0]])
    for sig in [*h.chk.overloads, *h.inb.overloads]:  # what this process compiled, if anything
        assert not any("Literal" in str(t) for t in sig), sig
