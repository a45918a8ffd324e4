#!/usr/bin/env python3
"""Keeps `workspace-hack/Cargo.toml` in step with the workspace's feature resolution.

Why: `make build` compiles every crate once, with features unified over the whole
workspace. A build of one package (`cargo build -p X`, and maturin, which builds the
Python extension that way for the wheel) resolves features for X alone, so every
dependency whose features differ, and everything above it, compiles a second time.
The crate `opensandbox-workspace-hack` depends on those dependencies with the
workspace's features; the packages built on their own depend on it, so their
resolution equals the workspace's and the one build's artifacts are reused.

    scripts/workspace_hack.py --check   # fails when a single-package build would recompile
    scripts/workspace_hack.py --write   # regenerates the generated part of the hack

It reads cargo's unit graph (`--unit-graph`, an unstable flag, enabled for this
read-only query with RUSTC_BOOTSTRAP=1; nothing is built). Where that flag is not
available the check says so and passes.
"""

import argparse
import hashlib
import json
import os
import re
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
HACK = os.path.join(ROOT, "workspace-hack", "Cargo.toml")
BEGIN = "### BEGIN GENERATED (%s) by scripts/workspace_hack.py --write: do not edit"
END = "### END GENERATED"
# The packages that some step builds on their own (the wheel: maturin builds the lib).
SINGLE_BUILDS = [["rustc", "-p", "opensandbox-python", "--lib"]]
WORKSPACE_BUILD = ["build", "--workspace", "--all-targets"]


class Unavailable(Exception):
    pass


def unit_graph(args):
    env = dict(os.environ, RUSTC_BOOTSTRAP="1")
    cmd = ["cargo"] + args + ["--unit-graph", "-Z", "unstable-options"]
    p = subprocess.run(cmd, cwd=ROOT, env=env, capture_output=True, text=True)
    if p.returncode != 0:
        raise Unavailable("%s: %s" % (" ".join(cmd), p.stderr.strip().splitlines()[-1:]))
    return json.loads(p.stdout)["units"]


def unit_hashes(units):
    """A hash per unit over what decides its artifact, its dependencies' hashes included."""
    memo = {}

    def h(i):
        if i not in memo:
            u = units[i]
            deps = sorted(h(d["index"]) for d in u["dependencies"])
            # The profile's name is not part of an artifact's identity (cargo shares
            # `dev` and `test` artifacts): compare its settings only.
            profile = {k: v for k, v in u["profile"].items() if k != "name"}
            key = [u["pkg_id"], u["target"]["name"], u["target"]["kind"], u["mode"],
                   u["features"], profile, u.get("platform"), deps]
            memo[i] = hashlib.sha1(json.dumps(key, sort_keys=True).encode()).hexdigest()
        return memo[i]

    return {h(i): u for i, u in enumerate(units)}


def is_registry(pkg_id):
    return pkg_id.startswith("registry+")


def crate_name_version(pkg_id):
    # registry+https://github.com/rust-lang/crates.io-index#name@1.2.3
    name, version = pkg_id.rsplit("#", 1)[1].rsplit("@", 1)
    return name, version


def rebuilt(ws, single):
    """Units of the single-package build that the workspace build did not produce,
    other than the workspace's own crates (those are expected to relink)."""
    return [u for k, u in single.items() if k not in ws and is_registry(u["pkg_id"])]


def host_units(units):
    """Indices of the units compiled for the host: build scripts, proc macros and
    everything they depend on (cargo resolves their features apart from the rest)."""
    host = set()
    stack = [i for i, u in enumerate(units)
             if "proc-macro" in u["target"]["kind"] or u["target"]["kind"] == ["custom-build"]]
    while stack:
        i = stack.pop()
        if i in host:
            continue
        host.add(i)
        stack.extend(d["index"] for d in units[i]["dependencies"])
    return host


def feature_sets(units):
    """{(pkg_id, context): [feature sets]} of the registry crates' library units."""
    host = host_units(units)
    sets = {}
    for i, u in enumerate(units):
        if not is_registry(u["pkg_id"]) or u["mode"] != "build" or u["target"]["kind"] == ["custom-build"]:
            continue
        ctx = "host" if i in host and "proc-macro" not in u["target"]["kind"] else "target"
        if "proc-macro" in u["target"]["kind"]:
            ctx = "host"
        sets.setdefault((u["pkg_id"], ctx), []).append(set(u["features"]))
    return sets


