#!/usr/bin/env python3
"""Cross-language Redis pool test: one redis-server, one reference server, the
conformance drivers of the languages with a client-side pool (PROTOCOL.md §2.11, §5).

    python3 conformance/test_pool_interop.py --server target/debug/opensandbox-server
        [--lang go --lang java ...] [--keep]

Phase 1 (Python warms, every other language takes): the Python driver (the reference:
its store follows the official wheel) starts a pool on the Redis store and warms one
idle sandbox per other language. The test checks the keys Python wrote (the official
layout), then holds the pool's primary lock itself, so that no instance refills while
the languages take their share. Each other language opens the same pool name, sees the
idle count and the same idle ids in the same order, acquires the oldest one with
FAIL_FAST, runs a command in it; Python then sees the count drop by one, and the lock is
still the test's (a language with another lock key would have taken its own and
refilled).

Phase 2 (each language warms, Python takes): each other language warms a pool of its
own name to one idle sandbox; Python opens that name, sees the sandbox and acquires it.

Standard library only (the harness's classes). The last line is `N passed, N failed`;
the exit status is 1 when a check failed, 2 on a setup problem.
"""

import argparse
import base64
import os
import shutil
import sys
import tempfile
import time
import traceback
import uuid

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import harness as h  # noqa: E402

REFERENCE = "python"
POOL_LANGS = ("go", "java", "node")
LOCK_HOLDER = "interop-test"


class CheckFailed(Exception):
    pass


def pool_key(prefix, pool_name, suffix):
    """The official layout: `{prefix}:{<base64url(pool name), unpadded>}:{suffix}`."""
    tag = base64.urlsafe_b64encode(pool_name.encode("utf-8")).decode("ascii").rstrip("=")
    return "%s:{%s}:%s" % (prefix, tag, suffix)


