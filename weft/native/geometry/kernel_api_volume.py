"""The volume queries of every value type as kernels call them: ``_wk.geo_vol_<op>_<type>``.

Each function below is written once over the value type: its body names the type's parts
``T_VIEW`` (the view of the ``values`` array), ``T_GTYPE`` (the NanoVDB grid type), ``T_SCALAR``
(the scalar type), ``T_LOOKUP``/``T_STORE``/``T_READ`` (the cores for its channel count), and
:func:`bind` rebinds it once per type in :data:`VALUE_TYPES` with those names set, so Numba
compiles each with the parts as constants. Sampling returns the 8 corner values (``C * 8``,
channel by channel) and the kernel interpolates them (``weft.stdlib.geometry_volume``), so the
transpiler differentiates the interpolation: adjoints, tangents and second derivatives.
"""
# ruff: noqa: F821 - the views, cores and T_* parts are bound into these functions by bind()
from __future__ import annotations

import numpy as np

from . import volume_traverse as vt
from .portable import rebind

#: value type name -> (grid type, view, scalar, channels), the types weft's volumes hold
VALUE_TYPES = {
    "float32": (vt.GRID_FLOAT, "view_f32", np.float32, 1),
    "float64": (vt.GRID_DOUBLE, "view_f64", np.float64, 1),
    "int32": (vt.GRID_INT32, "view_i32", np.int32, 1),
    "int64": (vt.GRID_INT64, "view_i64", np.int64, 1),
    "uint32": (vt.GRID_UINT32, "view_u32", np.uint32, 1),
    "vec3f": (vt.GRID_VEC3F, "view_f32", np.float32, 3),
    "vec3d": (vt.GRID_VEC3D, "view_f64", np.float64, 3),
    "vec4f": (vt.GRID_VEC4F, "view_f32", np.float32, 4),
    "vec4d": (vt.GRID_VEC4D, "view_f64", np.float64, 4),
}
_BY_CHANNELS = {1: ("volume_lookup_s", "volume_store_s", "volume_read8_c1"),
                3: ("volume_lookup_v3", "volume_store_vn", "volume_read8_c3"),
                4: ("volume_lookup_v4", "volume_store_vn", "volume_read8_c4")}


def geo_vol_lookup(vid, i, j, k):
    d = view_i64(vid, VOL_WORDS)
    return T_LOOKUP(view_i32(d[3], d[4]), T_VIEW(d[5], d[6]), d[11], T_GTYPE, T_SCALAR(0),
                    i, j, k)


def geo_vol_store(vid, i, j, k, value):
    """``value``: a scalar, or a tuple of the channels."""
    d = view_i64(vid, VOL_WORDS)
    T_STORE(view_i32(d[3], d[4]), T_VIEW(d[5], d[6]), d[11], T_GTYPE, i, j, k, value)
    return 0


def geo_vol_corners(vid, ux, uy, uz, mode):
    """The 8 corner values of a sample (all the nearest voxel's for CLOSEST, zeros for another
    grid type or mode), channel by channel."""
    d = view_i64(vid, VOL_WORDS)
    s = volume_corner_slots(view_i32(d[3], d[4]), d[11], T_GTYPE, ux, uy, uz, mode)
    return T_READ(T_VIEW(d[5], d[6]), s, T_SCALAR(0))


def geo_vol_sample_int(vid, ux, uy, uz, mode):
    """An integer grid's sample (Warp's LINEAR on integers: see ``volume_sample_int``)."""
    d = view_i64(vid, VOL_WORDS)
    return volume_sample_int(view_i32(d[3], d[4]), T_VIEW(d[5], d[6]), d[11], T_GTYPE,
                             T_SCALAR(0), ux, uy, uz, mode)


def geo_vol_index_corners(vid, ux, uy, uz, mode):
    """The voxel-data indices of a sample's 8 corners (``volume_index_corners``)."""
    d = view_i64(vid, VOL_WORDS)
    # another grid's values are never read as indices (and may not be viewable as int64)
    iv = view_i64(d[5], d[6]) if d[11] >= GRID_INDEX and d[11] <= GRID_ONINDEX_MASK else d
    return volume_index_corners(view_i32(d[3], d[4]), iv, d[11], ux, uy, uz, mode)


TEMPLATES = ("geo_vol_lookup", "geo_vol_store", "geo_vol_corners", "geo_vol_sample_int")


def bind(ns, jit=None):
    """Add ``geo_vol_<op>_<type>`` for every template and value type, and
    ``geo_vol_index_corners``, to ``ns`` (a ``portable.Namespace`` holding the views, the
    cores and ``VOL_WORDS``), compiled with ``jit`` (None: uncompiled) at their first lookup.
    Returns their names."""
    names = []
    for tname, (gtype, view, scalar, channels) in VALUE_TYPES.items():
        lookup, store, read = _BY_CHANNELS[channels]
        tns = ns.child({"T_GTYPE": gtype, "T_SCALAR": scalar})
        for part, name in (("T_VIEW", view), ("T_LOOKUP", lookup), ("T_STORE", store),
                           ("T_READ", read)):
            tns.later(part, lambda name=name: ns[name])
        for name in TEMPLATES:
            names.append(_add(tns, ns, jit, f"{name}_{tname}", globals()[name]))
    names.append(_add(ns.child({"GRID_INDEX": vt.GRID_INDEX,
                                "GRID_ONINDEX_MASK": vt.GRID_ONINDEX_MASK}),
                      ns, jit, "geo_vol_index_corners", geo_vol_index_corners))
    return tuple(names)


def _add(glb, ns, jit, name, fn):
    """``fn`` as ``name`` with the globals ``glb`` (a code object of its own name per instance),
    made in ``ns`` at its first lookup; returns ``name``."""
    rebound = rebind(fn, glb, name)
    if jit is None:
        ns[name] = rebound
    else:
        ns.later(name, lambda: jit(rebound))
    return name