def wanted_features(ws_units, single_units):
    """For each registry crate (and context) whose features differ, the workspace's
    feature set that covers the single build's (the union when several do)."""
    ws_sets = feature_sets(ws_units)
    want = {}
    for key, have_sets in feature_sets(single_units).items():
        sets = ws_sets.get(key, [])
        for have in have_sets:
            if any(have == s for s in sets):
                continue
            covering = [s for s in sets if have <= s] or sets
            union = set().union(*covering) if covering else have
            want.setdefault(key, set()).update(union)
    return want


def read_generated():
    text = open(HACK).read()
    blocks = {}
    for ctx in ("target", "host"):
        m = re.search(re.escape(BEGIN % ctx) + r"\n(.*?)" + re.escape(END), text, re.S)
        if not m:
            sys.exit("%s: generated %s block not found" % (HACK, ctx))
        blocks[ctx] = m
    return text, blocks


DEP_LINE = re.compile(r'^(\S+) = \{ package = "([^"]+)", version = "=([^"]+)", '
                      r'default-features = false, features = \[(.*)\] \}$')


def parse_deps(blocks):
    deps = {}
    for ctx, m in blocks.items():
        for line in m.group(1).splitlines():
            d = DEP_LINE.match(line)
            if d:
                feats = {f.strip().strip('"') for f in d.group(4).split(",") if f.strip()}
                deps[(d.group(2), d.group(3), ctx)] = feats
    return deps


def render(deps, ctx):
    lines = []
    for (name, version, c), feats in sorted(deps.items()):
        if c != ctx:
            continue
        alias = "%s-%s" % (name, version.replace(".", "-"))
        fl = ", ".join('"%s"' % f for f in sorted(feats))
        lines.append('%s = { package = "%s", version = "=%s", default-features = false, features = [%s] }'
                     % (alias, name, version, fl))
    return "\n".join(lines) + ("\n" if lines else "")


def write(deps):
    text, _ = read_generated()
    for ctx in ("target", "host"):
        _, blocks = None, None
        m = re.search(re.escape(BEGIN % ctx) + r"\n(.*?)" + re.escape(END), text, re.S)
        text = text[: m.start(1)] + render(deps, ctx) + text[m.end(1):]
    with open(HACK, "w") as f:
        f.write(text)


def main():
    ap = argparse.ArgumentParser()
    g = ap.add_mutually_exclusive_group(required=True)
    g.add_argument("--check", action="store_true")
    g.add_argument("--write", action="store_true")
    args = ap.parse_args()
    try:
        if args.write:
            for _ in range(6):
                ws_units = unit_graph(WORKSPACE_BUILD)
                _, blocks = read_generated()
                deps = parse_deps(blocks)
                changed = False
                for single in SINGLE_BUILDS:
                    want = wanted_features(ws_units, unit_graph(single))
                    for (pid, ctx), feats in want.items():
                        key = crate_name_version(pid) + (ctx,)
                        if not feats <= deps.get(key, set()):
                            deps[key] = deps.get(key, set()) | feats
                            changed = True
                if not changed:
                    break
                write(deps)
        ws = unit_hashes(unit_graph(WORKSPACE_BUILD))
        bad = 0
        for single in SINGLE_BUILDS:
            extra = rebuilt(ws, unit_hashes(unit_graph(single)))
            what = "cargo " + " ".join(single)
            if extra:
                bad += 1
                names = sorted({"%s@%s" % crate_name_version(u["pkg_id"]) for u in extra})
                print("workspace-hack: `%s` would recompile %d dependency units: %s"
                      % (what, len(extra), ", ".join(names[:20])))
            else:
                print("workspace-hack: `%s` reuses every dependency of the workspace build" % what)
        if bad:
            print("workspace-hack: run scripts/workspace_hack.py --write and commit workspace-hack/Cargo.toml")
            return 1
        return 0
    except Unavailable as e:
        print("workspace-hack: check skipped, cargo's unit graph is not available here (%s)" % e)
        return 0


if __name__ == "__main__":
    sys.exit(main())
