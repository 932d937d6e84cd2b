"""Numeric cores of Warp's tile builtins on the CPU, as plain Python + NumPy functions, gathered
here by name (``TILE_KERNELS``) from the modules of their families: the products and linear
updates (:mod:`weft.native.tile_products`: ``matmul``, ``diag_add``, ``axpy``), the Cholesky
factor and solve (:mod:`weft.native.tile_cholesky`), the triangular solves
(:mod:`weft.native.tile_triangular`), the FFTs (:mod:`weft.native.tile_fft`), and the sort,
scans and ``argmin``/``argmax`` (:mod:`weft.native.tile_order`).

Each function is compiled by another module with ``numba.njit`` (nopython mode) and also
runs uncompiled (``NUMBA_DISABLE_JIT=1``). Every exported function is self-contained: it calls
no other function of these modules, so ``numba.njit(getattr(tile_kernels, name))`` works for
each name in ``TILE_KERNELS`` on its own. Compile with ``error_model="numpy"`` to get Warp's
inf/NaN results rather than exceptions (the functions avoid dividing by zero themselves, so the
default error model also works).

Conventions
-----------
* A tile is a C-contiguous NumPy array: a tile of scalars of shape ``(M, N)`` is an ``(M, N)``
  array, a 1-D tile ``(N,)``; a tile of ``vec2`` (complex numbers for the FFT) of shape
  ``(M, N)`` is an ``(M, N, 2)`` array (component 0 real, 1 imaginary). Non-contiguous
  arguments are accepted (copied once with ``np.ascontiguousarray``).
* Functional: no input is modified; results are new C-contiguous arrays in the dtype of the
  input they stand for, computed in that dtype (float32 stays float32, like Warp).
* ``X_adj(inputs..., [forward output,] adj_out)`` returns the adjoints of the differentiable
  inputs (fresh arrays, to be accumulated by the caller); ``X_jvp(inputs..., [output,]
  tangents...)`` returns the output tangent.

Warp semantics followed (Warp 1.19, CPU path with ``block_dim == 1``)
-----------------------------------------------------------------------
* ``tile_matmul(a, b, out, alpha, beta)`` reads ``out`` only when ``beta != 0``; its adjoint
  is ``adj_a = alpha * adj_r @ b^T``, ``adj_b = alpha * a^T @ adj_r``, ``adj_out = beta *
  adj_r``; ``alpha`` and ``beta`` get no gradient.
* ``tile_cholesky`` reads only the lower triangle of ``A``; a non-positive pivot gives NaN
  (sqrt of a negative number) which spreads to the later columns, a zero pivot gives inf.
  Its adjoint is Murray's (2016) with respect to the lower-triangular parameterization of
  ``A``: with ``S`` the symmetric gradient, ``adj_A[i, j] = S[i, j] + S[j, i]`` below the
  diagonal, ``S[i, i]`` on it and zero above (the true gradient of the forward pass, which
  ignores the upper triangle).
* The products sum over k in increasing order like Warp's scalar GEMM, which fuses each step
  (``muladd``): ``matmul`` and the adjoints call ``simd.gemm``, whose compiled form fuses the
  same steps explicitly, and the others are compiled with LLVM's ``contract`` flag
  (``weft.native.tiles``); the results are then Warp's bit for bit (run uncompiled, each step
  rounds twice). ``matmul_acc``'s ``alpha``/``beta`` scaling is not fused, in Warp either.
* Cholesky and the solves round every entry as Warp's loops do (the factor's rows are summed
  four at a time, the forward substitution by columns, each entry still in Warp's order).
* Triangular solves read one triangle; a zero diagonal entry skips the division (Warp's
  ``diag != 0 ? s / diag : s``). Right-hand sides are ``(N,)`` or ``(N, K)``.
* FFTs act on the last tile dimension, unnormalized both ways (``ifft(fft(x)) == N x``);
  radix-2 (Warp's CPU butterfly with its twiddle recurrence) for powers of two, an O(N^2) DFT
  otherwise. Adjoint of fft is the unnormalized ifft and vice versa.
* Scans run over the flattened row-major tile and keep its shape; max/min scans follow C
  ``fmax``/``fmin`` (a NaN element is treated as missing).
* ``argmin``/``argmax`` return the row-major index of the first extreme element (Warp's CPU
  tie rule; Warp documents ties as unspecified across devices); a NaN in first position stays
  the champion until a strictly smaller/larger element appears, as in Warp.
"""
from .tile_cholesky import (cholesky, cholesky_adj, cholesky_jvp, cholesky_solve,
                            cholesky_solve_adj, cholesky_solve_jvp)
from .tile_fft import fft, fft_adj, fft_jvp, ifft, ifft_adj, ifft_jvp
from .tile_order import (argmax, argmin, scan_exclusive, scan_exclusive_adj, scan_exclusive_jvp,
                         scan_inclusive, scan_inclusive_adj, scan_inclusive_jvp,
                         scan_max_inclusive, scan_max_inclusive_adj, scan_max_inclusive_jvp,
                         scan_min_inclusive, scan_min_inclusive_adj, scan_min_inclusive_jvp, sort)
from .tile_products import (axpy, axpy_adj, axpy_jvp, diag_add, diag_add_adj, diag_add_jvp,
                            matmul, matmul_acc, matmul_acc_adj, matmul_acc_jvp, matmul_adj,
                            matmul_jvp)
from .tile_triangular import (lower_solve, lower_solve_adj, lower_solve_jvp, upper_solve,
                              upper_solve_adj, upper_solve_jvp)


__all__ = TILE_KERNELS = (
    "matmul", "matmul_acc", "matmul_adj", "matmul_acc_adj", "matmul_jvp", "matmul_acc_jvp",
    "cholesky", "cholesky_adj", "cholesky_jvp",
    "lower_solve", "lower_solve_adj", "lower_solve_jvp",
    "upper_solve", "upper_solve_adj", "upper_solve_jvp",
    "cholesky_solve", "cholesky_solve_adj", "cholesky_solve_jvp",
    "fft", "ifft", "fft_adj", "ifft_adj", "fft_jvp", "ifft_jvp",
    "sort",
    "scan_inclusive", "scan_exclusive", "scan_max_inclusive", "scan_min_inclusive",
    "scan_inclusive_adj", "scan_exclusive_adj", "scan_max_inclusive_adj",
    "scan_min_inclusive_adj", "scan_inclusive_jvp", "scan_exclusive_jvp",
    "scan_max_inclusive_jvp", "scan_min_inclusive_jvp",
    "argmin", "argmax",
    "diag_add", "diag_add_adj", "diag_add_jvp",
    "axpy", "axpy_adj", "axpy_jvp",
)
