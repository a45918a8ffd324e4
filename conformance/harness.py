#!/usr/bin/env python3
"""Conformance harness: runs every case of conformance/cases through every language
driver against one reference server and prints a case x language matrix.

Python 3.9+, standard library only. It builds nothing: the server binary and the
drivers must exist already (the Makefile builds them). See PROTOCOL.md for the driver
protocol and the case format.

    python3 conformance/harness.py --server target/debug/opensandbox-server [--lang rust]

The very last line printed is `N passed, N failed`; the exit status is 1 if any case
failed (2 on a setup problem such as a missing server binary).
"""

import argparse
import base64
import datetime as dt
import hashlib
import json
import os
import queue
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
import traceback
import urllib.error
import urllib.request
import uuid

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(HERE)
PROTOCOL_VERSION = 1
DEFAULT_STEP_TIMEOUT = 60.0
HANDSHAKE_TIMEOUT = 30.0
API_KEY = "conformance-key"


class SetupError(Exception):
    """A problem that prevents the whole run (no server, no cases)."""


class StepFailure(Exception):
    """A case failed; the message is the reason line shown in the matrix."""


class DriverDied(Exception):
    """The driver process exited, hung, or broke the protocol."""


# ---------------------------------------------------------------------------------
# Reference server


class Server:
    """The reference server on a free port with a temporary data directory."""

    def __init__(self, binary, isolation, workdir):
        self.binary = binary
        self.isolation = isolation
        self.workdir = workdir
        self.data_dir = os.path.join(workdir, "server-data")
        self.log_path = os.path.join(workdir, "server.log")
        self.proc = None
        self.domain = None
        self.api_key = API_KEY
        self.registry = None

    def isolation_args(self):
        """Server flags for the harness's --isolation: `none`; `bwrap` (or `auto`, its
        old name: bubblewrap over the host's directories); any other value names a
        standard OCI runtime (`runc`, `crun`, `runsc`, a path), which runs the cases'
        images pulled from a loopback registry (see LocalRegistry)."""
        if self.isolation == "none":
            return ["--isolation", "none"]
        if self.isolation in ("auto", "bwrap"):
            return ["--isolation", "auto", "--runtime", "bwrap"]
        # The sandboxes' root is an unprivileged host id that must walk to its rootfs
        # under the data dir: mkdtemp's 0700 would stop it (0711: no listing).
        os.chmod(self.workdir, 0o711)
        self.registry = LocalRegistry(self.binary, os.path.join(self.workdir, "registry"))
        self.registry.start()
        # Sandboxes restored from a snapshot name no image: they get the cases' one.
        return ["--isolation", "auto", "--runtime", self.isolation,
                "--registry-mirror", self.registry.addr, "--default-image", "python:3.11"]

    def start(self, timeout=60.0):
        os.makedirs(self.data_dir, exist_ok=True)
        log = open(self.log_path, "ab")
        env = dict(os.environ)
        # Flags win over the environment, but stray server variables must not leak in.
        for name in list(env):
            if name.startswith("OPENSANDBOX_") and name != "OPENSANDBOX_LOG_LEVEL":
                del env[name]
        cmd = [
            self.binary,
            "--listen", "127.0.0.1:0",
            "--api-key", self.api_key,
            "--data-dir", self.data_dir,
            # The cases' default expectations are the June execd's line framing; the
            # 1.1 kept framing (the server's default) is exercised per sandbox through
            # the extension opensandbox.io/output-framing (cases/commands.json sb_kept).
            "--output-framing", "lines",
        ] + self.isolation_args()
        try:
            self.proc = subprocess.Popen(
                cmd, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=log, env=env,
                start_new_session=True,
            )
        except OSError as e:
            raise SetupError("cannot start the server %s: %s" % (self.binary, e))
        finally:
            log.close()
        lines = queue.Queue()

        def pump():
            for raw in iter(self.proc.stdout.readline, b""):
                lines.put(raw.decode("utf-8", "replace").strip())
            lines.put(None)

        threading.Thread(target=pump, daemon=True).start()
        deadline = time.monotonic() + timeout
        prefix = "opensandbox-server listening on "
        while True:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                self.stop()
                raise SetupError("server did not start within %ss; log: %s" % (timeout, self.log_path))
            try:
                line = lines.get(timeout=remaining)
            except queue.Empty:
                continue
            if line is None:
                raise SetupError("server exited at start-up (status %s); log:\n%s"
                                 % (self.proc.wait(), tail(self.log_path)))
            if line.startswith(prefix):
                self.domain = line[len(prefix):].strip()
                break
        status, _, _ = self.http("GET", "/health", auth=False)
        if status != 200:
            raise SetupError("server health check answered %s" % status)

    def http(self, method, path, auth=True, timeout=30.0):
        """A raw call to the lifecycle API: (status, headers, body bytes)."""
        req = urllib.request.Request("http://%s%s" % (self.domain, path), method=method)
        if auth:
            req.add_header("OPEN-SANDBOX-API-KEY", self.api_key)
        try:
            with urllib.request.urlopen(req, timeout=timeout) as resp:
                return resp.status, dict(resp.headers), resp.read()
        except urllib.error.HTTPError as e:
            return e.code, dict(e.headers), e.read()
        except (urllib.error.URLError, OSError) as e:
            return 0, {}, str(e).encode()

    def delete_sandbox(self, sandbox_id):
        self.http("DELETE", "/v1/sandboxes/%s" % urllib.request.quote(sandbox_id, safe=""))

    def delete_all_sandboxes(self):
        """Sandboxes outlive the server process, so every one is deleted before it stops."""
        for _ in range(50):
            status, _, body = self.http("GET", "/v1/sandboxes?pageSize=200")
            if status != 200:
                return
            try:
                items = json.loads(body.decode("utf-8")).get("items") or []
            except ValueError:
                return
            if not items:
                return
            for item in items:
                self.delete_sandbox(item.get("id", ""))

    def stop(self):
        if self.registry is not None:
            self.registry.stop()
        if self.proc is None or self.proc.poll() is not None:
            return
        self.proc.send_signal(signal.SIGTERM)
        try:
            self.proc.wait(timeout=15)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()


class LocalRegistry:
    """Debian's docker-registry on a free loopback port, fed with the local image
    (scripts/build-image.sh) by the server's own `images push`, under every image name
    the cases use: the server pulls them from here through --registry-mirror, as it
    would from Docker Hub."""

    SCRIPT = os.path.join(os.path.dirname(HERE), "scripts", "local-registry.sh")

    def __init__(self, server_binary, workdir):
        self.binary = server_binary
        self.workdir = workdir
        self.addr = None

    def start(self):
        started = time.monotonic()
        try:
            out = subprocess.run([self.SCRIPT, "start", self.workdir, self.binary],
                                 stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                                 stderr=subprocess.PIPE, timeout=300)
        except (OSError, subprocess.TimeoutExpired) as e:
            raise SetupError("cannot start the loopback registry: %s" % e)
        if out.returncode != 0:
            raise SetupError("cannot start the loopback registry (%s): %s"
                             % (self.SCRIPT, out.stderr.decode("utf-8", "replace").strip()))
        self.addr = out.stdout.decode().strip().splitlines()[-1]
        print("conformance: loopback registry %s ready in %.1fs (local image pushed as %s)"
              % (self.addr, time.monotonic() - started,
                 os.environ.get("REGISTRY_IMAGES", "python:3.11, opensandbox/code-interpreter:latest, ...")),
              file=sys.stderr, flush=True)

    def stop(self):
        subprocess.run([self.SCRIPT, "stop", self.workdir], stdin=subprocess.DEVNULL,
                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)


