"""The numpy math functions the builtins' rules call (``np.sin(x)``), with the libdevice base
name each becomes on CUDA (``sinf``/``sin`` by precision, see ``cuda_helpers``)."""

MATH = {"sin": "sin", "cos": "cos", "tan": "tan", "exp": "exp", "log": "log", "log2": "log2",
        "log10": "log10", "sqrt": "sqrt", "tanh": "tanh", "sinh": "sinh", "cosh": "cosh",
        "arcsin": "asin", "arccos": "acos", "arctan": "atan", "arctan2": "atan2",
        "floor": "floor", "ceil": "ceil", "trunc": "trunc", "rint": "rint", "abs": "fabs",
        "power": "pow", "fmod": "fmod", "copysign": "copysign", "cbrt": "cbrt"}
ARITY2 = {"arctan2", "power", "fmod", "copysign"}
#: the float32 functions a ``fast_math`` CPU module calls from :mod:`weft.native.fastmath`
#: (as ``_wk.fm_<name>``): arithmetic only, so LLVM vectorises the loops calling them
FAST_MATH = {"sin", "cos", "tan", "exp", "log", "log2", "log10", "tanh", "sinh", "cosh"}
