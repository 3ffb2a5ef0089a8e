#!/usr/bin/env python3
"""Fails when a public symbol has no documentation comment.

  docs/check-documented.py SYMBOL_GRAPH_DIR MODULE...

Reads the symbol graphs `swift package dump-symbol-graph` writes (the module's own and those of
its extensions to other modules). A symbol that implements a documented protocol requirement
inherits that documentation (the symbol graph carries it), so it counts as documented;
compiler-synthesized symbols and `extension` blocks themselves (their members are checked) are
skipped.
"""
import glob
import json
import os
import sys

directory, modules = sys.argv[1], sys.argv[2:]
missing = []
counted = 0
for module in modules:
    graphs = glob.glob(os.path.join(directory, f"{module}.symbols.json"))
    graphs += glob.glob(os.path.join(directory, f"{module}@*.symbols.json"))
    if not graphs:
        sys.exit(f"no symbol graph for {module} in {directory}")
    for path in graphs:
        for symbol in json.load(open(path, encoding="utf-8"))["symbols"]:
            if symbol.get("accessLevel") not in ("public", "open"):
                continue
            if "::SYNTHESIZED::" in symbol["identifier"]["precise"]:
                continue
            if symbol["kind"]["identifier"] == "swift.extension":
                continue  # an `extension` block; its members are checked
            counted += 1
            if symbol.get("docComment"):
                continue
            location = symbol.get("location", {})
            where = location.get("uri", "?").replace("file://", "")
            line = location.get("position", {}).get("line", -1) + 1
            missing.append(f"{where}:{line}: {module}.{'.'.join(symbol['pathComponents'])}")
for entry in sorted(missing):
    print(f"undocumented public symbol: {entry}")
if missing:
    sys.exit(f"{len(missing)} of {counted} public symbols have no documentation comment")
print(f"all {counted} public symbols of {', '.join(modules)} are documented")
