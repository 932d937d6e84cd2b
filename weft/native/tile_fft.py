"""Numeric cores of ``tile_fft`` and ``tile_ifft`` on the CPU: unnormalized transforms along
the last tile dimension (Warp's radix-2 butterflies for powers of two, an O(N^2) DFT
otherwise), with their adjoints and tangents. Each is self-contained and compiled on its own
with ``numba.njit``; :mod:`weft.native.tile_kernels` gathers them with the other families and
states the conventions and Warp semantics they follow."""
import numpy as np


# ------------------------------------------------------------------------------------------
# FFT (complex numbers as the trailing axis of length 2)
# ------------------------------------------------------------------------------------------

def fft(a):
    """Forward DFT ``X[k] = sum_n x[n] exp(-2 pi i k n / N)`` along the last tile dimension of
    a vec2 tile (array ``(..., N, 2)``), unnormalized, leading dimensions batched. Powers of two
    use Warp's CPU radix-2 butterflies (bit reversal, twiddles by recurrence ``w *= wm``), other
    sizes an O(N^2) DFT, both in the array's dtype."""
    a = np.ascontiguousarray(a)
    n = a.shape[a.ndim - 2]
    out = a.copy()
    batch = a.size // (2 * n) if n > 0 else 0
    x = out.reshape((batch, n, 2))
    T = a.dtype.type
    zero = T(0)
    one = T(1)
    sgn = T(-1)
    two_pi = T(6.283185307179586)
    if n > 0 and (n & (n - 1)) == 0:
        for bt in range(batch):
            xb = x[bt]
            j = 0
            for i in range(1, n):
                bit = n >> 1
                while j & bit:
                    j ^= bit
                    bit >>= 1
                j ^= bit
                if i < j:
                    t0 = xb[i, 0]
                    t1 = xb[i, 1]
                    xb[i, 0] = xb[j, 0]
                    xb[i, 1] = xb[j, 1]
                    xb[j, 0] = t0
                    xb[j, 1] = t1
            length = 2
            while length <= n:
                half = length >> 1
                theta = sgn * two_pi / T(length)
                wm_re = np.cos(theta)
                wm_im = np.sin(theta)
                for k in range(0, n, length):
                    w_re = one
                    w_im = zero
                    for q in range(half):
                        lo = k + q
                        hi = lo + half
                        x_re = xb[hi, 0]
                        x_im = xb[hi, 1]
                        t_re = w_re * x_re - w_im * x_im
                        t_im = w_re * x_im + w_im * x_re
                        u_re = xb[lo, 0]
                        u_im = xb[lo, 1]
                        xb[lo, 0] = u_re + t_re
                        xb[lo, 1] = u_im + t_im
                        xb[hi, 0] = u_re - t_re
                        xb[hi, 1] = u_im - t_im
                        nw_re = w_re * wm_re - w_im * wm_im
                        nw_im = w_re * wm_im + w_im * wm_re
                        w_re = nw_re
                        w_im = nw_im
                length <<= 1
    elif n > 0:
        base = sgn * two_pi / T(n)
        tmp = np.empty((n, 2), a.dtype)
        for bt in range(batch):
            xb = x[bt]
            for k in range(n):
                acc_re = zero
                acc_im = zero
                for q in range(n):
                    theta = base * T(k) * T(q)
                    c = np.cos(theta)
                    s = np.sin(theta)
                    xr = xb[q, 0]
                    xi = xb[q, 1]
                    acc_re += c * xr - s * xi
                    acc_im += c * xi + s * xr
                tmp[k, 0] = acc_re
                tmp[k, 1] = acc_im
            for k in range(n):
                xb[k, 0] = tmp[k, 0]
                xb[k, 1] = tmp[k, 1]
    return out


def ifft(a):
    """Inverse DFT ``x[n] = sum_k X[k] exp(+2 pi i k n / N)`` along the last tile dimension,
    unnormalized (no division by N, as Warp: ``ifft(fft(x)) == N x``). Same algorithms as
    ``fft`` with the opposite sign."""
    a = np.ascontiguousarray(a)
    n = a.shape[a.ndim - 2]
    out = a.copy()
    batch = a.size // (2 * n) if n > 0 else 0
    x = out.reshape((batch, n, 2))
    T = a.dtype.type
    zero = T(0)
    one = T(1)
    sgn = T(1)
    two_pi = T(6.283185307179586)
    if n > 0 and (n & (n - 1)) == 0:
        for bt in range(batch):
            xb = x[bt]
            j = 0
            for i in range(1, n):
                bit = n >> 1
                while j & bit:
                    j ^= bit
                    bit >>= 1
                j ^= bit
                if i < j:
                    t0 = xb[i, 0]
                    t1 = xb[i, 1]
                    xb[i, 0] = xb[j, 0]
                    xb[i, 1] = xb[j, 1]
                    xb[j, 0] = t0
                    xb[j, 1] = t1
            length = 2
            while length <= n:
                half = length >> 1
                theta = sgn * two_pi / T(length)
                wm_re = np.cos(theta)
                wm_im = np.sin(theta)
                for k in range(0, n, length):
                    w_re = one
                    w_im = zero
                    for q in range(half):
                        lo = k + q
                        hi = lo + half
                        x_re = xb[hi, 0]
                        x_im = xb[hi, 1]
                        t_re = w_re * x_re - w_im * x_im
                        t_im = w_re * x_im + w_im * x_re
                        u_re = xb[lo, 0]
                        u_im = xb[lo, 1]
                        xb[lo, 0] = u_re + t_re
                        xb[lo, 1] = u_im + t_im
                        xb[hi, 0] = u_re - t_re
                        xb[hi, 1] = u_im - t_im
                        nw_re = w_re * wm_re - w_im * wm_im
                        nw_im = w_re * wm_im + w_im * wm_re
                        w_re = nw_re
                        w_im = nw_im
                length <<= 1
    elif n > 0:
        base = sgn * two_pi / T(n)
        tmp = np.empty((n, 2), a.dtype)
        for bt in range(batch):
            xb = x[bt]
            for k in range(n):
                acc_re = zero
                acc_im = zero
                for q in range(n):
                    theta = base * T(k) * T(q)
                    c = np.cos(theta)
                    s = np.sin(theta)
                    xr = xb[q, 0]
                    xi = xb[q, 1]
                    acc_re += c * xr - s * xi
                    acc_im += c * xi + s * xr
                tmp[k, 0] = acc_re
                tmp[k, 1] = acc_im
            for k in range(n):
                xb[k, 0] = tmp[k, 0]
                xb[k, 1] = tmp[k, 1]
    return out


# The unnormalized DFT's adjoint (for the real inner product of the (re, im) pairs) is the
# conjugate transform: Warp's adj_tile_fft runs the inverse transform on the gradient, and
# adj_tile_ifft the forward one, neither scaled.
fft_adj = ifft
ifft_adj = fft
fft_jvp = fft      # linear: the tangent is the transform of the input tangent
ifft_jvp = ifft
