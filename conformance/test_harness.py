#!/usr/bin/env python3
"""Unit tests of the harness's own logic (matching, variables, case files), no server.

    python3 -m unittest conformance/test_harness.py
"""

import contextlib
import io
import json
import os
import queue
import shutil
import sys
import tempfile
import threading
import time
import types
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import harness as h  # noqa: E402


class MatchTest(unittest.TestCase):
    def ok(self, pattern, value):
        self.assertIsNone(h.match(pattern, value), "%r should match %r" % (pattern, value))

    def bad(self, pattern, value, fragment=""):
        why = h.match(pattern, value)
        self.assertIsNotNone(why, "%r should not match %r" % (pattern, value))
        self.assertIn(fragment, why)

    def test_objects_are_partial_and_missing_is_null(self):
        self.ok({"a": 1}, {"a": 1, "b": 2})
        self.ok({"a": None}, {})
        self.bad({"a": {"b": [1, {"c": 2}]}}, {"a": {"b": [1, {"c": 3}]}}, "result.a.b[1].c")

    def test_lists_are_exact_length(self):
        self.bad([1, 2], [1, 2, 3], "expected 2 items")
        self.ok([], [])

    def test_scalars_keep_bool_and_number_apart(self):
        self.ok(3, 3.0)
        self.bad(True, 1)
        self.bad(1, True)
        self.bad("1", 1)

    def test_list_matchers(self):
        events = [{"t": "init"}, {"t": "out", "x": 1}, {"t": "err"}, {"t": "out", "x": 2}, {"t": "end"}]
        self.ok({"$first": {"t": "init"}, "$last": {"t": "end"}, "$len": 5}, events)
        self.ok({"$ordered": [{"t": "init"}, {"x": 1}, {"x": 2}, {"t": "end"}]}, events)
        self.bad({"$ordered": [{"x": 2}, {"x": 1}]}, events, "not found in order")
        self.ok({"$count": [{"t": "out"}, 2]}, events)
        self.ok({"$where": [{"t": "out"}, [{"x": 1}, {"x": 2}]]}, events)
        self.ok({"$contains": {"t": "err"}, "$not_contains": {"t": "nope"}}, events)
        self.ok({"$at": [1, {"x": 1}]}, events)
        self.bad({"$each": {"t": "out"}}, events, "result[0]")

    def test_time_matchers(self):
        self.ok({"$after": "2025-01-01T00:00:00Z"}, "2025-01-01T00:00:00.000001+00:00")
        self.bad({"$after": "2025-01-01T00:00:00Z"}, "2025-01-01T00:00:00Z")
        self.ok({"$offset_s": ["2025-01-01T00:00:00Z", 900, 30]}, "2025-01-01T01:15:10+01:00")
        self.ok({"$within_s": ["2025-01-01T00:00:00Z", 1]}, "2025-01-01T00:00:00.5Z")
        self.bad({"$timestamp": True}, "yesterday", "RFC 3339")

    def test_generated_data_matchers(self):
        digest = "9834876dcfb05cb167a5c24953eba58c4ac89b1adf57f28f2f9d09af107ee8f0"  # sha256("aaa")
        self.ok({"$sha256_of_repeat": {"text": "a", "times": 3}}, digest)
        self.ok({"$size_of_repeat": {"text": "ab", "times": 3}}, 6)
        self.ok({"$base64": "789"}, "Nzg5")

    def test_logic_and_types(self):
        self.ok({"$in": [[], None]}, None)
        self.ok({"$type": "int"}, 1)
        self.bad({"$type": "int"}, True)
        self.ok({"$type": "number"}, 2)
        self.ok({"$any_of": [{"$type": "string"}, {"$gt": 5}]}, 6)
        self.ok({"$not": {"$regex": "^https?://"}}, "host:1/x")
        self.ok({"x": {"$absent": True}}, {})
        self.bad({"x": {"$absent": True}}, {"x": 1})
        self.bad({"$bogus": 1}, 1, "unknown matcher")


class VariableTest(unittest.TestCase):
    def test_whole_reference_keeps_type(self):
        scope = {"r": {"cursor": 6, "ids": ["a", "b"]}}
        self.assertEqual(h.substitute("${r.cursor}", scope), 6)
        self.assertEqual(h.substitute({"k": ["${r.ids.1}"]}, scope), {"k": ["b"]})
        self.assertEqual(h.substitute("at ${r.cursor}!", scope), "at 6!")

    def test_escape_and_undefined(self):
        self.assertEqual(h.substitute("echo $${HOME-x}", {}), "echo ${HOME-x}")
        with self.assertRaises(h.StepFailure):
            h.substitute("${nope.x}", {})

    def test_driver_command_expansion_nests(self):
        text = "${CONF_TEST_UNSET_VAR:-${CONF_TEST_UNSET_2:-${REPO}/target}/debug/x}"
        self.assertEqual(h.expand(text, {"REPO": "/r"}), "/r/target/debug/x")