class RedisServer:
    """Debian's redis-server on a free loopback port, started the first time a case
    `needs` it (`"needs": ["redis"]`: the pools' Redis store) and shared by the run; its
    address is `${redis.url}` (`redis://127.0.0.1:PORT/0`). No persistence."""

    def __init__(self, workdir):
        self.workdir = os.path.join(workdir, "redis")
        self.binary = os.environ.get("CONFORMANCE_REDIS_SERVER") or shutil.which("redis-server")
        self.proc = None
        self.url = None
        self.error = None
        # Columns run in threads (run_columns): the first two to need Redis must not
        # start two servers.
        self.lock = threading.Lock()

    def missing(self):
        """Why no redis-server can run here, or None."""
        if self.error:
            return self.error
        if not self.binary or not os.path.exists(self.binary):
            return "needs redis-server (Debian package redis-server; scripts/setup.sh --all installs it)"
        return None

    def ensure(self, timeout=15.0):
        """Starts the server once; returns its URL (raises SetupError when it cannot)."""
        with self.lock:
            return self._ensure(timeout)

    def _ensure(self, timeout):
        if self.url is not None:
            return self.url
        why = self.missing()
        if why:
            raise SetupError(why)
        os.makedirs(self.workdir, exist_ok=True)
        port = free_port()
        log = open(os.path.join(self.workdir, "redis.log"), "ab")
        try:
            self.proc = subprocess.Popen(
                [self.binary, "--port", str(port), "--bind", "127.0.0.1", "--save", "",
                 "--appendonly", "no", "--dir", self.workdir],
                stdin=subprocess.DEVNULL, stdout=log, stderr=log, start_new_session=True)
        except OSError as e:
            self.error = "cannot start redis-server: %s" % e
            raise SetupError(self.error)
        finally:
            log.close()
        deadline = time.monotonic() + timeout
        while True:
            try:
                if redis_command("127.0.0.1", port, ["PING"]) == "PONG":
                    break
            except OSError:
                pass
            if self.proc.poll() is not None or time.monotonic() > deadline:
                self.stop()
                self.error = "redis-server did not start on port %d" % port
                raise SetupError(self.error)
            time.sleep(0.05)
        self.url = "redis://127.0.0.1:%d/0" % port
        self.port = port
        return self.url

    def command(self, *args):
        """One command on the running server (RESP), e.g. ("SET", key, value)."""
        return redis_command("127.0.0.1", self.port, [str(a) for a in args])

    def stop(self):
        if self.proc is not None and self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self.proc = None


def free_port():
    import socket
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def redis_command(host, port, args, timeout=5.0):
    """A minimal RESP client (standard library only): sends one command, returns the
    reply (str, int, None or a list of them); an error reply raises OSError."""
    import socket
    payload = "*%d\r\n" % len(args) + "".join(
        "$%d\r\n%s\r\n" % (len(a.encode("utf-8")), a) for a in args)
    with socket.create_connection((host, port), timeout=timeout) as sock:
        sock.sendall(payload.encode("utf-8"))
        reader = sock.makefile("rb")

        def read():
            line = reader.readline()
            if not line:
                raise OSError("redis closed the connection")
            kind, rest = line[:1], line[1:].rstrip(b"\r\n").decode("utf-8", "replace")
            if kind == b"+":
                return rest
            if kind == b"-":
                raise OSError("redis error: %s" % rest)
            if kind == b":":
                return int(rest)
            if kind == b"$":
                n = int(rest)
                if n < 0:
                    return None
                data = reader.read(n + 2)[:n]
                return data.decode("utf-8", "replace")
            if kind == b"*":
                n = int(rest)
                return None if n < 0 else [read() for _ in range(n)]
            raise OSError("unexpected redis reply %r" % line[:40])
        return read()


def tail(path, lines=30):
    try:
        with open(path, "rb") as f:
            data = f.read()[-20000:]
    except OSError:
        return ""
    return "\n".join(data.decode("utf-8", "replace").splitlines()[-lines:])


# ---------------------------------------------------------------------------------
# Drivers


def expand(text, extra):
    """`${NAME}` / `${NAME:-default}` from `extra`, then the environment; nests."""
    pattern = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)(?::-((?:[^{}]|\{[^{}]*\})*))?\}")
    for _ in range(10):
        def repl(m):
            name, default = m.group(1), m.group(2)
            value = extra.get(name, os.environ.get(name))
            if value in (None, ""):
                return default if default is not None else ""
            return value
        new = pattern.sub(repl, text)
        if new == text:
            return new
        text = new
    return text


class DriverSpec:
    def __init__(self, path):
        self.dir = os.path.dirname(os.path.abspath(path))
        with open(path, "r", encoding="utf-8") as f:
            manifest = json.load(f)
        self.language = manifest["language"]
        names = {"REPO": REPO, "DRIVER_DIR": self.dir}
        self.command = [expand(part, names) for part in manifest["command"]]
        self.cwd = os.path.join(self.dir, expand(manifest.get("cwd", "."), names))
        self.env = {k: expand(v, names) for k, v in (manifest.get("env") or {}).items()}
        self.description = manifest.get("description", "")

    def missing(self):
        """Why the driver cannot start (its executable is absent), or None."""
        exe = self.command[0] if self.command else ""
        if os.sep in exe:
            exe_path = exe if os.path.isabs(exe) else os.path.join(self.cwd, exe)
            if not os.path.exists(exe_path):
                return "driver executable not found: %s (build it first)" % exe_path
        elif shutil.which(exe) is None:
            return "driver command not on PATH: %s" % exe
        return None


def discover_drivers(langs):
    root = os.path.join(HERE, "drivers")
    specs = []
    if os.path.isdir(root):
        for name in sorted(os.listdir(root)):
            manifest = os.path.join(root, name, "driver.json")
            if os.path.isfile(manifest):
                specs.append(DriverSpec(manifest))
    if langs:
        wanted = set(langs)
        specs = [s for s in specs if s.language in wanted]
        unknown = wanted - {s.language for s in specs}
        if unknown:
            raise SetupError("no driver for language(s): %s" % ", ".join(sorted(unknown)))
    if not specs:
        raise SetupError("no drivers found under %s" % root)
    return specs


