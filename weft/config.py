"""Global settings (``wp.config``), as in Warp.

``overwrite_gradients``: what a Tape does with a launch whose kernel reads an array and then
overwrites it (``x[i] = f(x[i])``), which would otherwise give wrong gradients because the
adjoint replays the kernel from the overwritten values:

- ``"snapshot"`` (default): copy the array before the launch and replay from the copy; the
  gradient is exact (the cost is one copy of the array per recorded launch);
- ``"error"``: raise a ``KernelError`` naming the lines that read and overwrite the array;
- ``"warn"``: warn with the same message and record the launch as it is.
"""

overwrite_gradients = "snapshot"

#: CPU launches of fewer threads than this run a serial twin of the kernel (compiled on first
#: use): starting the thread pool costs more than such a launch. 0 disables it.
serial_threshold = 256

#: ``"release"``: kernels as fast as they compile; ``"debug"``: every array access of the
#: forward, adjoint and tangent kernels is checked (an out-of-range or negative index raises
#: ``weft.KernelIndexError`` naming the kernel, pass, array, index, shape and source line).
#: Per kernel: ``@wp.kernel(mode="debug")``.
mode = "release"

#: check every launch's written arrays (and the adjoint's and tangent's) for NaN and Inf,
#: raising ``weft.KernelFloatError`` naming the kernel and the array
verify_fp = False
