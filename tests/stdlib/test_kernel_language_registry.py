"""Every builtin written in the kernel language, checked from its declared signatures alone.

The companion of ``test_registry.py`` (which walks the primitive builtins): for every public
func of ``weft/stdlib/{quat,linalg,interp,noise,decomp}.py`` and every signature declared for it
in ``weft/stdlib/signatures.py``, ``kernel_builtin_walk.py`` builds a float64 kernel and checks
the adjoint and the tangent against central finite differences and against each other (the
dot-product test). A new kernel-language builtin is therefore checked the moment its signature
is declared (``test_signatures.py`` makes declaring one mandatory).
"""
import os

import pytest

from tests.walk_runner import run_walk
from weft.stdlib import decomp, interp, linalg, noise, quat, spatial

HERE = os.path.dirname(os.path.abspath(__file__))


@pytest.mark.uncached  # plain Python, a private cache
def test_every_kernel_language_builtin_has_exact_derivatives(tmp_path):
    lines = run_walk(os.path.join(HERE, "kernel_builtin_walk.py"), tmp_path)
    covered = set(lines[-1].split()[1:])
    public = {n for m in (quat, linalg, interp, noise, decomp, spatial) for n in m.FUNCS}
    no_float_inputs = {"quat_identity", "transform_identity"}
    assert covered == public - no_float_inputs, public - no_float_inputs - covered
    assert sum(ln.startswith("OK") for ln in lines) >= 55  # signatures, not builtins