class CheckTest(unittest.TestCase):
    def test_expectations(self):
        ok = {"ok": True, "result": {"a": 1}}
        err = {"ok": False, "error": {"kind": "not_found", "status": 404}}
        self.assertIsNone(h.check({}, ok, {}))
        self.assertIsNotNone(h.check({}, err, {}))
        self.assertIsNone(h.check({"expect": {"error": {"kind": "not_found"}}}, err, {}))
        self.assertIsNotNone(h.check({"expect": {"error": {"kind": "api"}}}, ok, {}))
        alt = {"expect": {"any_of": [{"error": {"status": 400}}, {"result": {"a": 1}}]}}
        self.assertIsNone(h.check(alt, ok, {}))
        self.assertIsNone(h.check({"expect": "any"}, err, {}))


class CaseFilesTest(unittest.TestCase):
    def test_every_case_file_loads_and_uses_known_ops(self):
        cases_dir = os.path.join(os.path.dirname(os.path.abspath(__file__)), "cases")
        files = h.load_cases(cases_dir, None)
        total = sum(len(cf.cases) for cf in files)
        self.assertGreaterEqual(total, 60)
        protocol = open(os.path.join(os.path.dirname(cases_dir), "PROTOCOL.md"), encoding="utf-8").read()
        for cf in files:
            steps = [f for f in cf.fixtures.values()]
            for case in cf.cases:
                steps += case["steps"] + case.get("cleanup", [])
            for step in steps:
                op = step["op"]
                if not op.startswith("harness."):
                    self.assertIn("`%s`" % op, protocol, "%s: op %s is not documented" % (cf.path, op))
                json.dumps(step)


class FramingTest(unittest.TestCase):
    """Kept-framing results are matched in the lines form the cases are written in."""

    def test_kept_texts_become_lines(self):
        # What `printf 'a\n\nb\r\nc'` gives under each framing (protocol.md §4.2).
        lines, _ = h.kept_to_lines(["a\n", "\n", "b\r\n", "c"])
        self.assertEqual(lines, ["a", "\n", "b", "c"])
        # Several lines in one text, a CRLF cut between two texts, a lone CR.
        lines, _ = h.kept_to_lines(["one\ntwo\r", "\nthree\rfour\n"])
        self.assertEqual(lines, ["one", "two", "three", "four"])
        self.assertEqual(h.kept_to_lines([])[0], [])
        self.assertEqual(h.kept_to_lines(["end\r"])[0], ["end"])

    def test_timestamps_follow_their_lines(self):
        lines, stamps = h.kept_to_lines(["a\nb\n", "c"], [10, 20])
        self.assertEqual((lines, stamps), (["a", "b", "c"], [10, 10, 20]))

    def test_events_are_recut_in_order(self):
        events = [{"type": "init", "id": "x"}, {"type": "stdout", "text": "a\nb\n"},
                  {"type": "stderr", "text": "e\n"}, {"type": "stdout", "text": "tail"},
                  {"type": "execution_complete"}]
        self.assertEqual(h.kept_events_to_lines(events), [
            {"type": "init", "id": "x"}, {"type": "stdout", "text": "a"},
            {"type": "stdout", "text": "b"}, {"type": "stderr", "text": "e"},
            {"type": "stdout", "text": "tail"}, {"type": "execution_complete"}])

    def test_framing_dependent_cases_run_twice(self):
        run = {"name": "x", "steps": [{"op": "commands.run", "expect": {"result": {"stdout": ["hi"]}}}]}
        other = {"name": "y", "steps": [{"op": "files.read_file", "expect": {"result": "hi"}}]}
        session = {"name": "z", "steps": [{"op": "commands.run_in_session",
                                           "expect": {"result": {"stdout": ["hi"]}}}]}
        self.assertEqual(h.case_framings(run, None), ["lines", "kept"])
        self.assertEqual(h.case_framings(other, None), ["lines"])
        self.assertEqual(h.case_framings(session, None), ["lines"])
        self.assertEqual(h.case_framings(dict(run, framings=["lines"]), None), ["lines"])
        self.assertEqual(h.case_framings(run, ["lines"]), ["lines"])

    def test_kept_runs_create_with_the_extension_and_reframe(self):
        scope = {"__framing": "kept", "__framed_handles": set()}
        started = {"ok": True, "result": {"handle": 7, "id": "c"}}
        self.assertIs(h.Runner.reframe("commands.start", {}, started, scope), started)
        waited = {"ok": True, "result": {"stdout": ["a\nb\n"], "stderr": []}}
        self.assertEqual(h.Runner.reframe("execution.wait", {"handle": 7}, waited, scope)["result"]["stdout"],
                         ["a", "b"])
        code = {"ok": True, "result": {"stdout": ["hi\n"]}}
        self.assertIs(h.Runner.reframe("execution.wait", {"handle": 8}, code, scope), code)
        self.assertIs(h.Runner.reframe("commands.run", {}, waited, {"__framing": "lines"}), waited)

    def test_case_files_expand_kept_variants(self):
        files = h.load_cases(os.path.join(os.path.dirname(os.path.abspath(__file__)), "cases"), None)
        names = {"%s/%s" % (cf.area, c["name"]) for cf in files for c in cf.cases}
        self.assertIn("commands/stdout_stderr_are_separate@kept", names)
        self.assertNotIn("commands/kept_framing_keeps_line_endings@kept", names)
        self.assertFalse([n for n in names if n.startswith("isolation/") and n.endswith("@kept")])
        self.assertFalse([n for n in names if n.startswith("sessions/") and n.endswith("@kept")])


