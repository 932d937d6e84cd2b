"""``Tape.visualize``: the recorded program as GraphViz ``dot`` text (Warp's API).

Kernels are boxes, arrays ellipses (tooltip ``array: dtype=..., shape=...``); an edge goes
from each array a launch reads to the launch and from the launch to each array it writes.
``simplify_graph`` folds a run of the same kernel on the same arrays into one node labelled
``repeated Nx``; scopes (``record_scope_begin``/``end``) become clusters.
"""
from __future__ import annotations

from ..core.types import type_name
from ..runtime.array import array


def _kernel_of(rec):
    ck = getattr(rec, "compiled", None)
    return ck.key if ck is not None else type(rec).__name__.strip("_") or "callback"


def _io(rec):
    """``(read arrays, written arrays)`` of one record."""
    ck = getattr(rec, "compiled", None)
    arrays = [(i, a) for i, a in enumerate(getattr(rec, "args", [])) if isinstance(a, array)]
    if ck is None:
        arrs = list(getattr(rec, "arrays", []))
        return arrs, []
    names = [p[0] for p in ck.params]
    written = set(getattr(ck.abi, "writes", ())) | {s[0] for s in getattr(ck.abi, "stores", ())}
    reads = [a for i, a in arrays if names[i] not in written]
    writes = [a for i, a in arrays if names[i] in written]
    return reads, writes


NEWLINE = "\\n"  # a line break inside a dot label


def _escape(text):
    return str(text).replace("\\", "\\\\").replace('"', '\\"')


def visualize(tape, filename=None, simplify_graph=True, hide_readonly_arrays=False,
              array_labels=None, choose_longest_node_name=True, ignore_graph_scopes=False,
              track_inputs=None, track_outputs=None, track_input_names=None,
              track_output_names=None, graph_direction="LR"):
    labels = {}
    for a, name in (array_labels or {}).items() if isinstance(array_labels, dict) else ():
        labels[id(a)] = name
    for group, names in ((track_inputs, track_input_names), (track_outputs, track_output_names)):
        for k, a in enumerate(group or ()):
            labels.setdefault(id(a), names[k] if names and k < len(names) else f"tracked {k}")
    # launches, folded into (kernel, reads, writes, count) when simplifying
    steps = []
    for index, rec in enumerate(tape.launches):
        reads, writes = _io(rec)
        key = (_kernel_of(rec), tuple(id(a) for a in reads), tuple(id(a) for a in writes))
        if simplify_graph and steps and steps[-1]["key"] == key and \
                not any(s[0] == index for s in tape.scopes):
            steps[-1]["count"] += 1
            continue
        steps.append({"key": key, "name": key[0], "reads": reads, "writes": writes,
                      "count": 1, "index": index})
    written_ids = {id(a) for s in steps for a in s["writes"]}
    lines = ["digraph Tape {", f"  rankdir={graph_direction};",
             '  node [fontname="Helvetica"];']
    arrays = {}
    for s in steps:
        for a in s["reads"] + s["writes"]:
            if hide_readonly_arrays and id(a) not in written_ids:
                continue
            arrays.setdefault(id(a), a)
    for k, (aid, a) in enumerate(arrays.items()):
        label = labels.get(aid, f"a{k}")
        tip = f"array: dtype={type_name(a.dtype)}, shape={tuple(a.shape)}"
        lines.append(f'  a{aid} [label="{_escape(label)}", shape=ellipse, '
                     f'tooltip="{_escape(tip)}"];')
    # scopes: clusters around the launches recorded between begin and end
    open_scopes = []
    bounds = []
    if not ignore_graph_scopes:
        for pos, name, meta in tape.scopes:
            if name is not None:
                open_scopes.append((pos, name))
            elif open_scopes:
                start, sname = open_scopes.pop()
                bounds.append((start, pos, sname))
    clusters = {}
    for s in steps:
        owner = None
        for start, end, sname in bounds:
            if start <= s["index"] < end and (owner is None or start >= owner[0]):
                owner = (start, end, sname)
        clusters.setdefault(owner, []).append(s)
    for owner, members in clusters.items():
        indent = "  "
        if owner is not None:
            lines.append(f'  subgraph cluster_{owner[0]}_{owner[1]} {{')
            lines.append(f'    label="{_escape(owner[2])}";')
            indent = "    "
        for s in members:
            label = _escape(s["name"])
            if s["count"] > 1:
                label += NEWLINE + f"repeated {s['count']}x"
            lines.append(f'{indent}k{s["index"]} [label="{label}", shape=box];')
        if owner is not None:
            lines.append("  }")
    for s in steps:
        for a in s["reads"]:
            if id(a) in arrays:
                lines.append(f"  a{id(a)} -> k{s['index']};")
        for a in s["writes"]:
            if id(a) in arrays:
                lines.append(f"  k{s['index']} -> a{id(a)};")
    lines.append("}")
    text = "\n".join(lines) + "\n"
    if filename is not None:
        with open(filename, "w") as f:
            f.write(text)
    return text
