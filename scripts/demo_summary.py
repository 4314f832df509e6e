#!/usr/bin/env python3
"""Prints what `shapetrace analyze` found in a run of the example service (used by scripts/demo).

    scripts/demo_summary.py ANALYSIS.json [--request FUNCTION]

Reads the analyzer's JSON model (docs/analyzer.md) and prints: the threads with their calls and
Tables 1-2 counts, the shape and cluster totals (trivial [f,{null}] ones discounted, as the paper's
tables do), the outliers, and where the slow requests are: the outliers of the request function
(default kv::RequestHandler::serve) grouped by the cluster and the shape that contain them, each
shape described by the functions it calls that the cluster's most common shape does not; and,
when the model has the callers extension (`analyze --extensions callers`), who calls those
functions, how often and for how long.
"""
import argparse
import collections
import json
import re
import sys


def short(name):
    """kv::BTree::splitLeaf(kv::BTree::Node*, ...) -> BTree::splitLeaf"""
    name = re.sub(r"\(.*$", "", name)
    depth, out = 0, []
    for ch in name:  # drop template arguments
        depth += ch == "<"
        if depth == 0:
            out.append(ch)
        depth -= ch == ">"
    parts = "".join(out).split("::")
    return "::".join(parts[-2:])


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("analysis")
    parser.add_argument("--request", default="kv::RequestHandler::serve")
    args = parser.parse_args()
    model = json.load(open(args.analysis))

    functions = {f["id"]: f for f in model["functions"]}
    shapes = {s["id"]: s for s in model["shapes"]}
    clusters = {c["id"]: c for c in model["clusters"]}

    def called(shape_id, memo={}):
        """Every function in the shape's tree below its base function."""
        if shape_id not in memo:
            names = set()
            for child in shapes[shape_id]["children"]:
                if child in shapes:
                    names.add(shapes[child]["function"])
                    names |= called(child)
            memo[shape_id] = names
        return memo[shape_id]

    summary = model["summary"]
    print(f"events {summary['events']:,}, calls {summary['calls']:,}, "
          f"{summary['threads']} threads, {summary['functions']} functions called")
    print(f"{'thread':<12} {'calls':>11} {'shapes':>7} {'new':>5} {'clusters':>9} {'new':>5}")
    for t in model["threads"]:
        t1, t2 = t["table1"], t["table2"]
        print(f"{t['name'] or t['thread']:<12} {t['calls']:>11,} {t1['shapes_in_thread']:>7} "
              f"{t1['additional_shapes']:>5} {t2['clusters_in_thread']:>9} "
              f"{t2['additional_clusters']:>5}")
    last = model["threads"][-1]
    print(f"shapes: {last['table1']['all_shapes']} non-trivial ({summary['shapes']} in all) "
          f"in {last['table2']['all_clusters']} non-trivial clusters ({summary['clusters']} in all), "
          f"{summary['ribbons']} ribbons")
    total_outliers = sum(f["outliers"] for f in model["functions"])
    print(f"outliers (slower than mean + 2 sd of their function): {total_outliers:,}")

    request = [f for f in model["functions"] if f["name"].startswith(args.request + "(")]
    if not request:
        print(f"no function {args.request} in the trace", file=sys.stderr)
        return 0
    request = request[0]
    print(f"\nrequests ({short(request['name'])}): {request['calls']:,} calls, "
          f"{request['outliers']:,} slow (outliers)")
    request_clusters = sorted((c for c in clusters.values() if c["function"] == request["id"]),
                              key=lambda c: -c["calls"])
    kept = [o for o in model["outliers"] if o["function"] == request["id"]]
    slow_by_shape = collections.Counter(o["shape"] for o in kept)
    slow_paths = []  # (mean, functions) of the shapes that call more than their cluster's common one
    for c in request_clusters:
        stats = c["stats"]
        print(f"  cluster {c['id']}: {c['calls']:,} requests in {len(c['shapes'])} shapes, "
              f"mean {stats['mean_ns'] / 1000:.1f} us, p99 {stats['p99_ns'] / 1000:.1f} us, "
              f"{sum(slow_by_shape[s] for s in c['shapes'])} of the {len(kept)} slowest requests kept")
        common = max(c["shapes"], key=lambda s: shapes[s]["calls"])
        for s in sorted(c["shapes"], key=lambda s: -shapes[s]["stats"]["mean_ns"]):
            extra_ids = called(s) - called(common)
            extra = sorted(short(functions[f]["name"]) for f in extra_ids)
            if not extra and s != common:
                continue
            slow_paths.append((shapes[s]["stats"]["mean_ns"], extra_ids))
            what = "the common path" if s == common else "also calls " + ", ".join(extra[:4])
            st = shapes[s]["stats"]
            print(f"    shape {s}: {shapes[s]['calls']:>9,} requests, mean "
                  f"{st['mean_ns'] / 1000:>9.1f} us, {slow_by_shape[s]:>3} slow: {what}")
    # The functions that only the slowest shapes call, the slowest shape's first.
    telling = []
    for _, extra_ids in sorted(slow_paths, key=lambda p: -p[0]):
        telling += [f for f in sorted(extra_ids, key=lambda f: short(functions[f]["name"]))
                    if f not in telling]
    print_callers(model, functions, telling[:3])
    return 0


def print_callers(model, functions, targets):
    """Who calls each of `targets` (function ids), from the callers extension."""
    edges = model.get("extensions", {}).get("callers", {}).get("edges")
    if not edges or not targets:
        return
    print("\nwho calls the slow paths' functions (callers extension):")
    for target in targets:
        into = sorted((e for e in edges if e["callee"] == target), key=lambda e: -e["total_ns"])
        parts = []
        for e in into[:3]:
            caller = "(thread root)" if e["caller"] is None else short(functions[e["caller"]]["name"])
            mean = e["total_ns"] / e["measured"] / 1000 if e["measured"] else 0
            parts.append(f"{e['calls']:,} from {caller} (mean {mean:.1f} us)")
        print(f"  {short(functions[target]['name'])}: " + ", ".join(parts))


if __name__ == "__main__":
    sys.exit(main())