class LangsTest(unittest.TestCase):
    """Cases that name their languages (`"langs"`) are skipped, with their reason, in the
    other columns: the pools of python, go, java and node, which Rust and C# do not have."""

    POOL_REASON = "no client-side pool in this SDK (official C# has none)"

    def case_file(self, data):
        d = tempfile.mkdtemp()
        self.addCleanup(shutil.rmtree, d, True)
        path = os.path.join(d, "area.json")
        with open(path, "w", encoding="utf-8") as f:
            json.dump(data, f)
        return h.CaseFile(path)

    def runner(self, lang, isolation="none", redis=None):
        spec = types.SimpleNamespace(language=lang)
        server = types.SimpleNamespace(domain="127.0.0.1:1", api_key="k", delete_sandbox=lambda sid: None)
        args = types.SimpleNamespace(isolation=isolation, step_timeout=1.0)
        r = h.Runner(spec, server, tempfile.gettempdir(), args)
        r.redis = redis
        return r

    def run_case_file(self, cf, lang, **kw):
        r = self.runner(lang, **kw)
        reports = []
        r.run_file(cf, lambda *a: reports.append(a))
        self.assertIsNone(r.driver, "a skipped case must not start the driver")
        return r, reports

    def test_skip_reason(self):
        case = {"name": "c", "steps": [], "langs": ["python", "go"], "langs_reason": self.POOL_REASON}
        self.assertIsNone(h.skip_reason(case, "python", "none"))
        self.assertEqual(h.skip_reason(case, "csharp", "none"), "skipped: " + self.POOL_REASON)
        self.assertEqual(h.skip_reason(case, "rust", "runc"), "skipped: " + self.POOL_REASON)
        self.assertIsNone(h.skip_reason({"name": "c", "steps": []}, "csharp", "none"), "no langs: every language")
        self.assertIn("not a case of this language", h.skip_reason({"langs": []}, "go", "none"))
        # The older needs keep their reasons.
        self.assertIn("OCI runtime", h.skip_reason({"needs": ["runc"]}, "go", "bwrap"))
        self.assertIn("isolation", h.skip_reason({"needs": ["isolation"]}, "go", "none"))
        self.assertIsNone(h.skip_reason({"needs": ["isolation"]}, "go", "runc"))

    def test_redis_need_is_skipped_without_a_redis_server(self):
        redis = h.RedisServer(tempfile.gettempdir())
        redis.binary = "/nonexistent/redis-server"
        self.assertIn("needs redis-server", h.skip_reason({"needs": ["redis"]}, "go", "none", redis))

    def test_file_level_langs_apply_to_every_case_and_skip_other_columns(self):
        cf = self.case_file({"area": "pool", "langs": ["python", "go", "java", "node"],
                             "langs_reason": self.POOL_REASON,
                             "cases": [{"name": "a", "steps": []},
                                       {"name": "b", "steps": [], "langs": ["python"]}]})
        self.assertEqual([c["langs"] for c in cf.cases], [["python", "go", "java", "node"], ["python"]])
        for lang in ("csharp", "rust"):
            r, reports = self.run_case_file(cf, lang)
            self.assertEqual(r.results["pool/a"], (None, "skipped: " + self.POOL_REASON, 0.0))
            self.assertEqual(r.results["pool/b"], (None, "skipped: " + self.POOL_REASON, 0.0))
            self.assertEqual([(rep[1], rep[2]) for rep in reports], [("pool/a", None), ("pool/b", None)])
        r, _ = self.run_case_file(cf, "go")
        self.assertIs(r.results["pool/a"][0], True, "a case of go runs in go's column")
        self.assertIsNone(r.results["pool/b"][0])

    def test_bad_langs_is_a_setup_error(self):
        with self.assertRaises(h.SetupError):
            self.case_file({"area": "x", "cases": [{"name": "a", "steps": [], "langs": "python"}]})

    def test_skipped_cells_count_neither_passed_nor_failed(self):
        cf = self.case_file({"area": "pool", "langs": ["go"], "langs_reason": self.POOL_REASON,
                             "cases": [{"name": "a", "steps": []}]})
        runners = []
        for lang in ("go", "csharp"):
            r, _ = self.run_case_file(cf, lang)
            runners.append(r)
        buf = io.StringIO()
        with contextlib.redirect_stdout(buf):
            passed, failed = h.print_matrix([cf], runners)
        self.assertEqual((passed, failed), (1, 0))
        self.assertIn("1 skipped", buf.getvalue())
        self.assertIn("1 skipped: " + self.POOL_REASON, buf.getvalue())

    def test_pool_cases_name_the_four_pool_languages(self):
        cases_dir = os.path.join(os.path.dirname(os.path.abspath(__file__)), "cases")
        cf = h.CaseFile(os.path.join(cases_dir, "pool.json"))
        self.assertGreaterEqual(len(cf.cases), 5)
        for case in cf.cases:
            self.assertEqual(sorted(case["langs"]), ["go", "java", "node", "python"])
            self.assertEqual(h.skip_reason(case, "csharp", "none"), "skipped: " + self.POOL_REASON)
        self.assertTrue(any("redis" in c.get("needs", []) for c in cf.cases))