class Interop:
    def __init__(self, server, redis, workdir, langs, timeout):
        self.server = server
        self.redis = redis
        self.workdir = workdir
        self.langs = langs
        self.timeout = timeout
        self.drivers = {}
        self.results = []  # (label, ok, reason)
        self.run_id = uuid.uuid4().hex[:10]
        self.prefix = "interop:%s" % self.run_id

    # -- plumbing

    def driver(self, lang):
        d = self.drivers.get(lang)
        if d is None or not d.alive():
            spec = {s.language: s for s in h.discover_drivers([lang])}[lang]
            missing = spec.missing()
            if missing:
                raise CheckFailed("%s driver not available: %s" % (lang, missing))
            d = h.Driver(spec, self.server, self.workdir)
            d.start()
            self.drivers[lang] = d
        return d

    def call(self, lang, op, args, timeout=None):
        try:
            resp = self.driver(lang).call(op, args, timeout or self.timeout)
        except h.DriverDied as e:
            self.drivers.pop(lang, None)
            raise CheckFailed("%s %s: driver died: %s" % (lang, op, e))
        if not resp.get("ok"):
            raise CheckFailed("%s %s: %s" % (lang, op, h.show(resp.get("error"), 400)))
        return resp.get("result")

    def expect(self, what, got, want):
        why = h.match(want, got, what)
        if why:
            raise CheckFailed(why)

    def wait_idle(self, lang, name, count, timeout=90.0):
        deadline = time.monotonic() + timeout
        while True:
            snap = self.call(lang, "pool.snapshot", {"pool_name": name})
            if snap.get("idle_count") == count:
                return snap
            if time.monotonic() > deadline:
                raise CheckFailed("%s: pool %s has %s idle after %.0fs, expected %d"
                                  % (lang, name, snap.get("idle_count"), timeout, count))
            time.sleep(0.25)

    def start_pool(self, lang, name, max_idle, owner):
        return self.call(lang, "pool.start", {
            "pool_name": name, "max_idle": max_idle, "store": "redis", "redis_url": self.redis.url,
            "key_prefix": self.prefix, "idle_timeout_s": 600, "reconcile_interval_s": 1, "owner_id": owner,
            "metadata": {"pool-interop": self.run_id}})

    def check(self, label, fn):
        started = time.monotonic()
        try:
            fn()
            ok, reason = True, ""
        except CheckFailed as e:
            ok, reason = False, str(e)
        except Exception as e:  # a bug here must not hide the other checks
            ok, reason = False, "test error: %s" % "".join(traceback.format_exception_only(type(e), e)).strip()
        self.results.append((label, ok, reason))
        mark = "ok  " if ok else "FAIL"
        line = "[interop] %s %s (%.1fs)" % (mark, label, time.monotonic() - started)
        if not ok:
            line += "\n        " + reason
        print(line, file=sys.stderr, flush=True)
        return ok

    # -- phase 1: the reference warms, every other language takes

    def phase1(self):
        name = "interop-%s" % self.run_id
        n = len(self.langs)
        state = {"taken": []}

        def warm():
            self.start_pool(REFERENCE, name, n, "interop-%s" % REFERENCE)
            self.wait_idle(REFERENCE, name, n)
            entries = self.call(REFERENCE, "pool.idle_entries", {"pool_name": name})
            state["idle"] = [e["sandbox_id"] for e in entries]
            # The keys the reference wrote: the official layout.
            r = self.redis
            self.expect("LLEN idle:list", r.command("LLEN", pool_key(self.prefix, name, "idle:list")), n)
            self.expect("LRANGE idle:list", r.command("LRANGE", pool_key(self.prefix, name, "idle:list"), 0, -1),
                        state["idle"])
            self.expect("HLEN idle:expires", r.command("HLEN", pool_key(self.prefix, name, "idle:expires")), n)
            self.expect("GET maxIdle", r.command("GET", pool_key(self.prefix, name, "maxIdle")), str(n))
            self.expect("GET idleTtlMillis", r.command("GET", pool_key(self.prefix, name, "idleTtlMillis")), "600000")
            self.expect("GET lock", r.command("GET", pool_key(self.prefix, name, "lock")), "interop-%s" % REFERENCE)
            # From here on nobody refills: the test holds the primary lock.
            self.expect("SET lock", r.command("SET", pool_key(self.prefix, name, "lock"), LOCK_HOLDER,
                                              "PX", 600000), "OK")

        if not self.check("%s warms %d idle sandboxes into Redis (official key layout)" % (REFERENCE, n), warm):
            return
        for lang in self.langs:

            def take(lang=lang):
                # What the reference sees now (so that one language's failure does not
                # fail the next one's check too).
                idle = [e["sandbox_id"] for e in self.call(REFERENCE, "pool.idle_entries", {"pool_name": name})]
                if not idle:
                    raise CheckFailed("no idle sandbox left for %s" % lang)
                self.start_pool(lang, name, n, "interop-%s" % lang)
                snap = self.call(lang, "pool.snapshot", {"pool_name": name})
                self.expect("%s snapshot" % lang, snap,
                            {"lifecycle_state": "RUNNING", "idle_count": len(idle), "max_idle": n})
                entries = self.call(lang, "pool.idle_entries", {"pool_name": name})
                self.expect("%s idle ids" % lang, [e["sandbox_id"] for e in entries], idle)
                got = self.call(lang, "pool.acquire", {"pool_name": name, "policy": "FAIL_FAST",
                                                       "sandbox_timeout_s": 300}, timeout=90)
                state["taken"].append(got["id"])
                self.expect("%s acquired id (the oldest idle)" % lang, got["id"], idle[0])
                self.expect("%s acquired id (one the reference warmed)" % lang, got["id"], {"$in": state["idle"]})
                run = self.call(lang, "commands.run", {"sandbox": got["id"], "command": "echo interop-%s" % lang})
                self.expect("%s run" % lang, run, {"exit_code": 0, "stdout": ["interop-%s" % lang]})
                time.sleep(1.5)  # a reconcile tick of every instance: nobody may refill
                snap = self.call(REFERENCE, "pool.snapshot", {"pool_name": name})
                self.expect("%s snapshot after %s acquired" % (REFERENCE, lang), snap, {"idle_count": len(idle) - 1})
                snap = self.call(lang, "pool.snapshot", {"pool_name": name})
                self.expect("%s snapshot after acquire" % lang, snap, {"idle_count": len(idle) - 1})
                self.expect("GET lock", self.redis.command("GET", pool_key(self.prefix, name, "lock")), LOCK_HOLDER)
                self.call(lang, "pool.shutdown", {"pool_name": name})
                self.call(lang, "sandbox.kill", {"sandbox": got["id"]})

            self.check("%s takes one of %s's idle sandboxes and runs a command; %s sees one fewer"
                       % (lang, REFERENCE, REFERENCE), take)

        def finish():
            self.expect("every warmed sandbox taken once", sorted(state["taken"]), sorted(state["idle"]))
            self.expect("release_all_idle", self.call(REFERENCE, "pool.release_all_idle", {"pool_name": name}),
                        {"count": 0})
            self.call(REFERENCE, "pool.shutdown", {"pool_name": name})

        self.check("each of %s's sandboxes was taken once; its pool is empty at the end" % REFERENCE, finish)
        self.redis.command("DEL", pool_key(self.prefix, name, "lock"))

    # -- phase 2: every other language warms, the reference takes

    def phase2(self):
        for lang in self.langs:
            name = "interop-%s-%s" % (lang, self.run_id)

            def give(lang=lang, name=name):
                self.start_pool(lang, name, 1, "interop-%s" % lang)
                self.wait_idle(lang, name, 1)
                entries = self.call(lang, "pool.idle_entries", {"pool_name": name})
                self.expect("%s idle entries" % lang, entries,
                            {"$len": 1, "$first": {"expires_at": {"$timestamp": True}}})
                warmed = entries[0]["sandbox_id"]
                self.expect("GET lock", self.redis.command("GET", pool_key(self.prefix, name, "lock")),
                            "interop-%s" % lang)
                self.start_pool(REFERENCE, name, 1, "interop-%s-taker" % REFERENCE)
                snap = self.call(REFERENCE, "pool.snapshot", {"pool_name": name})
                self.expect("%s snapshot" % REFERENCE, snap, {"idle_count": 1, "max_idle": 1})
                got = self.call(REFERENCE, "pool.acquire", {"pool_name": name, "policy": "FAIL_FAST",
                                                            "sandbox_timeout_s": 300}, timeout=90)
                self.expect("%s acquired id" % REFERENCE, got["id"], warmed)
                run = self.call(REFERENCE, "commands.run", {"sandbox": got["id"], "command": "echo from-%s" % lang})
                self.expect("%s run" % REFERENCE, run, {"exit_code": 0, "stdout": ["from-%s" % lang]})
                self.call(REFERENCE, "sandbox.kill", {"sandbox": got["id"]})
                self.call(REFERENCE, "pool.shutdown", {"pool_name": name})
                self.call(lang, "pool.shutdown", {"pool_name": name})
                self.call(lang, "pool.release_all_idle", {"pool_name": name})

            self.check("%s warms a pool into Redis; %s takes its sandbox and runs a command" % (lang, REFERENCE),
                       give)

    def close(self):
        for d in self.drivers.values():
            d.stop()
            d.kill()


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--server", default=os.environ.get("OPENSANDBOX_SERVER_BIN"),
                    help="path of the opensandbox-server binary (env OPENSANDBOX_SERVER_BIN)")
    ap.add_argument("--lang", action="append", default=[],
                    help="a language that takes from (and gives to) the Python pool (repeatable; "
                         "default: %s)" % ", ".join(POOL_LANGS))
    ap.add_argument("--step-timeout", type=float, default=h.DEFAULT_STEP_TIMEOUT)
    ap.add_argument("--keep", action="store_true", help="keep the work directory (logs)")
    args = ap.parse_args(argv)
    langs = args.lang or list(POOL_LANGS)

    workdir = tempfile.mkdtemp(prefix="osb-pool-interop-")
    # The pools' behaviour, not the sandboxes' isolation, is under test: no isolation.
    server = h.Server(os.path.abspath(args.server or ""), "none", workdir)
    redis = h.RedisServer(workdir)
    test = None
    try:
        if not args.server or not os.path.isfile(args.server):
            raise h.SetupError("server binary not found: %r (pass --server)" % args.server)
        redis.ensure()
        server.start()
        print("pool interop: server %s, redis %s, %s warms for %s; logs in %s"
              % (server.domain, redis.url, REFERENCE, ", ".join(langs), workdir), file=sys.stderr, flush=True)
        test = Interop(server, redis, workdir, langs, args.step_timeout)
        test.phase1()
        test.phase2()
    except h.SetupError as e:
        print("pool interop: %s" % e, file=sys.stderr)
        print("0 passed, 0 failed")
        return 2
    finally:
        if test is not None:
            test.close()
        if server.domain:
            server.delete_all_sandboxes()
        server.stop()
        redis.stop()
    passed = sum(1 for _, ok, _ in test.results if ok)
    failed = len(test.results) - passed
    print()
    print("cross-language Redis pool (python + %s)" % ", ".join(langs))
    for label, ok, reason in test.results:
        print("  %s %s" % ("\u2713" if ok else "\u2717", label))
        if not ok:
            print("      %s" % reason.splitlines()[0][:600])
    if failed or args.keep:
        print("logs kept in %s" % workdir)
    else:
        shutil.rmtree(workdir, ignore_errors=True)
    print("%d passed, %d failed" % (passed, failed))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
