"""examples/raycast.py at a small resolution: the rendered depth's gradient with respect to the
mesh's vertices equals a finite difference, gradient descent on the vertices fits a target
rendering, and the PNGs are written."""
import importlib.util
import os

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def test_raycast_example(tmp_path):
    spec = importlib.util.spec_from_file_location(
        "raycast_example", os.path.join(ROOT, "examples", "raycast.py"))
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    out = mod.main(str(tmp_path), width=24, grid=13, steps=30)
    assert out["relative"] < 2e-2, out
    assert abs(out["fd"]) > 1e-6, out
    assert out["final_loss"] < 0.05 * out["first_loss"], out
    try:
        from PIL import Image
    except ImportError:
        return
    for name in ("raycast_start.png", "raycast_target.png", "raycast_fitted.png"):
        img = Image.open(tmp_path / name)
        assert img.size == (48, 24)