class Driver:
    """One running driver process speaking JSON lines on stdin/stdout."""

    def __init__(self, spec, server, logdir):
        self.spec = spec
        self.server = server
        self.log_path = os.path.join(logdir, "driver-%s.log" % spec.language)
        self.proc = None
        self.lines = None
        self.next_id = 0
        self.hello = None
        self.ops = None

    def start(self):
        env = dict(os.environ)
        env.update(self.spec.env)
        env["OPEN_SANDBOX_DOMAIN"] = self.server.domain
        env["OPEN_SANDBOX_API_KEY"] = self.server.api_key
        env.pop("OPEN_SANDBOX_PROTOCOL", None)
        log = open(self.log_path, "ab")
        try:
            self.proc = subprocess.Popen(
                self.spec.command, cwd=self.spec.cwd, env=env, stdin=subprocess.PIPE,
                stdout=subprocess.PIPE, stderr=log, start_new_session=True,
            )
        except OSError as e:
            raise DriverDied("cannot start driver %s: %s" % (self.spec.command, e))
        finally:
            log.close()
        self.lines = queue.Queue()
        proc, lines = self.proc, self.lines

        def pump():
            for raw in iter(proc.stdout.readline, b""):
                lines.put(raw)
            lines.put(None)

        threading.Thread(target=pump, daemon=True).start()
        hello = self._read_message(HANDSHAKE_TIMEOUT, "handshake")
        if hello.get("hello") != "opensandbox-conformance":
            raise DriverDied("bad handshake line: %s" % json.dumps(hello)[:200])
        if hello.get("protocol") != PROTOCOL_VERSION:
            raise DriverDied("driver speaks protocol %r, harness %d"
                             % (hello.get("protocol"), PROTOCOL_VERSION))
        self.hello = hello
        ops = hello.get("ops")
        self.ops = set(ops) if isinstance(ops, list) else None

    def alive(self):
        return self.proc is not None and self.proc.poll() is None

    def stop(self):
        if self.proc is None:
            return
        try:
            if self.proc.poll() is None:
                try:
                    self.proc.stdin.close()
                except OSError:
                    pass
                try:
                    self.proc.wait(timeout=5)
                except subprocess.TimeoutExpired:
                    os.killpg(self.proc.pid, signal.SIGKILL)
                    self.proc.wait()
        except OSError:
            pass
        self.proc = None

    def kill(self):
        if self.proc is not None and self.proc.poll() is None:
            try:
                os.killpg(self.proc.pid, signal.SIGKILL)
            except OSError:
                pass
            self.proc.wait()
        self.proc = None

    def _read_message(self, timeout, what):
        deadline = time.monotonic() + timeout
        while True:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise DriverDied("no %s from the driver within %.0fs" % (what, timeout))
            try:
                raw = self.lines.get(timeout=remaining)
            except queue.Empty:
                continue
            if raw is None:
                code = self.proc.wait() if self.proc else None
                raise DriverDied("driver exited (status %s) while waiting for %s; stderr tail:\n%s"
                                 % (code, what, tail(self.log_path, 8)))
            text = raw.decode("utf-8", "replace").strip()
            if not text:
                continue
            try:
                msg = json.loads(text)
            except ValueError:
                # Protocol lines are JSON objects; anything else is stray output.
                log_line(self.log_path, "[harness] ignored non-JSON stdout line: %s" % text[:300])
                continue
            if isinstance(msg, dict):
                return msg

    def call(self, op, args, timeout):
        """Sends one request and waits for its response (a dict with ok/result/error)."""
        if self.ops is not None and op not in self.ops:
            return {"ok": False, "error": {"kind": "unsupported_op",
                                           "message": "driver does not implement %s" % op}}
        self.next_id += 1
        rid = self.next_id
        line = json.dumps({"id": rid, "op": op, "args": args}, ensure_ascii=False) + "\n"
        try:
            self.proc.stdin.write(line.encode("utf-8"))
            self.proc.stdin.flush()
        except (OSError, ValueError) as e:
            raise DriverDied("cannot write to the driver: %s" % e)
        while True:
            msg = self._read_message(timeout, "response to %s" % op)
            if msg.get("id") == rid:
                return msg
            log_line(self.log_path, "[harness] ignored response with id %r" % msg.get("id"))


def log_line(path, text):
    try:
        with open(path, "a", encoding="utf-8") as f:
            f.write(text + "\n")
    except OSError:
        pass


# ---------------------------------------------------------------------------------
# Variables


# `$${` escapes a literal `${` (shell parameter expansions in commands).
VAR = re.compile(r"(?<!\$)\$\{([^}]+)\}")


def lookup(scope, dotted):
    cur = scope
    for part in dotted.strip().split("."):
        if isinstance(cur, dict) and part in cur:
            cur = cur[part]
        elif isinstance(cur, list) and re.fullmatch(r"-?\d+", part) and -len(cur) <= int(part) < len(cur):
            cur = cur[int(part)]
        else:
            raise StepFailure("undefined variable ${%s}" % dotted)
    return cur


def substitute(value, scope):
    """Replaces `${a.b}` in every string; a string that is exactly one reference takes
    the referenced value with its JSON type."""
    if isinstance(value, str):
        m = VAR.fullmatch(value)
        if m:
            return lookup(scope, m.group(1))

        def repl(m):
            v = lookup(scope, m.group(1))
            return v if isinstance(v, str) else json.dumps(v, ensure_ascii=False)
        return VAR.sub(repl, value).replace("$${", "${")
    if isinstance(value, list):
        return [substitute(v, scope) for v in value]
    if isinstance(value, dict):
        return {substitute(k, scope) if isinstance(k, str) else k: substitute(v, scope)
                for k, v in value.items()}
    return value


# ---------------------------------------------------------------------------------
# Matching


TS = re.compile(r"(\d{4})-(\d\d)-(\d\d)[Tt ](\d\d):(\d\d):(\d\d)(?:\.(\d+))?([Zz]|[+-]\d\d:?\d\d)?$")


def parse_ts(text):
    if not isinstance(text, str):
        raise ValueError("not a timestamp: %r" % (text,))
    m = TS.match(text.strip())
    if not m:
        raise ValueError("not an RFC 3339 timestamp: %r" % (text,))
    y, mo, d, h, mi, s, frac, tz = m.groups()
    micro = int((frac or "0")[:6].ljust(6, "0"))
    offset = dt.timedelta(0)
    if tz and tz not in ("Z", "z"):
        sign = 1 if tz[0] == "+" else -1
        digits = tz[1:].replace(":", "")
        offset = sign * dt.timedelta(hours=int(digits[:2]), minutes=int(digits[2:]))
    return dt.datetime(int(y), int(mo), int(d), int(h), int(mi), int(s), micro,
                       tzinfo=dt.timezone(offset))


_DIGESTS = {}


