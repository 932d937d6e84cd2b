"""What the machine can do: memory bandwidth (STREAM-style copy and triad) and core count, so
the benchmark tables can say how far each figure is from the hardware.

    python benchmarks/machine.py

``traffic(row, key, nbytes, seconds, peak)`` adds a row's achieved bandwidth and its share of
the measured peak. The byte counts the benchmarks use are compulsory traffic: every array a pass
touches read (and written) once, at its element size; caches, gathers and private copies make
real traffic larger, so a figure near 100% is memory-bound and one far below it is bound by
computation or latency.
"""
import os
import time

import numba
import numpy as np


@numba.njit(parallel=True, nogil=True, cache=True)
def _copy(a, b):
    for i in numba.prange(a.shape[0]):
        a[i] = b[i]


@numba.njit(parallel=True, nogil=True, cache=True)
def _triad(a, b, c, s):
    for i in numba.prange(a.shape[0]):
        a[i] = b[i] + s * c[i]


def best(fn, repeat):
    """Best of ``repeat`` timed calls of ``fn`` (seconds), after one untimed call."""
    fn()
    fastest = float("inf")
    for _ in range(repeat):
        t = time.perf_counter()
        fn()
        fastest = min(fastest, time.perf_counter() - t)
    return fastest


def median(fn, repeat, warmup=2):
    """Median of ``repeat`` timed calls of ``fn`` (seconds), after ``warmup`` untimed calls:
    per-call costs of microseconds, where the best of many is an outlier."""
    import statistics
    for _ in range(warmup):
        fn()
    times = []
    for _ in range(repeat):
        t = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t)
    return statistics.median(times)


def bandwidth(threads=None, mb=128, repeat=7):
    """Best-of-``repeat`` copy and triad bandwidth in GB/s (bytes read + written, arrays of
    ``mb`` MB each, far beyond the caches), on ``threads`` Numba threads (default: all)."""
    old = numba.get_num_threads()
    numba.set_num_threads(threads or numba.config.NUMBA_NUM_THREADS)
    try:
        n = mb * (1 << 20) // 8
        a, b, c = np.zeros(n), np.ones(n), np.full(n, 2.0)
        t_copy = best(lambda: _copy(a, b), repeat)
        t_triad = best(lambda: _triad(a, b, c, 3.0), repeat)
        return {"copy": 2 * a.nbytes / t_copy / 1e9, "triad": 3 * a.nbytes / t_triad / 1e9}
    finally:
        numba.set_num_threads(old)


_PEAK = None


def peak():
    """Triad bandwidth on all threads (GB/s), measured once per process."""
    global _PEAK
    if _PEAK is None:
        _PEAK = bandwidth()["triad"]
    return _PEAK


def traffic(row, key, nbytes, seconds, bw=None):
    """``row[key + " GB/s"]`` (``nbytes`` in ``seconds``) and its share of the peak."""
    gbs = nbytes / seconds / 1e9
    row[f"{key} GB/s"] = gbs
    row[f"{key} % of peak"] = 100.0 * gbs / (bw or peak())
    return row


def describe():
    one, all_ = bandwidth(1), bandwidth()
    return (f"{os.cpu_count()} CPUs, {numba.config.NUMBA_NUM_THREADS} Numba threads; memory "
            f"bandwidth (triad / copy): {one['triad']:.1f} / {one['copy']:.1f} GB/s on one "
            f"thread, {all_['triad']:.1f} / {all_['copy']:.1f} GB/s on all")


if __name__ == "__main__":
    print(describe())


def text_table(head, rows, markdown=False):
    """``rows`` (lists of strings) under ``head``: a Markdown table, or columns padded to
    width."""
    if markdown:
        out = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
        return "\n".join(out + ["| " + " | ".join(r) + " |" for r in rows])
    widths = [max(len(h), *(len(r[c]) for r in rows)) for c, h in enumerate(head)]
    return "\n".join("  ".join(v.ljust(w) for v, w in zip(r, widths)) for r in [head] + rows)

