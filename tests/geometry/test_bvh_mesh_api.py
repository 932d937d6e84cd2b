"""``wp.Mesh`` and ``wp.Bvh``'s Python API as Warp 1.19's: ``__del__`` (also on an instance
made with ``__new__`` alone), the ``groups`` attribute and its checks, ``wp.is_cubql_available``
and the errors of the cuBQL constructor (weft has none)."""
import numpy as np
import pytest

import weft as wp
from weft.native.geometry import descriptors as D

PTS = np.array([[0, 0, 0], [1, 0, 0], [0, 1, 0], [0, 0, 1]], np.float32)
IDX = np.array([0, 1, 2, 0, 2, 3], np.int32)


def _boxes():
    lo = wp.array(PTS, dtype=wp.vec3)
    return lo, wp.array(PTS + 1, dtype=wp.vec3)


def test_del_on_uninitialised_and_live_objects():
    wp.Mesh.__new__(wp.Mesh).__del__()
    wp.Bvh.__new__(wp.Bvh).__del__()
    mesh = wp.Mesh(wp.array(PTS, dtype=wp.vec3), wp.array(IDX, dtype=wp.int32))
    bvh = wp.Bvh(*_boxes())
    ids = (mesh.id, bvh.id)
    assert D.check_id(ids[0], D.KIND_MESH, "id") is None
    mesh.__del__()
    bvh.__del__()
    assert "freed" in D.check_id(ids[0], D.KIND_MESH, "id")
    assert "freed" in D.check_id(ids[1], D.KIND_BVH, "id")


def test_groups_attribute_and_checks():
    mesh = wp.Mesh(wp.array(PTS, dtype=wp.vec3), wp.array(IDX, dtype=wp.int32))
    bvh = wp.Bvh(*_boxes())
    assert mesh.groups is None and bvh.groups is None
    with pytest.raises(RuntimeError, match="contiguous array of type wp.int32"):
        wp.Bvh(*_boxes(), groups=wp.array(np.zeros(4), dtype=wp.float32))
    with pytest.raises(RuntimeError, match="same length as lowers/uppers"):
        wp.Bvh(*_boxes(), groups=wp.array(np.zeros(3, np.int32), dtype=wp.int32))
    with pytest.raises(RuntimeError, match="same length as indices / 3"):
        wp.Mesh(wp.array(PTS, dtype=wp.vec3), wp.array(IDX, dtype=wp.int32),
                groups=wp.array(np.zeros(3, np.int32), dtype=wp.int32))
    with pytest.raises(RuntimeError, match="The same number of lower and upper bounds"):
        wp.Bvh(wp.array(PTS, dtype=wp.vec3), wp.array(PTS[:3], dtype=wp.vec3))


def test_cubql_is_not_available_and_its_errors():
    assert wp.is_cubql_available() is False
    groups = wp.array(np.zeros(4, np.int32), dtype=wp.int32)
    with pytest.raises(RuntimeError, match="Grouped BVHs are not supported with constructor="):
        wp.Bvh(*_boxes(), constructor="cubql", groups=groups)
    with pytest.raises(RuntimeError, match="Failed to create BVH: the cuBQL constructor"):
        wp.Bvh(*_boxes(), constructor="cubql")
    points, indices = wp.array(PTS, dtype=wp.vec3), wp.array(IDX, dtype=wp.int32)
    with pytest.raises(RuntimeError, match="Grouped mesh queries are not supported"):
        wp.Mesh(points, indices, bvh_constructor="cubql",
                groups=wp.array(np.zeros(2, np.int32), dtype=wp.int32))
    with pytest.raises(RuntimeError, match="support_winding_number=True is not supported"):
        wp.Mesh(points, indices, bvh_constructor="cubql", support_winding_number=True)
    with pytest.raises(RuntimeError, match="Failed to create mesh"):
        wp.Mesh(points, indices, bvh_constructor="cubql")
    with pytest.raises(ValueError, match="Cannot rebuild a non-cuBQL BVH"):
        wp.Bvh(*_boxes()).rebuild("cubql")
    with pytest.raises(ValueError, match="Cannot rebuild a non-cuBQL mesh BVH"):
        wp.Mesh(points, indices).rebuild("cubql")


def test_a_release_run_while_the_registry_is_locked_does_not_deadlock():
    # a collection can run while the registry's lock is held (numpy's a.ctypes allocates) and
    # finalize another geometry object, whose release takes the lock again in the same thread:
    # simulated here, in a thread that must finish (a plain Lock hung forever)
    import threading
    held = D.Descriptor(D.KIND_BVH, [np.zeros(4, np.float32)])
    freed = D.Descriptor(D.KIND_BVH, [np.ones(4, np.float32)])

    def nested():
        with D._lock:
            freed.release()
            held.set([np.zeros(4, np.float32)])

    t = threading.Thread(target=nested, daemon=True)
    t.start()
    t.join(10.0)
    assert not t.is_alive(), "a release inside the registry's lock deadlocked"
    assert D.check_id(freed.id, D.KIND_BVH, "id").endswith("has been freed")
    assert D.check_id(held.id, D.KIND_BVH, "id") is None
    held.release()
