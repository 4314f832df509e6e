#!/usr/bin/env python3
"""Checks that the analyzer's libraries point only downward, as docs/analyzer.md draws them.

    check_layers.py SOURCE_DIR LINK_GRAPH

SOURCE_DIR is the repository, LINK_GRAPH the build's link_graph.tsv (cmake/LinkGraph.cmake). The
picture is the table under "## Layers" of docs/analyzer.md: a row per layer, its number first, the
libraries in backquotes. Fails (exit 1, each problem on a line) when
- a library of the table links a library of its own layer or of a layer above (layer 0 is what
  the analyzer builds on, the stream format and the command host: links within it are theirs);
- a library of the table links a library of the project that the table does not place;
- a file of a library includes a file of a library of its own layer or above (other than its own;
  a header belongs to the library of the .cpp file of its name, unless a library lists it);
- a library defined under analyzer/ or fleet/ is not in the table, or a file of theirs (a .cpp, .h
  or .inc under those folders) belongs to no library;
- the table names a library the build does not define.
"""
import os
import re
import sys

CHECKED_FOLDERS = ("analyzer", "fleet")
# Where a quoted include is looked for, in order (the include directories the libraries export).
INCLUDE_ROOTS = ("analyzer", "", "stream")


def read_picture(source_dir):
    path = os.path.join(source_dir, "docs", "analyzer.md")
    layer_of = {}
    in_section = False
    with open(path, encoding="utf-8") as doc:
        for line in doc:
            if line.startswith("## "):
                in_section = line.strip() == "## Layers"
                continue
            match = re.match(r"\|\s*(\d+)\b[^|]*\|([^|]*)\|", line) if in_section else None
            if match:
                for name in re.findall(r"`([A-Za-z0-9_]+)`", match.group(2)):
                    layer_of[name] = int(match.group(1))
    if not layer_of:
        sys.exit(f"check_layers: no layer table under '## Layers' in {path}")
    return layer_of


def read_graph(path):
    targets = {}
    with open(path, encoding="utf-8") as graph:
        for line in graph:
            name, kind, source_dir, sources, links = line.rstrip("\n").split("\t")
            files = []
            for source in filter(None, sources.split(",")):
                files.append(os.path.normpath(os.path.join(source_dir, source)))
            linked = []
            for link in filter(None, links.split(",")):
                only = re.fullmatch(r"\$<LINK_ONLY:(.*)>", link)
                linked.append(only.group(1) if only else link)
            targets[name] = {"kind": kind, "dir": source_dir, "files": files, "links": linked}
    return targets


def resolve(source_dir, include):
    for root in INCLUDE_ROOTS:
        candidate = os.path.normpath(os.path.join(source_dir, root, include))
        if os.path.isfile(candidate):
            return candidate
    return None  # a system or generated header


def main():
    if len(sys.argv) != 3:
        sys.exit("usage: check_layers.py SOURCE_DIR LINK_GRAPH")
    source_dir = os.path.realpath(sys.argv[1])
    layer_of = read_picture(source_dir)
    targets = read_graph(sys.argv[2])
    problems = []

    for name in sorted(layer_of):
        if name not in targets:
            problems.append(f"the picture names {name}, which the build does not define")
    checked_dirs = [os.path.join(source_dir, folder) for folder in CHECKED_FOLDERS]
    for name, target in sorted(targets.items()):
        in_checked = any(target["dir"] == d or target["dir"].startswith(d + os.sep)
                         for d in checked_dirs)
        if in_checked and name not in layer_of:
            problems.append(f"{name} ({target['dir']}) is not in the picture of layers")

    # Links.
    for name, layer in sorted(layer_of.items()):
        for link in targets.get(name, {"links": []})["links"]:
            if link not in targets:
                continue  # outside the project
            if link not in layer_of:
                problems.append(f"{name} links {link}, which the picture does not place")
            elif layer_of[link] >= layer and layer > 0:
                problems.append(f"{name} (layer {layer}) links {link} (layer {layer_of[link]})")

    # Includes: each file belongs to the library that lists it.
    owner = {}
    for name in layer_of:
        for path in targets.get(name, {"files": []})["files"]:
            owner[path] = name
    for path, name in list(owner.items()):
        header = os.path.splitext(path)[0] + ".h"
        if path.endswith(".cpp") and os.path.isfile(header):
            owner.setdefault(header, name)
    for folder in checked_dirs:
        for root, _, names in os.walk(folder):
            for file_name in names:
                path = os.path.join(root, file_name)
                if file_name.endswith((".cpp", ".h", ".inc")) and path not in owner:
                    problems.append(f"{os.path.relpath(path, source_dir)} belongs to no library")
    include = re.compile(r'^\s*#\s*include\s+"([^"]+)"')
    for path, name in sorted(owner.items()):
        if not os.path.isfile(path):
            continue  # generated
        with open(path, encoding="utf-8") as source:
            for number, line in enumerate(source, 1):
                match = include.match(line)
                if not match:
                    continue
                target_file = resolve(source_dir, match.group(1))
                other = owner.get(target_file)
                if other is None or other == name:
                    continue
                if layer_of[other] >= layer_of[name] and layer_of[name] > 0:
                    problems.append(
                        f"{os.path.relpath(path, source_dir)}:{number} ({name}, layer "
                        f"{layer_of[name]}) includes {match.group(1)} ({other}, layer "
                        f"{layer_of[other]})")

    for problem in problems:
        print(problem)
    if problems:
        return 1
    print(f"check_layers: {len(layer_of)} libraries, {len(owner)} files: every link and include "
          "points down")
    return 0


if __name__ == "__main__":
    sys.exit(main())