@unittest.skipUnless(shutil.which("redis-server"), "redis-server is not installed")
class RedisServerTest(unittest.TestCase):
    def test_starts_once_and_speaks_resp(self):
        d = tempfile.mkdtemp()
        self.addCleanup(shutil.rmtree, d, True)
        redis = h.RedisServer(d)
        self.addCleanup(redis.stop)
        url = redis.ensure()
        self.assertRegex(url, r"^redis://127\.0\.0\.1:\d+/0$")
        self.assertEqual(redis.ensure(), url)
        self.assertEqual(redis.command("SET", "k", "v é"), "OK")
        self.assertEqual(redis.command("GET", "k"), "v é")
        self.assertIsNone(redis.command("GET", "missing"))
        self.assertEqual(redis.command("RPUSH", "l", "a", "b"), 2)
        self.assertEqual(redis.command("LRANGE", "l", 0, -1), ["a", "b"])
        with self.assertRaises(OSError):
            redis.command("NOSUCHCOMMAND")

    def test_concurrent_columns_start_one_server(self):
        d = tempfile.mkdtemp()
        self.addCleanup(shutil.rmtree, d, True)
        redis = h.RedisServer(d)
        self.addCleanup(redis.stop)
        urls = []
        threads = [threading.Thread(target=lambda: urls.append(redis.ensure())) for _ in range(4)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        self.assertEqual(len(set(urls)), 1, urls)


class RunColumnsTest(unittest.TestCase):
    class FakeRunner:
        def __init__(self, name, running, peak, fail=False):
            self.name, self.running, self.peak, self.fail = name, running, peak, fail
            self.results = {}

        def run(self, files, report):
            with self.running[1]:
                self.running[0] += 1
                self.peak.append(self.running[0])
            time.sleep(0.2)
            with self.running[1]:
                self.running[0] -= 1
            if self.fail:
                raise ValueError("boom")
            for cf in files:
                for c in cf.cases:
                    self.results["%s/%s" % (cf.area, c["name"])] = (True, "", 0.0)

    def columns(self, jobs, fail=()):
        running, peak = [0, threading.Lock()], []
        runners = [self.FakeRunner(n, running, peak, n in fail) for n in ("a", "b", "c")]
        pending = queue.Queue()
        for r in runners:
            pending.put(r)
        files = [types.SimpleNamespace(area="x", cases=[{"name": "one"}])]
        h.run_columns(pending, files, lambda *a: None, jobs)
        return runners, max(peak)

    def test_jobs_bounds_the_columns_running_at_once(self):
        runners, peak = self.columns(2)
        self.assertEqual(peak, 2)
        self.assertTrue(all(r.results == {"x/one": (True, "", 0.0)} for r in runners))
        self.assertEqual(self.columns(1)[1], 1)

    def test_a_column_that_raises_fails_only_its_own_cells(self):
        runners, _ = self.columns(2, fail=("b",))
        by_name = {r.name: r.results for r in runners}
        self.assertEqual(by_name["a"], {"x/one": (True, "", 0.0)})
        self.assertFalse(by_name["b"]["x/one"][0])
        self.assertIn("boom", by_name["b"]["x/one"][1])


if __name__ == "__main__":
    unittest.main()
