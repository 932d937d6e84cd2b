"""Run a chosen set of NVIDIA Warp's own unit-test files against weft (or against Warp), CPU only.

Each file runs in its own subprocess (_child.py, unittest), with a per-file and a per-test
timeout; per file it records tests collected, passed, failed, errored, skipped, timed out and
not reached, and for each test that did not pass its first error line.

  python run.py --impl weft --json results-weft.json
  python run.py --impl warp --json results-warp.json          # the same files under real Warp
  python run.py --impl weft -k vec -k mat                     # files whose name holds a substring
  python run.py --list                                        # the selected and skipped files
  python summarize.py                                         # SUMMARY.md from both JSON files

Options: --timeout S (per file, default 600), --test-timeout S (per test, default 300),
--jobs N (files at once, default 1), --resume (keep files already in --json), --python PY.
Under --impl weft, shim/ goes first on PYTHONPATH: its warp/ package re-exports weft and its
warp/tests/unittest_utils.py offers Warp's test helpers restricted to the "cpu" device; the test
files themselves are read from Warp's installed wheel (found at run time).
"""
import argparse
import json
import os
import signal
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parent.parent  # the weft checkout (tests/warp_compat/ lies two levels down)

# The Warp test modules (relative to warp.tests) of issue 13: the kernel language, its builtins,
# autodiff, arrays and Python-scope API (globs of the issue expanded against Warp 1.19's wheel:
# test_vec*, matrix/test_mat*, test_quat*, test_spatial*, test_codegen*, test_atomic*).
SELECTED = [
    "test_arithmetic", "test_math",
    "test_vec", "test_vec_assign_copy", "test_vec_constructors", "test_vec_lite",
    "test_vec_scalar_ops",
    "matrix.test_mat", "matrix.test_mat_assign_copy", "matrix.test_mat_basics",
    "matrix.test_mat_constructors", "matrix.test_mat_elementwise_ops", "matrix.test_mat_linalg",
    "matrix.test_mat_lite",
    "test_quat", "test_quat_assign_copy", "test_spatial", "test_spatial_assign_copy",
    "test_codegen", "test_codegen_continue", "test_codegen_instancing",
    "test_conditional", "test_func", "test_generics", "test_struct", "test_types", "test_bool",
    "test_iter", "test_static", "test_constant_precision", "test_enum",
    "test_grad", "test_grad_customs", "test_tape",
    "test_array", "test_copy", "test_atomic", "test_atomic_bitwise", "test_atomic_cas",
    "test_rand", "test_noise", "test_lerp", "test_smoothstep", "test_closest_point_edge_edge",
    "test_intersect", "test_operators", "test_lvalue", "test_fp16",
]

# Files of the other issues (geometry, ...), run only when a -k selects them
EXTRA = ["geometry.test_mesh", "geometry.test_mesh_query_point", "geometry.test_mesh_query_ray",
         "geometry.test_mesh_query_aabb", "geometry.test_bvh", "geometry.test_hash_grid",
         "geometry.test_volume", "geometry.test_volume_write", "test_launch",
         "test_array_subclass", "test_tape"]


def real_tests_dir(py):
    """Warp's installed test folder, asked of `py` with the shim off the path."""
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    out = subprocess.run([py, "-c", "import os, warp.tests as t; print(os.path.dirname(t.__file__))"],
                         capture_output=True, text=True, env=env, check=True)
    return out.stdout.strip()


def path_prefixes(py, tests_dir):
    """Folders of this machine to strip from recorded tracebacks (results are committed)."""
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    base = subprocess.run([py, "-c", "import sys; print(sys.base_prefix)"], capture_output=True,
                          text=True, env=env).stdout.strip()
    site = str(Path(tests_dir).parent.parent)
    pairs = [(str(Path(tests_dir).parent), "<warp>"), (site, "<site-packages>"),
             (str(HERE), "<warp_suite>"), (str(REPO), "<weft-checkout>")]
    if base:
        pairs.append((base, "<python>"))
    pairs.append((tempfile.gettempdir(), "<tmp>"))
    pairs.append((str(Path.home()), "~"))
    return pairs


