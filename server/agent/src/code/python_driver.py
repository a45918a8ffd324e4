# Driver of a python code context of the OpenSandbox execd agent.
#
# Reads one JSON request per line on stdin ({"code": "..."}), runs it in one
# persistent namespace like a notebook cell, and writes JSON event lines on fd 3:
#   {"type": "stdout"|"stderr", "text": ...}     output as it is produced
#   {"type": "result", "count": n, "text": repr}  the cell's last expression, if not None
#   {"type": "error", "ename", "evalue", "traceback": [...]}
#   {"type": "done"}                              always last for a request
# stdin is moved off fd 0 so user code and its subprocesses never read requests.
import ast
import asyncio
import builtins
import inspect
import io
import json
import linecache
import os
import signal
import sys
import threading
import traceback

_events = os.fdopen(3, "w", encoding="utf-8", errors="replace")
_requests = os.fdopen(os.dup(0), "r", encoding="utf-8", errors="replace")
_devnull = os.open(os.devnull, os.O_RDONLY)
os.dup2(_devnull, 0)
os.close(_devnull)
sys.stdin = open(os.devnull, "r")
_lock = threading.Lock()


def _emit(obj):
    line = json.dumps(obj, ensure_ascii=False) + "\n"
    with _lock:
        _events.write(line)
        _events.flush()


class _EventStream(io.TextIOBase):
    """sys.stdout/sys.stderr: whole lines become events at once; a partial line
    waits for its newline, an explicit flush or the end of the cell."""

    def __init__(self, kind):
        super().__init__()
        self._kind = kind
        self._buf = []
        self._size = 0

    @property
    def encoding(self):
        return "utf-8"

    @property
    def errors(self):
        return "replace"

    def writable(self):
        return True

    def isatty(self):
        return False

    def write(self, s):
        if not isinstance(s, str):
            raise TypeError("write() argument must be str, not %s" % type(s).__name__)
        if not s:
            return 0
        self._buf.append(s)
        self._size += len(s)
        if "\n" in s or self._size >= 65536:
            text = "".join(self._buf)
            cut = text.rfind("\n") + 1 if self._size < 65536 else len(text)
            self._buf = [text[cut:]] if cut < len(text) else []
            self._size = len(text) - cut
            if cut:
                _emit({"type": self._kind, "text": text[:cut]})
        return len(s)

    def flush(self):
        if self._buf:
            text = "".join(self._buf)
            self._buf = []
            self._size = 0
            _emit({"type": self._kind, "text": text})


sys.stdout = _EventStream("stdout")
sys.stderr = _EventStream("stderr")

_namespace = {"__name__": "__main__", "__builtins__": builtins}
_loop = asyncio.new_event_loop()
_executing = False


def _on_sigint(signum, frame):
    # Only a running cell is interrupted; the driver's own bookkeeping never is.
    if _executing:
        raise KeyboardInterrupt


signal.signal(signal.SIGINT, _on_sigint)


def _run(code, count):
    global _executing
    filename = "<cell %d>" % count
    linecache.cache[filename] = (len(code), None, code.splitlines(True), filename)
    tree = ast.parse(code, filename, "exec")
    last = None
    if tree.body and isinstance(tree.body[-1], ast.Expr):
        last = ast.Expression(tree.body.pop().value)
    flags = ast.PyCF_ALLOW_TOP_LEVEL_AWAIT
    body = compile(tree, filename, "exec", flags=flags)
    expr = compile(last, filename, "eval", flags=flags) if last is not None else None
    try:
        _executing = True
        # From here a SIGINT is a KeyboardInterrupt in the cell: the agent interrupts
        # only after this (before it, the interpreter may not have its handler yet).
        _emit({"type": "started"})
        value = eval(body, _namespace)
        if inspect.iscoroutine(value):
            _loop.run_until_complete(value)
        value = None
        if expr is not None:
            value = eval(expr, _namespace)
            if inspect.iscoroutine(value):
                value = _loop.run_until_complete(value)
    finally:
        _executing = False
    if value is not None:
        _namespace["_"] = value
        return repr(value)
    return None


def _error(exc):
    tb = exc.__traceback__
    # Hide the driver's frames: the traceback starts in the user's cell.
    while tb is not None and not tb.tb_frame.f_code.co_filename.startswith("<cell"):
        tb = tb.tb_next
    lines = []
    for chunk in traceback.format_exception(type(exc), exc, tb):
        lines.extend(chunk.rstrip("\n").split("\n"))
    return {
        "type": "error",
        "ename": type(exc).__name__,
        "evalue": str(exc),
        "traceback": lines,
    }


def main():
    count = 0
    while True:
        line = _requests.readline()
        if not line:
            return
        try:
            request = json.loads(line)
            code = request.get("code", "")
        except Exception as exc:  # a malformed request is reported, never fatal
            _emit(_error(exc))
            _emit({"type": "done"})
            continue
        count += 1
        try:
            text = _run(code, count)
            sys.stdout.flush()
            sys.stderr.flush()
            if text is not None:
                _emit({"type": "result", "count": count, "text": text})
        except BaseException as exc:  # SystemExit and KeyboardInterrupt included
            try:
                sys.stdout.flush()
                sys.stderr.flush()
            except Exception:
                pass
            _emit(_error(exc))
        _emit({"type": "done"})


main()