def repeat_digest(text, times):
    """sha256 and length of `text` repeated `times` times, computed in chunks."""
    key = (text, times)
    if key not in _DIGESTS:
        unit = text.encode("utf-8")
        h = hashlib.sha256()
        batch = max(1, (1 << 20) // max(1, len(unit)))
        left = times
        while left > 0:
            n = min(batch, left)
            h.update(unit * n)
            left -= n
        _DIGESTS[key] = (h.hexdigest(), len(unit) * times)
    return _DIGESTS[key]


def type_name(v):
    if v is None:
        return "null"
    if isinstance(v, bool):
        return "bool"
    if isinstance(v, int):
        return "int"
    if isinstance(v, float):
        return "number"
    if isinstance(v, str):
        return "string"
    if isinstance(v, list):
        return "list"
    if isinstance(v, dict):
        return "object"
    return type(v).__name__


def show(v, limit=160):
    text = json.dumps(v, ensure_ascii=False)
    return text if len(text) <= limit else text[:limit] + "...(%d chars)" % len(text)


MISSING = object()


def is_operator(p):
    return isinstance(p, dict) and p and all(isinstance(k, str) and k.startswith("$") for k in p)


def match(pattern, value, path="result"):
    """None when `value` matches `pattern`, else a one-line reason."""
    if is_operator(pattern):
        for op, arg in pattern.items():
            why = match_op(op, arg, value, path)
            if why:
                return why
        return None
    if value is MISSING:
        value = None
    if isinstance(pattern, dict):
        if not isinstance(value, dict):
            return "%s: expected an object, got %s" % (path, show(value))
        for key, sub in pattern.items():
            why = match(sub, value.get(key, MISSING), "%s.%s" % (path, key))
            if why:
                return why
        return None
    if isinstance(pattern, list):
        if not isinstance(value, list):
            return "%s: expected a list, got %s" % (path, show(value))
        if len(pattern) != len(value):
            return "%s: expected %d items, got %d: %s" % (path, len(pattern), len(value), show(value))
        for i, (sub, item) in enumerate(zip(pattern, value)):
            why = match(sub, item, "%s[%d]" % (path, i))
            if why:
                return why
        return None
    if pattern is None:
        return None if value is None else "%s: expected null, got %s" % (path, show(value))
    if isinstance(pattern, bool) or isinstance(value, bool):
        ok = isinstance(value, bool) and isinstance(pattern, bool) and value == pattern
    elif isinstance(pattern, (int, float)):
        ok = isinstance(value, (int, float)) and value == pattern
    else:
        ok = pattern == value
    return None if ok else "%s: expected %s, got %s" % (path, show(pattern), show(value))


def first_matching(patterns, items):
    for i, item in enumerate(items):
        if match(patterns, item) is None:
            return i
    return -1


def match_op(op, arg, value, path):
    present = value is not MISSING
    v = value if present else None
    if op == "$absent":
        return None if (not present or v is None) == bool(arg) else (
            "%s: expected %s, got %s" % (path, "absent" if arg else "present", show(v)))
    if op == "$any":
        return None
    if op == "$eq":
        return None if v == arg and type_name(v) == type_name(arg) else (
            "%s: expected exactly %s, got %s" % (path, show(arg), show(v)))
    if op == "$ne":
        return None if v != arg else "%s: expected anything but %s" % (path, show(arg))
    if op == "$in":
        return None if any(match(a, v, path) is None for a in arg) else (
            "%s: expected one of %s, got %s" % (path, show(arg), show(v)))
    if op == "$any_of":
        reasons = [match(a, value, path) for a in arg]
        return None if any(r is None for r in reasons) else "; or ".join(reasons)
    if op == "$all_of":
        for a in arg:
            why = match(a, value, path)
            if why:
                return why
        return None
    if op == "$not":
        return None if match(arg, value, path) else "%s: expected not to match %s" % (path, show(arg))
    if op == "$type":
        names = arg if isinstance(arg, list) else [arg]
        t = type_name(v)
        ok = t in names or (t == "int" and "number" in names)
        return None if ok else "%s: expected type %s, got %s (%s)" % (path, "|".join(names), t, show(v))
    if op in ("$gt", "$gte", "$lt", "$lte"):
        if not isinstance(v, (int, float)) or isinstance(v, bool):
            return "%s: expected a number, got %s" % (path, show(v))
        ok = {"$gt": v > arg, "$gte": v >= arg, "$lt": v < arg, "$lte": v <= arg}[op]
        return None if ok else "%s: expected %s %s, got %s" % (path, op[1:], arg, show(v))
    if op in ("$after", "$before", "$not_before"):
        try:
            a, b = parse_ts(v), parse_ts(arg)
        except ValueError as e:
            return "%s: %s" % (path, e)
        ok = {"$after": a > b, "$before": a < b, "$not_before": a >= b}[op]
        return None if ok else "%s: expected %s %s, got %s" % (path, op[1:], arg, v)
    if op == "$within_s":
        # {"$within_s": [reference, seconds]}: a timestamp close to another one.
        try:
            a, b = parse_ts(v), parse_ts(arg[0])
        except ValueError as e:
            return "%s: %s" % (path, e)
        ok = abs((a - b).total_seconds()) <= float(arg[1])
        return None if ok else "%s: %s not within %ss of %s" % (path, v, arg[1], arg[0])
    if op == "$offset_s":
        # {"$offset_s": [reference, seconds, tolerance]}: value = reference + seconds.
        try:
            a, b = parse_ts(v), parse_ts(arg[0])
        except ValueError as e:
            return "%s: %s" % (path, e)
        delta = (a - b).total_seconds()
        ok = abs(delta - float(arg[1])) <= float(arg[2])
        return None if ok else "%s: %s is %.1fs after %s, expected %s +- %s" % (
            path, v, delta, arg[0], arg[1], arg[2])
    if op == "$timestamp":
        try:
            parse_ts(v)
            return None
        except ValueError as e:
            return "%s: %s" % (path, e)
    if op == "$regex":
        return None if isinstance(v, str) and re.search(arg, v) else (
            "%s: expected to match /%s/, got %s" % (path, arg, show(v)))
    if op == "$startswith":
        return None if isinstance(v, str) and v.startswith(arg) else (
            "%s: expected to start with %s, got %s" % (path, show(arg), show(v)))
    if op == "$endswith":
        return None if isinstance(v, str) and v.endswith(arg) else (
            "%s: expected to end with %s, got %s" % (path, show(arg), show(v)))
    if op == "$includes":
        return None if isinstance(v, str) and arg in v else (
            "%s: expected to include %s, got %s" % (path, show(arg), show(v)))
    if op == "$excludes":
        return None if isinstance(v, str) and arg not in v else (
            "%s: expected not to include %s, got %s" % (path, show(arg), show(v)))
    if op == "$nonempty":
        empty = v is None or (hasattr(v, "__len__") and len(v) == 0)
        return None if empty != bool(arg) else "%s: expected %s, got %s" % (
            path, "non-empty" if arg else "empty", show(v))
    if op == "$len":
        if not isinstance(v, (str, list, dict)):
            return "%s: expected something with a length, got %s" % (path, show(v))
        return match(arg, len(v), "len(%s)" % path)
    if op == "$keys":
        if not isinstance(v, dict):
            return "%s: expected an object, got %s" % (path, show(v))
        return match(arg, sorted(v.keys()), "keys(%s)" % path)
    if op in ("$contains", "$not_contains"):
        if isinstance(v, str) and isinstance(arg, str):
            found = arg in v
        elif isinstance(v, list):
            found = first_matching(arg, v) >= 0
        else:
            return "%s: expected a list, got %s" % (path, show(v))
        if found == (op == "$contains"):
            return None
        return "%s: expected %s an item matching %s: %s" % (
            path, "to contain" if op == "$contains" else "not to contain", show(arg), show(v))
    if op == "$each":
        if not isinstance(v, list):
            return "%s: expected a list, got %s" % (path, show(v))
        for i, item in enumerate(v):
            why = match(arg, item, "%s[%d]" % (path, i))
            if why:
                return why
        return None
    if op in ("$first", "$last"):
        if not isinstance(v, list) or not v:
            return "%s: expected a non-empty list, got %s" % (path, show(v))
        i = 0 if op == "$first" else len(v) - 1
        return match(arg, v[i], "%s[%d]" % (path, i if op == "$first" else -1))
    if op == "$at":
        # {"$at": [index, pattern]}
        if not isinstance(v, list):
            return "%s: expected a list, got %s" % (path, show(v))
        i = int(arg[0])
        if not -len(v) <= i < len(v):
            return "%s: no item %d in %s" % (path, i, show(v))
        return match(arg[1], v[i], "%s[%d]" % (path, i))
    if op == "$ordered":
        # The patterns match distinct items, in this order (other items may sit between).
        if not isinstance(v, list):
            return "%s: expected a list, got %s" % (path, show(v))
        pos = 0
        for k, pat in enumerate(arg):
            i = first_matching(pat, v[pos:])
            if i < 0:
                return "%s: item #%d %s not found in order after index %d: %s" % (
                    path, k, show(pat), pos, show(v, 400))
            pos += i + 1
        return None
    if op == "$count":
        # {"$count": [pattern, count-pattern]}
        if not isinstance(v, list):
            return "%s: expected a list, got %s" % (path, show(v))
        n = sum(1 for item in v if match(arg[0], item) is None)
        return match(arg[1], n, "count(%s in %s)" % (show(arg[0], 60), path))
    if op == "$where":
        # {"$where": [item-pattern, list-pattern]}: filter, then match the rest.
        if not isinstance(v, list):
            return "%s: expected a list, got %s" % (path, show(v))
        sub = [item for item in v if match(arg[0], item) is None]
        return match(arg[1], sub, "%s where %s" % (path, show(arg[0], 60)))
    if op == "$sha256_of_repeat":
        digest, _ = repeat_digest(arg["text"], int(arg["times"]))
        return None if v == digest else "%s: expected sha256 %s of %r x %s, got %s" % (
            path, digest, arg["text"][:20], arg["times"], show(v))
    if op == "$size_of_repeat":
        _, size = repeat_digest(arg["text"], int(arg["times"]))
        return None if v == size else "%s: expected %d bytes, got %s" % (path, size, show(v))
    if op == "$base64":
        # The value is base64; its decoded bytes must equal the UTF-8 of `arg`.
        try:
            raw = base64.b64decode(v or "", validate=True)
        except (ValueError, TypeError):
            return "%s: not base64: %s" % (path, show(v))
        want = arg.encode("utf-8")
        return None if raw == want else "%s: decoded %r, expected %r" % (path, raw[:80], want[:80])
    return "%s: unknown matcher %s" % (path, op)


# ---------------------------------------------------------------------------------
# Cases


# Output framings (protocol.md §4.2): the June execd cuts foreground /command output
# into one event per line without its terminator ("lines", what the cases expect); the
# 1.1 execd keeps each terminator ("kept"). Every case whose result depends on the
# framing runs under both: once as written, on sandboxes made with the server's
# framing (`--output-framing lines`), and once as `NAME@kept`, on sandboxes made with
# the create extension below, its command outputs mapped back to the lines form
# before they are matched. So each SDK is proven on old and new servers alike.

FRAMING_EXTENSION = "opensandbox.io/output-framing"
# Ops whose results carry foreground /command output (session runs stay line-framed
# under both framings; background logs are raw bytes).
FRAMED_OPS = ("commands.run", "commands.start")
LINE_END = re.compile(r"\r\n|\n|\r")


def case_framings(case, file_default):
    """The framings `case` runs under: its own `framings`, its file's, or both when it
    checks the output of a foreground command (`commands.run`/`commands.start` steps
    that expect stdout, stderr or handler events)."""
    if "framings" in case:
        return list(case["framings"])
    if file_default is not None:
        return list(file_default)
    for step in case.get("steps", []):
        if step.get("op") in FRAMED_OPS and re.search(
                r'"(stdout|stderr|events|stdout_digest)"', json.dumps(step.get("expect") or {})):
            return ["lines", "kept"]
    return ["lines"]


class LineSplitter:
    """Turns kept-framing texts of one stream into lines-framing texts: each line
    without its terminator (CR, LF or CRLF), an empty line as "\n", a final fragment
    as it is. A CRLF cut between two texts is one terminator."""

    def __init__(self):
        self.pending = ""

    def feed(self, text):
        data = self.pending + text
        self.pending = ""
        out, pos = [], 0
        for m in LINE_END.finditer(data):
            if m.group() == "\r" and m.end() == len(data):
                break  # maybe the first half of a CRLF: wait for the next text
            line = data[pos:m.start()]
            out.append(line if line else "\n")
            pos = m.end()
        self.pending = data[pos:]
        return out

    def flush(self):
        if not self.pending:
            return []
        rest, self.pending = self.pending, ""
        if rest == "\r":
            return ["\n"]
        return [rest[:-1] or "\n"] if rest.endswith("\r") else [rest]


def kept_to_lines(texts, stamps=None):
    """`texts` (and their timestamps) as a lines-framing server would have sent them."""
    splitter, out, out_stamps = LineSplitter(), [], []
    stamps = stamps if stamps is not None and len(stamps) == len(texts) else None
    for i, text in enumerate(texts):
        lines = splitter.feed(text)
        out.extend(lines)
        if stamps is not None:
            out_stamps.extend([stamps[i]] * len(lines))
    tail = splitter.flush()
    out.extend(tail)
    if stamps is not None and texts:
        out_stamps.extend([stamps[-1]] * len(tail))
    return out, (out_stamps if stamps is not None else None)


def kept_events_to_lines(events):
    """Handler events of a kept-framing run with their stdout/stderr texts re-cut into
    lines (other events unchanged, order kept)."""
    out, splitters = [], {}

    def flush(stream):
        sp = splitters.pop(stream, None)
        for line in sp.flush() if sp else []:
            out.append({"type": stream, "text": line})

    for ev in events:
        kind = ev.get("type") if isinstance(ev, dict) else None
        if kind in ("stdout", "stderr") and isinstance(ev.get("text"), str):
            sp = splitters.setdefault(kind, LineSplitter())
            for line in sp.feed(ev["text"]):
                out.append(dict(ev, text=line))
            continue
        for stream in ("stdout", "stderr"):
            flush(stream)
        out.append(ev)
    for stream in ("stdout", "stderr"):
        flush(stream)
    return out


def kept_result_to_lines(result):
    """An execution result of a kept-framing run, in the lines form the cases expect."""
    if not isinstance(result, dict):
        return result
    result = dict(result)
    for stream in ("stdout", "stderr"):
        texts = result.get(stream)
        if isinstance(texts, list) and all(isinstance(t, str) for t in texts):
            key = stream + "_timestamps"
            lines, stamps = kept_to_lines(texts, result.get(key))
            result[stream] = lines
            if stamps is not None:
                result[key] = stamps
    if isinstance(result.get("events"), list):
        result["events"] = kept_events_to_lines(result["events"])
    return result


class CaseFile:
    def __init__(self, path):
        self.path = path
        with open(path, "r", encoding="utf-8") as f:
            data = json.load(f)
        self.area = data.get("area") or os.path.splitext(os.path.basename(path))[0]
        self.fixtures = data.get("fixtures") or {}
        self.cases = data.get("cases") or []
        # File-level defaults of the per-case keys (skip_reason).
        for key in ("langs", "langs_reason", "needs"):
            if key in data:
                for case in self.cases:
                    case.setdefault(key, data[key])
        for case in self.cases:
            if "langs" in case and not isinstance(case["langs"], list):
                raise SetupError("%s: case %s: langs must be a list" % (path, case.get("name")))
            if "name" not in case or "steps" not in case:
                raise SetupError("%s: every case needs a name and steps" % path)
            for need in case.get("uses", []):
                if need not in self.fixtures:
                    raise SetupError("%s: case %s uses unknown fixture %s" % (path, case["name"], need))
        # Each case once per framing it depends on (see case_framings).
        expanded = []
        for case in self.cases:
            for framing in case_framings(case, data.get("framings")):
                if framing not in ("lines", "kept"):
                    raise SetupError("%s: case %s: unknown framing %r" % (path, case["name"], framing))
                if framing == "lines":
                    expanded.append(case)
                else:
                    expanded.append(dict(case, name="%s@%s" % (case["name"], framing),
                                         framing=framing))
        self.cases = expanded


def load_cases(case_dir, pattern):
    files = []
    for name in sorted(os.listdir(case_dir)):
        if name.endswith(".json"):
            cf = CaseFile(os.path.join(case_dir, name))
            if pattern:
                rx = re.compile(pattern)
                cf.cases = [c for c in cf.cases if rx.search("%s/%s" % (cf.area, c["name"]))]
            if cf.cases:
                files.append(cf)
    names = [("%s/%s" % (cf.area, c["name"])) for cf in files for c in cf.cases]
    dup = {n for n in names if names.count(n) > 1}
    if dup:
        raise SetupError("duplicate case names: %s" % ", ".join(sorted(dup)))
    return files


def skip_reason(case, lang, isolation, redis=None):
    """Why `case` does not run in `lang`'s column (a "skipped: ..." line), or None.

    - `"langs": [..]` (on the case, or its file's default): the languages the case is
      about, e.g. the client-side pools of python, go, java and node; any other column
      shows `-` with the case's `langs_reason` (the Rust core and the official C# SDK
      have no pool: not a fault of theirs).
    - `"needs"`: `runc` (an OCI runtime), `isolation` (any sandbox isolation), `redis`
      (a redis-server the harness can start)."""
    langs = case.get("langs")
    if langs is not None and lang not in langs:
        return "skipped: %s" % (case.get("langs_reason") or "not a case of this language's SDK")
    needs = case.get("needs", [])
    if "runc" in needs and isolation in ("none", "bwrap", "auto"):
        # Break-out checks of the OCI backend (cases/isolation.json): the
        # bubblewrap backend does not claim them.
        return "skipped: needs an OCI runtime (run with --isolation runc)"
    if "isolation" in needs and isolation == "none":
        # Without namespaces the reference server runs commands on host
        # paths while the files API stays rooted in the sandbox directory,
        # so cases that cross-check the two cannot hold: not an SDK fault.
        return "skipped: needs sandbox isolation (server runs with --isolation none)"
    if "redis" in needs:
        why = redis.missing() if redis is not None else "needs redis-server"
        if why:
            return "skipped: %s" % why
    return None


class Runner:
    """Runs the cases of every file through one driver."""

    def __init__(self, spec, server, workdir, args):
        self.spec = spec
        self.server = server
        self.workdir = workdir
        self.args = args
        self.driver = None
        self.run_id = uuid.uuid4().hex[:12]
        self.results = {}  # case key -> (ok, reason, seconds)
        self.hello = None
        self.unavailable = None
        self.redis = None  # the run's RedisServer (main sets it), for `"needs": ["redis"]`

    # -- driver management

    def ensure_driver(self):
        if self.driver is not None and self.driver.alive():
            return
        if self.driver is not None:
            self.driver.kill()
        self.driver = Driver(self.spec, self.server, self.workdir)
        try:
            self.driver.start()
        except DriverDied:
            self.driver.kill()
            self.driver = None
            raise
        self.hello = self.driver.hello

    def call(self, op, args, timeout):
        self.ensure_driver()
        try:
            return self.driver.call(op, args, timeout)
        except DriverDied:
            # A hung or dead driver fails this step; the next step gets a fresh one.
            self.driver.kill()
            self.driver = None
            raise

    # -- harness-side operations

    def harness_op(self, op, args):
        if op == "harness.sleep":
            time.sleep(float(args.get("seconds", 1)))
            return {"ok": True, "result": None}
        if op == "harness.http_get":
            req = urllib.request.Request(args["url"], method="GET")
            for k, v in (args.get("headers") or {}).items():
                req.add_header(k, v)
            try:
                with urllib.request.urlopen(req, timeout=float(args.get("timeout_s", 10))) as resp:
                    body = resp.read(1 << 20)
                    return {"ok": True, "result": {"status": resp.status,
                                                   "body": body.decode("utf-8", "replace")}}
            except urllib.error.HTTPError as e:
                return {"ok": True, "result": {"status": e.code,
                                               "body": e.read(1 << 20).decode("utf-8", "replace")}}
            except (urllib.error.URLError, OSError) as e:
                return {"ok": False, "error": {"kind": "connection", "message": str(e)}}
        if op == "harness.server_request":
            # Raw lifecycle call with the server's key, for facts the SDK API hides.
            status, headers, body = self.server.http(args.get("method", "GET"), args["path"])
            text = body.decode("utf-8", "replace")
            try:
                parsed = json.loads(text) if text else None
            except ValueError:
                parsed = None
            return {"ok": True, "result": {"status": status, "body": text, "json": parsed,
                                           "headers": {k.lower(): v for k, v in headers.items()}}}
        raise StepFailure("unknown harness operation %s" % op)

    # -- steps

    def run_step(self, index, step, scope):
        op = step["op"]
        args = substitute(step.get("args") or {}, scope)
        framing = scope.get("__framing", "lines")
        if framing != "lines" and op == "sandbox.create" and isinstance(args, dict):
            extensions = dict(args.get("extensions") or {})
            extensions.setdefault(FRAMING_EXTENSION, framing)
            args = dict(args, extensions=extensions)
        timeout = float(step.get("timeout_s", self.args.step_timeout))
        retry = step.get("retry")
        deadline = time.monotonic() + float(retry.get("timeout_s", 30)) if retry else None
        interval = float(retry.get("interval_s", 0.25)) if retry else 0
        while True:
            if op.startswith("harness."):
                response = self.harness_op(op, args)
            else:
                try:
                    response = self.call(op, args, timeout)
                except DriverDied as e:
                    raise StepFailure("step %d (%s): %s" % (index, op, e))
                response = self.reframe(op, args, response, scope)
            why = check(step, response, scope)
            if why is None:
                break
            if deadline is None or time.monotonic() >= deadline:
                label = step.get("label") or op
                raise StepFailure("step %d (%s): %s" % (index, label, why))
            time.sleep(interval)
        if response.get("ok") and op == "sandbox.create":
            sid = (response.get("result") or {}).get("id")
            if sid:
                scope["__created"].append(sid)
        if "save" in step:
            scope[step["save"]] = response.get("result") if response.get("ok") else response.get("error")

    @staticmethod
    def reframe(op, args, response, scope):
        """In a kept-framing run, a foreground command's result in the lines form."""
        if scope.get("__framing", "lines") != "kept" or not response.get("ok"):
            return response
        result = response.get("result")
        handles = scope.setdefault("__framed_handles", set())
        if op == "commands.start" and isinstance(result, dict) and "handle" in result:
            handles.add(json.dumps(result["handle"]))
            return response
        framed = op == "commands.run" or (
            op == "execution.wait" and isinstance(args, dict)
            and json.dumps(args.get("handle")) in handles)
        if not framed:
            return response
        return dict(response, result=kept_result_to_lines(result))

    def run_steps(self, steps, scope):
        for i, step in enumerate(steps, 1):
            self.run_step(i, step, scope)

    def run_cleanup(self, steps, scope):
        for step in steps:
            try:
                op = step["op"]
                args = substitute(step.get("args") or {}, scope)
                if op.startswith("harness."):
                    self.harness_op(op, args)
                else:
                    self.call(op, args, float(step.get("timeout_s", self.args.step_timeout)))
            except (StepFailure, DriverDied, KeyError):
                pass

    def run_file(self, cf, report):
        fixtures = {}
        fixture_errors = {}
        created_by_fixtures = []
        try:
            for case in cf.cases:
                key = "%s/%s" % (cf.area, case["name"])
                started = time.monotonic()
                framing = case.get("framing", "lines")
                scope = {"run_id": self.run_id, "lang": self.spec.language, "case": case["name"],
                         "server": {"domain": self.server.domain, "api_key": self.server.api_key},
                         "__created": [], "__framing": framing, "__framed_handles": set()}
                ok, reason = True, ""
                skip = skip_reason(case, self.spec.language, self.args.isolation, self.redis)
                if skip:
                    self.results[key] = (None, skip, 0.0)
                    report(self.spec.language, key, None, skip, 0.0)
                    continue
                try:
                    if "redis" in case.get("needs", []):
                        try:
                            scope["redis"] = {"url": self.redis.ensure()}
                        except SetupError as e:
                            raise StepFailure("redis-server: %s" % e)
                    for need in case.get("uses", []):
                        # A kept-framing case gets fixtures of its own (made with the
                        # framing's create extension).
                        fkey = need if framing == "lines" else "%s@%s" % (need, framing)
                        if fkey in fixture_errors:
                            raise StepFailure("fixture %s failed earlier: %s" % (fkey, fixture_errors[fkey]))
                        if fkey not in fixtures:
                            fscope = dict(scope, __created=created_by_fixtures)
                            fstep = dict(cf.fixtures[need], save=need)
                            fstep.setdefault("timeout_s", 120)
                            try:
                                self.run_step(0, fstep, fscope)
                            except StepFailure as e:
                                fixture_errors[fkey] = str(e)
                                raise StepFailure("fixture %s: %s" % (fkey, e))
                            fixtures[fkey] = fscope[need]
                        scope[need] = fixtures[fkey]
                    self.run_steps(case["steps"], scope)
                except StepFailure as e:
                    ok, reason = False, str(e)
                except Exception as e:  # a harness bug must not hide the other cases
                    ok, reason = False, "harness error: %s" % "".join(
                        traceback.format_exception_only(type(e), e)).strip()
                finally:
                    self.run_cleanup(case.get("cleanup", []), scope)
                    for sid in scope["__created"]:
                        self.server.delete_sandbox(sid)
                seconds = time.monotonic() - started
                self.results[key] = (ok, reason, seconds)
                report(self.spec.language, key, ok, reason, seconds)
        finally:
            for sid in created_by_fixtures:
                self.server.delete_sandbox(sid)

    def run(self, files, report):
        try:
            self.ensure_driver()
        except DriverDied as e:
            for cf in files:
                for case in cf.cases:
                    key = "%s/%s" % (cf.area, case["name"])
                    self.results[key] = (False, "driver did not start: %s" % e, 0.0)
                    report(self.spec.language, key, False, self.results[key][1], 0.0)
            return
        try:
            for cf in files:
                self.run_file(cf, report)
        finally:
            if self.driver is not None:
                self.driver.stop()


def check(step, response, scope):
    """None when the response meets the step's expectations, else the reason."""
    expect = step.get("expect")
    if expect == "any":
        return None
    expect = substitute(expect, scope) if expect is not None else {}
    if "any_of" in expect:
        # Alternatives where the protocol allows several outcomes (protocol.md §7).
        reasons = [check({"expect": alt}, response, scope) for alt in expect["any_of"]]
        return None if any(r is None for r in reasons) else " | or: ".join(reasons)
    ok = bool(response.get("ok"))
    want_error = "error" in expect
    if want_error:
        if ok:
            return "expected an error matching %s, got success: %s" % (
                show(expect["error"]), show(response.get("result")))
        return match(expect["error"], response.get("error") or {}, "error")
    if not ok:
        err = response.get("error") or {}
        return "unexpected error %s: %s" % (err.get("kind"), show(err, 400))
    if "result" in expect:
        return match(expect["result"], response.get("result", MISSING), "result")
    return None


# ---------------------------------------------------------------------------------
# Output


def use_colour():
    return sys.stdout.isatty() and os.environ.get("NO_COLOR") is None


def print_matrix(files, runners):
    langs = [r.spec.language for r in runners]
    keys = ["%s/%s" % (cf.area, c["name"]) for cf in files for c in cf.cases]
    width = max([len(k) for k in keys] + [4]) + 2
    col = max([len(l) for l in langs] + [4]) + 2
    print()
    print("case".ljust(width) + "".join(l.ljust(col) for l in langs))
    print("-" * (width + col * len(langs)))
    passed = failed = skipped = 0
    skip_reasons = {}
    for key in keys:
        cells = []
        reasons = []
        for r in runners:
            ok, reason, _ = r.results.get(key, (False, "not run", 0.0))
            if ok:
                passed += 1
                mark = "\u2713"
            elif ok is None:
                skipped += 1
                skip_reasons[reason] = skip_reasons.get(reason, 0) + 1
                mark = "-"
            else:
                failed += 1
                mark = "\u2717"
                reasons.append((r.spec.language, reason))
            cells.append(mark.ljust(col))
        print(key.ljust(width) + "".join(cells))
        for lang, reason in reasons:
            first = reason.splitlines()[0] if reason else ""
            print("    %s: %s" % (lang, first[:600]))
    print("-" * (width + col * len(langs)))
    for r in runners:
        if r.unavailable:
            print("%s: %s" % (r.spec.language, r.unavailable))
            continue
        total = sum(t for _, _, t in r.results.values())
        hello = r.hello or {}
        sdk = hello.get("sdk_version", "?")
        n_ok = sum(1 for ok, _, _ in r.results.values() if ok)
        n_skip = sum(1 for ok, _, _ in r.results.values() if ok is None)
        print("%s (sdk %s): %d/%d passed in %.1fs%s" % (
            r.spec.language, sdk, n_ok, len(r.results) - n_skip, total,
            ", %d skipped" % n_skip if n_skip else ""))
    if skipped:
        print("%d skipped (neither passed nor failed):" % skipped)
        for reason, n in sorted(skip_reasons.items(), key=lambda kv: -kv[1]):
            print("  %d %s" % (n, reason))
    return passed, failed


def run_columns(pending, files, report, jobs):
    """Runs the queued runners (one language column each), ``jobs`` columns at a time.

    Columns share nothing but the server and Redis: every name a case makes carries the
    runner's own ``run_id`` or ``lang``, and each case deletes the sandboxes it created,
    so two columns can run side by side. Most of a case's time is spent waiting for the
    server (sandbox starts, streamed output), so on two cores two columns take little
    more than one (``--jobs 1`` runs them one after another)."""
    def work():
        while True:
            try:
                runner = pending.get_nowait()
            except queue.Empty:
                return
            try:
                runner.run(files, report)
            except Exception as e:  # a harness bug fails this column, not the others
                reason = "harness error: %s" % "".join(traceback.format_exception_only(type(e), e)).strip()
                for cf in files:
                    for c in cf.cases:
                        runner.results.setdefault("%s/%s" % (cf.area, c["name"]), (False, reason, 0.0))

    workers = [threading.Thread(target=work, daemon=True) for _ in range(max(1, jobs))]
    for w in workers:
        w.start()
    for w in workers:
        # join() with a timeout keeps Ctrl-C deliverable to the main thread.
        while w.is_alive():
            w.join(0.5)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--server", default=os.environ.get("OPENSANDBOX_SERVER_BIN"),
                    help="path of the opensandbox-server binary (env OPENSANDBOX_SERVER_BIN)")
    ap.add_argument("--lang", action="append", default=[],
                    help="run only this driver's language (repeatable)")
    ap.add_argument("--case", default=None, help="regex on 'area/case-name'")
    ap.add_argument("--cases", default=os.path.join(HERE, "cases"), help="directory of case files")
    ap.add_argument("--step-timeout", type=float, default=DEFAULT_STEP_TIMEOUT,
                    help="default per-step timeout in seconds (default %(default)s)")
    ap.add_argument("--isolation", default=os.environ.get("CONFORMANCE_ISOLATION", "none"),
                    help="none, bwrap (alias auto), or an OCI runtime (runc, crun, runsc, PATH) "
                         "run over a loopback registry (env CONFORMANCE_ISOLATION, default none)")
    ap.add_argument("--jobs", type=int, default=int(os.environ.get("CONFORMANCE_JOBS", "2")),
                    help="language columns run at the same time (default 2, or CONFORMANCE_JOBS)")
    ap.add_argument("--keep", action="store_true", help="keep the work directory (logs)")
    ap.add_argument("--list", action="store_true", help="list the cases and exit")
    args = ap.parse_args(argv)

    try:
        files = load_cases(args.cases, args.case)
    except (SetupError, ValueError, OSError) as e:
        print("conformance: cannot load cases: %s" % e, file=sys.stderr)
        print("0 passed, 0 failed")
        return 2
    if args.list:
        for cf in files:
            for c in cf.cases:
                print("%s/%s" % (cf.area, c["name"]))
        return 0
    if not files:
        print("conformance: no cases selected", file=sys.stderr)
        print("0 passed, 0 failed")
        return 2

    workdir = tempfile.mkdtemp(prefix="osb-conformance-")
    server = None
    redis = RedisServer(workdir)
    runners = []
    try:
        specs = discover_drivers(args.lang)
        if not args.server:
            raise SetupError("no server binary: pass --server PATH or set OPENSANDBOX_SERVER_BIN")
        if not os.path.isfile(args.server):
            raise SetupError("server binary not found: %s" % args.server)
        server = Server(os.path.abspath(args.server), args.isolation, workdir)
        server.start()
        total_cases = sum(len(cf.cases) for cf in files)
        print("conformance: server %s (isolation %s), %d cases, drivers: %s; logs in %s"
              % (server.domain, args.isolation, total_cases,
                 ", ".join(s.language for s in specs), workdir), file=sys.stderr, flush=True)

        def report(lang, key, ok, reason, seconds):
            mark = "ok  " if ok else ("skip" if ok is None else "FAIL")
            line = "[%s] %s %s (%.1fs)" % (lang, mark, key, seconds)
            if ok is False:
                line += "\n        " + reason.replace("\n", "\n        ")
            print(line, file=sys.stderr, flush=True)

        pending = queue.Queue()
        for spec in specs:
            runner = Runner(spec, server, workdir, args)
            runner.redis = redis
            runners.append(runner)
            missing = spec.missing()
            if missing:
                # One explanation, not one per case.
                print("[%s] %s" % (spec.language, missing), file=sys.stderr, flush=True)
                runner.unavailable = missing
                for cf in files:
                    for c in cf.cases:
                        runner.results["%s/%s" % (cf.area, c["name"])] = (False, "driver not available", 0.0)
                continue
            pending.put(runner)
        run_columns(pending, files, report, args.jobs)
        server.delete_all_sandboxes()
    except SetupError as e:
        print("conformance: %s" % e, file=sys.stderr)
        if not runners:
            print("0 passed, 0 failed")
            return 2
    except KeyboardInterrupt:
        print("conformance: interrupted", file=sys.stderr)
    finally:
        if server is not None and server.domain:
            server.delete_all_sandboxes()
        if server is not None:
            server.stop()
        redis.stop()
        for r in runners:
            if r.driver is not None:
                r.driver.kill()
    passed, failed = print_matrix(files, runners)
    if failed or args.keep:
        print("logs kept in %s" % workdir)
    else:
        shutil.rmtree(workdir, ignore_errors=True)
    print("%d passed, %d failed" % (passed, failed))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