def scrub(obj, pairs):
    if isinstance(obj, str):
        for a, b in pairs:
            obj = obj.replace(a, b)
        return obj
    if isinstance(obj, dict):
        return {k: scrub(v, pairs) for k, v in obj.items()}
    if isinstance(obj, list):
        return [scrub(v, pairs) for v in obj]
    return obj


def run_file(py, impl, module, tests_dir, timeout, test_timeout, weft_path=REPO):
    with tempfile.TemporaryDirectory(prefix="warp_suite_") as tmp:
        events_path = Path(tmp) / "events.jsonl"
        env = dict(os.environ, WARP_SUITE_TESTS_DIR=tests_dir, PYTHONUNBUFFERED="1",
                   CUDA_VISIBLE_DEVICES="")
        env.pop("PYTHONPATH", None)
        if impl == "weft":  # the shim first, then the weft checkout this file belongs to
            env["PYTHONPATH"] = os.pathsep.join([str(HERE / "shim"), str(weft_path)])
        cmd = [py, str(HERE / "_child.py"), impl, "warp.tests." + module, str(events_path),
               str(test_timeout)]
        t0 = time.time()
        p = subprocess.Popen(cmd, cwd=tmp, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                             start_new_session=True)
        timed_out = False
        try:
            output, _ = p.communicate(timeout=timeout)
        except subprocess.TimeoutExpired:
            timed_out = True
            os.killpg(p.pid, signal.SIGKILL)  # the child's own process group only
            output, _ = p.communicate()
        events = [json.loads(line) for line in events_path.read_text().splitlines() if line.strip()] \
            if events_path.exists() else []
        return summarize_file(module, events, p.returncode, timed_out, time.time() - t0,
                              output.decode("utf-8", "replace")[-2000:])


