"""Every differentiable geometry builtin, every output, reverse and forward mode, against float64
central finite differences (``geometry_builtin_sweep.py``, run in a subprocess as plain Python).

The list of builtins comes from the registry: every name that weft's geometry modules
(``weft/stdlib/geometry.py``, ``geometry_volume.py``, ``mesh.py``) declare, public or a private differentiable
primitive, must have a sweep case (or be reached by one) or be listed as not differentiable,
so a new geometry builtin fails here until the sweep checks it."""
import os

import pytest

from tests.walk_runner import run_walk
from weft.stdlib import geometry, mesh, registry  # noqa: F401 - they fill the registry

from . import geometry_builtin_sweep as sweep

HERE = os.path.dirname(os.path.abspath(__file__))
MODULES = {"weft.stdlib.geometry", "weft.stdlib.geometry_volume", "weft.stdlib.mesh",
           "weft.stdlib.mesh_diff"}


def _module(obj):
    f = getattr(obj, "primal", None) or getattr(obj, "_lower", None)
    return getattr(f, "__module__", "")


def geometry_builtins():
    """(public names, private differentiable primitives) of the geometry modules."""
    public = {n for n, o in registry.NAMESPACE.items() if _module(o) in MODULES}
    private = {n for n, b in registry.REGISTRY.items()
               if _module(b) in MODULES and b.differentiable and n not in registry.NAMESPACE}
    return public, private


def test_the_sweep_covers_every_geometry_builtin_of_the_registry():
    public, private = geometry_builtins()
    assert len(public) > 40 and "volume_sample_grad_f" in public
    swept = set(sweep.CASES) | {r for c in sweep.CASES.values() for r in c.reaches}
    missing = (public | private) - swept - set(sweep.NOT_DIFFERENTIABLE)
    assert not missing, f"geometry builtins without a sweep case: {sorted(missing)}"
    stale = (set(sweep.CASES) | set(sweep.NOT_DIFFERENTIABLE)) - public - private
    assert not stale, f"sweep entries that are not geometry builtins: {sorted(stale)}"
    for name in sweep.NOT_DIFFERENTIABLE:  # declared so where the registry says it
        b = registry.REGISTRY.get(name)
        assert b is None or not b.differentiable, f"{name} is differentiable: sweep it"


@pytest.mark.uncached  # plain Python, a private cache
def test_every_differentiable_geometry_builtin_has_exact_derivatives(tmp_path):
    lines = run_walk(os.path.join(HERE, "geometry_builtin_sweep.py"), tmp_path)
    assert {ln.split()[1] for ln in lines if ln.startswith("OK")} == set(sweep.CASES)
