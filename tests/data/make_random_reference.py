"""Reference values of ``sample_unit_square``, ``sample_unit_cube``,
``sample_unit_hemisphere_surface``, ``sample_unit_hemisphere``, ``poisson``, ``sample_cdf`` and
``randu(state, low, high)`` from NVIDIA Warp.

Run with a Python that has Warp 1.19 installed (CPU is enough)::

    python tests/data/make_random_reference.py > /tmp/ref.py

and paste what it prints over the block between the ``BEGIN WARP REFERENCE`` and
``END WARP REFERENCE`` markers of ``tests/stdlib/test_random.py``. Floats are printed as the
shortest decimal that reads back as the same float32.

``tests/stdlib/test_random.py`` imports this module (without Warp) and runs the same kernel,
``kernels(weft)``, through the same ``run`` on the same inputs (``SEED``, ``LAMS``, ``cdfs()``,
``N``).
"""
import contextlib
import sys

import numpy as np

from make_noise_reference import f32  # the same float32 literals

SEED = 11
N = 256      # threads whose results are summed (every thread's stream must be Warp's)
SHOW = 4     # threads whose results are printed one by one
# lam == 0 (no draw), the multiplication method below 10, Hoermann's PTRS from 10 on
LAMS = (0.0, 0.5, 3.0, 9.99, 10.0, 37.5, 1000.0, 1.0e6)


def cdfs():
    """float32 CDFs: a normalised one with a zero-weight bin (a repeated value), one whose last
    value is below 1 (draws above it give the last index), one of a single bin, an empty one."""
    w = np.array([0.1, 0.0, 0.4, 0.2, 0.3])
    return [(np.cumsum(w) / w.sum()).astype(np.float32),
            np.array([0.25, 0.5, 0.6], np.float32),
            np.array([1.0], np.float32),
            np.zeros(0, np.float32)]


def kernels(wp):
    """The kernel, compiled by ``wp`` (``warp`` or ``weft``)."""

    @wp.kernel
    def more_samplers(seed: int, lams: wp.array(dtype=float), cdf: wp.array(dtype=float),
                      out3: wp.array2d(dtype=wp.vec3), out2: wp.array(dtype=wp.vec2),
                      outp: wp.array2d(dtype=wp.uint32), outc: wp.array2d(dtype=int)):
        tid = wp.tid()
        state = wp.rand_init(seed, tid)
        out2[tid] = wp.sample_unit_square(state)
        out3[tid, 0] = wp.sample_unit_cube(state)
        out3[tid, 1] = wp.sample_unit_hemisphere_surface(state)
        out3[tid, 2] = wp.sample_unit_hemisphere(state)
        n = lams.shape[0]
        for j in range(n):
            outp[tid, j] = wp.poisson(state, lams[j])  # the state is carried through the loop
        outc[tid, 0] = wp.sample_cdf(state, cdf)
        outc[tid, 1] = wp.sample_cdf(state, cdf)
        outp[tid, n] = wp.randu(state, wp.uint32(5), wp.uint32(17))
        outp[tid, n + 1] = wp.randu(state)  # the state after all of the above

    return {"more_samplers": more_samplers}


def run(wp, kernel, n, cdf, seed=SEED, device=None):
    """Launch ``kernel`` (more_samplers of ``kernels(wp)``) on ``n`` threads; returns numpy
    arrays (vec3 samples, vec2 samples, uint32 counts, cdf indices)."""
    lams = wp.array(np.array(LAMS, np.float32), dtype=float, device=device)
    c = wp.array(cdf, dtype=float, device=device)
    out3 = wp.zeros((n, 3), dtype=wp.vec3, device=device)
    out2 = wp.zeros(n, dtype=wp.vec2, device=device)
    outp = wp.zeros((n, len(LAMS) + 2), dtype=wp.uint32, device=device)
    outc = wp.zeros((n, 2), dtype=int, device=device)
    wp.launch(kernel, n, inputs=[seed, lams, c, out3, out2, outp, outc], device=device)
    return out3.numpy(), out2.numpy(), outp.numpy(), outc.numpy()


def ints(values):
    return "[" + ", ".join(str(int(v)) for v in np.ravel(values)) + "]"


def summary(out3, out2, outp, outc):
    """What the test pins for all ``N`` threads: exact integer sums (counts per lam, the final
    states, cdf indices) and float64 sums of the float32 samples."""
    return {"counts": [int(s) for s in outp[:, :len(LAMS)].astype(np.int64).sum(0)],
            "randu": int(outp[:, len(LAMS):].astype(np.int64).sum()),
            "cdf": [int(s) for s in outc.sum(0)],
            "square": float(out2.astype(np.float64).sum()),
            "cube": float(out3[:, 0].astype(np.float64).sum()),
            "hemi": [float(s) for s in out3[:, 1:].astype(np.float64).sum((0, 2))]}


def main(out):
    import warp as wp

    wp.init()
    wp.set_device("cpu")
    k = kernels(wp)["more_samplers"]
    p = print
    p("# --- BEGIN WARP REFERENCE (tests/data/make_random_reference.py, Warp "
      f"{wp.config.version}, CPU)", file=out)
    out3, out2, outp, outc = run(wp, k, N, cdfs()[0])
    p(f"SQUARE = {f32(out2[:SHOW])}", file=out)
    p(f"CUBE = {f32(out3[:SHOW, 0])}", file=out)
    p(f"HEMI_SURFACE = {f32(out3[:SHOW, 1])}", file=out)
    p(f"HEMI = {f32(out3[:SHOW, 2])}", file=out)
    p(f"COUNTS = {ints(outp[:SHOW])}", file=out)
    p(f"SUMMARY = {summary(out3, out2, outp, outc)!r}", file=out)
    p("CDF_INDEX = {}", file=out)
    for i, cdf in enumerate(cdfs()):
        outc = run(wp, k, N, cdf)[3]
        p(f"CDF_INDEX[{i}] = {ints(outc[:16])}, {[int(s) for s in outc.sum(0)]}", file=out)
    p("# --- END WARP REFERENCE", file=out)


if __name__ == "__main__":
    real_stdout = sys.stdout
    with contextlib.redirect_stdout(sys.stderr):  # Warp's own messages
        main(real_stdout)