def summarize_file(module, events, rc, timed_out, seconds, output_tail):
    rec = dict(file=module, seconds=round(seconds, 1), returncode=rc, file_timeout=timed_out,
               import_error=None, collected=0, passed=0, failed=0, errored=0, skipped=0,
               timeout=0, not_run=0, tests={})
    collected, started, results = [], [], {}
    for e in events:
        if e["event"] == "import_error":
            rec["import_error"] = {k: e.get(k) for k in ("error", "exc_type", "message", "where", "tb")}
        elif e["event"] == "collected":
            collected = e["tests"]
        elif e["event"] == "start":
            started.append(e["test"])
        elif e["event"] == "result":
            prev = results.get(e["test"])
            if prev is None or (prev["outcome"] == "passed" and e["outcome"] != "passed"):
                results[e["test"]] = e  # the first failure of a test (subtests) is its outcome
    rec["collected"] = len(collected)
    for t in collected:
        r = results.get(t)
        if r is None:
            if t in started and (timed_out or rc not in (0, None)):
                outcome = "timeout" if timed_out else "error"
                err = (f"file timeout after {rec['seconds']:.0f}s" if timed_out
                       else f"process died (exit {rc}): {output_tail.strip().splitlines()[-1:] or ''}")
                r = dict(outcome=outcome, error=err)
            else:
                r = dict(outcome="not_run", error="not reached (file timeout)" if timed_out
                         else f"not reached (exit {rc})")
        key = {"passed": "passed", "failed": "failed", "error": "errored", "skipped": "skipped",
               "timeout": "timeout", "not_run": "not_run"}[r["outcome"]]
        rec[key] += 1
        entry = {"outcome": r["outcome"]}
        for k in ("error", "exc_type", "message", "where", "tb", "reason", "seconds"):
            if r.get(k) not in (None, ""):
                entry[k] = r[k]
        rec["tests"][t.split(".")[-2] + "." + t.split(".")[-1]] = entry
    if not collected and rec["import_error"] is None and rc != 0:
        rec["import_error"] = {"error": "no tests collected: " + (
            f"file timeout after {rec['seconds']:.0f}s" if timed_out else f"exit {rc}"),
            "tb": output_tail}
    return rec


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--impl", choices=["weft", "warp"], default="weft")
    ap.add_argument("-k", action="append", default=[], help="run files whose name holds this substring "
                    "(=name: exactly that file)")
    ap.add_argument("--json", help="write results here (default results-IMPL.json next to run.py)")
    ap.add_argument("--timeout", type=float, default=600, help="seconds per file")
    ap.add_argument("--test-timeout", type=float, default=300, help="seconds per test (0: none)")
    ap.add_argument("--jobs", type=int, default=1)
    ap.add_argument("--resume", action="store_true", help="keep files already recorded in --json")
    ap.add_argument("--python", default=sys.executable)
    ap.add_argument("--weft-path", default=str(REPO),
                    help="the weft checkout to test (default: the one holding this file)")
    ap.add_argument("--list", action="store_true")
    ap.add_argument("--part", help="I/N: run every N-th selected file from the I-th (split across runners)")
    a = ap.parse_args()

    pool = SELECTED + (EXTRA if a.k else [])
    files = [f for f in pool if not a.k or any(
        f == s[1:] if s.startswith("=") else s in f for s in a.k)]  # -k =name: that file only
    # -k =name also runs a module of warp/tests outside the selection (tile.test_tile, ...)
    files += [s[1:] for s in a.k or () if s.startswith("=") and s[1:] not in files]
    if a.part:
        i, n = map(int, a.part.split("/"))
        files = files[i - 1::n]
    if a.list:
        print("\n".join(files))
        return
    out_path = Path(a.json) if a.json else HERE / f"results-{a.impl}.json"
    data = {"impl": a.impl, "files": {}}
    if out_path.exists():
        old = json.loads(out_path.read_text())
        data["files"] = old.get("files", {})
    if a.resume:
        files = [f for f in files if f not in data["files"]]
    tests_dir = real_tests_dir(a.python)
    pairs = [(str(Path(a.weft_path).resolve()), "<weft-checkout>")] + path_prefixes(a.python, tests_dir)
    ver = subprocess.run([a.python, "-c", "import warp, numba, numpy; print(warp.__version__, "
                          "numba.__version__, numpy.__version__)"], capture_output=True, text=True,
                         env={k: v for k, v in os.environ.items() if k != "PYTHONPATH"}).stdout.split()
    data["versions"] = dict(zip(["warp", "numba", "numpy"], ver))
    data["settings"] = {"timeout_per_file_s": a.timeout, "timeout_per_test_s": a.test_timeout}

    def one(f):
        rec = scrub(run_file(a.python, a.impl, f, tests_dir, a.timeout, a.test_timeout,
                               Path(a.weft_path).resolve()), pairs)
        data["files"][f] = rec
        out_path.write_text(json.dumps(data, indent=1))
        flag = " IMPORT ERROR: " + rec["import_error"]["error"] if rec["import_error"] else ""
        print(f"{f:36s} collected {rec['collected']:4d} passed {rec['passed']:4d} failed "
              f"{rec['failed']:4d} errored {rec['errored']:4d} skipped {rec['skipped']:4d} timeout "
              f"{rec['timeout']:3d} not_run {rec['not_run']:4d} ({rec['seconds']:.0f}s){flag}", flush=True)
        return rec

    with ThreadPoolExecutor(max_workers=a.jobs) as ex:
        list(ex.map(one, files))
    tot = {k: sum(r[k] for r in data["files"].values())
           for k in ("collected", "passed", "failed", "errored", "skipped", "timeout", "not_run")}
    print("total", tot)


if __name__ == "__main__":
    main()
