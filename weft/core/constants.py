"""Warp's named constants (``wp.pi``, ``wp.TAU``, ``wp.inf``, ...), plain Python floats usable
at Python scope and in kernels (where they act as float32 literals, as in Warp)."""
import math

E = e = 2.71828182845904523536
LOG2E = log2e = 1.44269504088896340736
LOG10E = log10e = 0.43429448190325182765
LN2 = ln2 = 0.69314718055994530942
LN10 = ln10 = 2.30258509299404568402
PHI = phi = 1.61803398874989484820
PI = pi = 3.14159265358979323846
HALF_PI = half_pi = 1.57079632679489661923
TAU = tau = 6.28318530717958647692
INF = inf = math.inf
NAN = nan = float("nan")

#: Warp's log levels (``wp.config.log_level``)
LOG_DEBUG, LOG_INFO, LOG_WARNING, LOG_ERROR = 10, 20, 30, 40

__all__ = ["E", "e", "LOG2E", "log2e", "LOG10E", "log10e", "LN2", "ln2", "LN10", "ln10", "PHI",
           "phi", "PI", "pi", "HALF_PI", "half_pi", "TAU", "tau", "INF", "inf", "NAN", "nan",
           "LOG_DEBUG", "LOG_INFO", "LOG_WARNING", "LOG_ERROR"]
