"""Drives the official 1.1.1 tools (``osb``, ``opensandbox-mcp``) and our code interpreter
against the server in OPEN_SANDBOX_DOMAIN; run by official_tools.sh in its venv.
Each check prints ``ok`` or ``FAIL`` with what it saw; the last line counts them."""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
import tempfile
from typing import Any, Callable, List

RESULTS: List[bool] = []


def check(name: str, fn: Callable[[], Any]) -> Any:
    try:
        out = fn()
    except Exception as e:  # noqa: BLE001 - every failure is reported, then counted
        print(f"FAIL {name}: {type(e).__name__}: {e}")
        RESULTS.append(False)
        return None
    print(f"ok   {name}")
    RESULTS.append(True)
    return out


def osb(*args: str) -> str:
    p = subprocess.run(["osb", *args], capture_output=True, text=True, timeout=60)
    if p.returncode != 0:
        raise RuntimeError(f"osb {' '.join(args)} exited {p.returncode}: {p.stdout[-400:]}{p.stderr[-400:]}")
    return p.stdout


def expect(text: str, *wants: str) -> str:
    for w in wants:
        if w not in text:
            raise AssertionError(f"{w!r} not in output {text[-400:]!r}")
    return text


def drive_osb() -> None:
    created = check(
        "osb sandbox create", lambda: json.loads(osb("sandbox", "create", "-i", "python:3.11", "-o", "json"))
    )
    if not created:
        return
    sid = created["id"]
    check("osb sandbox get", lambda: expect(osb("sandbox", "get", sid, "-o", "json"), sid, "Running"))
    check("osb sandbox list", lambda: expect(osb("sandbox", "list", "-o", "json"), sid))
    # Line endings are kept in stdout events (1.1 framing): "hi" and uname on two lines.
    check(
        "osb command run (shell)",
        lambda: expect(osb("command", "run", sid, "-o", "raw", "--", "sh", "-c", "echo hi; uname"), "hi\nLinux"),
    )
    check(
        "osb command run --argv",
        lambda: expect(osb("command", "run", sid, "--argv", "-o", "raw", "--", "echo", "$HOME", ""), "$HOME"),
    )
    with tempfile.NamedTemporaryFile("w", suffix=".txt", delete=False) as f:
        f.write("uploaded by osb\n")
    check("osb file upload", lambda: osb("file", "upload", sid, f.name, "/tmp/osb-up.txt"))
    check("osb file cat", lambda: expect(osb("file", "cat", sid, "/tmp/osb-up.txt"), "uploaded by osb"))
    check(
        "osb file search",
        lambda: expect(osb("file", "search", sid, "/tmp", "-p", "osb-up*", "-o", "json"), "osb-up.txt"),
    )
    check("osb sandbox metrics", lambda: expect(osb("sandbox", "metrics", sid, "-o", "json"), "cpu_count"))
    check("osb egress get", lambda: expect(osb("egress", "get", sid, "-o", "json"), "default_action"))
    check("osb snapshot list", lambda: osb("snapshot", "list"))
    check("osb sandbox kill", lambda: osb("sandbox", "kill", sid))


def write_json(value: Any) -> str:
    with tempfile.NamedTemporaryFile("w", suffix=".json", delete=False) as f:
        json.dump(value, f)
    return f.name


def drive_osb_templates() -> None:
    created = check(
        "osb template create",
        lambda: expect(
            osb(
                "template",
                "create",
                "-i",
                "python:3.11",
                "-p",
                "s3://official-tools/publish",
                "--entrypoint",
                "sleep",
                "--entrypoint",
                "infinity",
                "-e",
                "TPL_VAR=from-template",
                "-m",
                "tool=osb",
                "-o",
                "json",
            ),
            "tpl_",
        ),
    )
    if not created:
        return
    tid = json.loads(created)["template_id"]

    def built() -> str:
        for _ in range(600):
            out = osb("template", "get", tid, "-o", "json")
            phase = json.loads(out)["status"]["phase"]
            if phase == "Succeeded":
                return out
            if phase == "Failed":
                raise AssertionError(f"template build failed: {out}")
            import time

            time.sleep(0.2)
        raise AssertionError("template build did not finish")

    check("osb template get (until Succeeded)", lambda: expect(built(), "manifest_ref", "local:templates/"))
    check("osb template list", lambda: expect(osb("template", "list", "-m", "tool=osb", "-o", "json"), tid))

    def from_template() -> None:
        from opensandbox.sync.sandbox import SandboxSync
        from datetime import timedelta

        sb = SandboxSync.create_from_template(tid, timeout=timedelta(minutes=10))
        try:
            out = sb.commands.run("echo $TPL_VAR")
            expect("".join(m.text for m in out.logs.stdout), "from-template")
        finally:
            sb.kill()

    check("Sandbox.create_from_template on the osb template", from_template)
    check("osb template delete", lambda: osb("template", "delete", tid))


def drive_osb_credential_vault() -> None:
    policy = write_json({"defaultAction": "deny", "egress": [{"action": "allow", "target": "*.example.com"}]})
    created = check(
        "osb sandbox create --credential-proxy",
        lambda: json.loads(
            osb(
                "sandbox",
                "create",
                "-i",
                "python:3.11",
                "--network-policy-file",
                policy,
                "--credential-proxy",
                "-o",
                "json",
            )
        ),
    )
    if not created:
        return
    sid = created["id"]
    secret = "official-tools-SECRET-value"
    payload = write_json(
        {
            "credentials": [{"name": "gh", "source": {"type": "inline", "value": secret}}],
            "bindings": [
                {
                    "name": "api",
                    "match": {"hosts": ["api.example.com"]},
                    "auth": {"type": "bearer", "credential": "gh"},
                },
                {
                    "name": "q",
                    "match": {"hosts": ["q.example.com"]},
                    "auth": {
                        "type": "passthrough",
                        "substitutions": [{"credential": "gh", "placeholder": "__GH__", "in": ["query"]}],
                    },
                },
            ],
        }
    )
    out = check(
        "osb credential-vault create",
        lambda: expect(osb("credential-vault", "create", sid, "--file", payload, "-o", "json"), "revision"),
    )
    if out is not None and secret in out:
        check("no secret in the create output", lambda: (_ for _ in ()).throw(AssertionError(out)))
    check(
        "osb credential-vault get",
        lambda: expect(osb("credential-vault", "get", sid, "-o", "json"), '"revision": 1', "passthrough"),
    )
    patch = write_json({"expectedRevision": 1, "bindings": {"delete": ["q"]}})
    check(
        "osb credential-vault patch",
        lambda: expect(osb("credential-vault", "patch", sid, "--file", patch, "-o", "json"), '"revision": 2'),
    )
    check(
        "osb credential-vault credential list",
        lambda: expect(osb("credential-vault", "credential", "list", sid, "-o", "json"), "gh", "inline"),
    )
    check(
        "osb credential-vault credential get",
        lambda: expect(osb("credential-vault", "credential", "get", sid, "gh", "-o", "json"), "gh"),
    )
    check(
        "osb credential-vault binding list",
        lambda: expect(osb("credential-vault", "binding", "list", sid, "-o", "json"), "api"),
    )
    check(
        "osb credential-vault binding get",
        lambda: expect(osb("credential-vault", "binding", "get", sid, "api", "-o", "json"), "bearer"),
    )
    check("osb credential-vault delete", lambda: osb("credential-vault", "delete", sid))
    check("osb sandbox kill (vault sandbox)", lambda: osb("sandbox", "kill", sid))


async def drive_mcp() -> None:
    from mcp import ClientSession, StdioServerParameters
    from mcp.client.stdio import stdio_client

    params = StdioServerParameters(command="opensandbox-mcp", args=["--transport", "stdio"], env=dict(os.environ))
    async with stdio_client(params) as (read, write):
        async with ClientSession(read, write) as session:
            await session.initialize()
            tools = {t.name for t in (await session.list_tools()).tools}
            check(
                "mcp list_tools", lambda: expect(" ".join(sorted(tools)), "sandbox_create", "command_run", "file_read")
            )

            async def call(name: str, **args: Any) -> str:
                res = await session.call_tool(name, args)
                text = "".join(getattr(c, "text", "") for c in res.content)
                if getattr(res, "is_error", False) or getattr(res, "isError", False):
                    raise RuntimeError(f"{name}: {text[-400:]}")
                return text

            async def step(name: str, coro: Any, *wants: str) -> str:
                try:
                    text = await coro
                    expect(text, *wants)
                except Exception as e:  # noqa: BLE001
                    print(f"FAIL mcp {name}: {type(e).__name__}: {e}")
                    RESULTS.append(False)
                    return ""
                print(f"ok   mcp {name}")
                RESULTS.append(True)
                return text

            created = await step("sandbox_create", call("sandbox_create", image="python:3.11"), "sandbox_id")
            if not created:
                return
            sid = json.loads(created)["sandbox_id"]
            await step("sandbox_connect", call("sandbox_connect", sandbox_id=sid), sid)
            await step("sandbox_get_info", call("sandbox_get_info", sandbox_id=sid), sid, "Running")
            await step("sandbox_list", call("sandbox_list"), sid)
            await step("sandbox_healthcheck", call("sandbox_healthcheck", sandbox_id=sid), "true")
            await step("sandbox_renew", call("sandbox_renew", sandbox_id=sid, timeout_seconds=900), "expire")
            await step("sandbox_get_endpoint", call("sandbox_get_endpoint", sandbox_id=sid, port=8080), "endpoint")
            await step("sandbox_get_metrics", call("sandbox_get_metrics", sandbox_id=sid), "cpu_count")
            await step(
                "command_run", call("command_run", sandbox_id=sid, command="echo mcp-hi; uname"), "mcp-hi", "Linux"
            )
            bg = await step(
                "command_run background", call("command_run", sandbox_id=sid, command="sleep 30", background=True), "id"
            )
            if bg:
                await step(
                    "command_interrupt", call("command_interrupt", sandbox_id=sid, execution_id=json.loads(bg)["id"])
                )
            await step(
                "file_create_directories",
                call("file_create_directories", sandbox_id=sid, entries=[{"path": "/tmp/mcpdir/sub"}]),
            )
            await step("file_write", call("file_write", sandbox_id=sid, path="/tmp/mcpdir/m.txt", content="from mcp"))
            await step("file_read", call("file_read", sandbox_id=sid, path="/tmp/mcpdir/m.txt"), "from mcp")
            await step("file_search", call("file_search", sandbox_id=sid, path="/tmp/mcpdir", pattern="*.txt"), "m.txt")
            await step(
                "file_replace_contents",
                call(
                    "file_replace_contents",
                    sandbox_id=sid,
                    entries=[{"path": "/tmp/mcpdir/m.txt", "old_content": "from", "new_content": "via"}],
                ),
            )
            await step(
                "file_read after replace", call("file_read", sandbox_id=sid, path="/tmp/mcpdir/m.txt"), "via mcp"
            )
            await step(
                "file_move",
                call(
                    "file_move",
                    sandbox_id=sid,
                    entries=[{"source": "/tmp/mcpdir/m.txt", "destination": "/tmp/mcpdir/n.txt"}],
                ),
            )
            await step("file_delete", call("file_delete", sandbox_id=sid, paths=["/tmp/mcpdir/n.txt"]))
            await step(
                "file_delete_directories", call("file_delete_directories", sandbox_id=sid, paths=["/tmp/mcpdir"])
            )
            await step("sandbox_kill", call("sandbox_kill", sandbox_id=sid))


def drive_code_interpreter() -> None:
    from code_interpreter import CodeInterpreterSync
    from code_interpreter.models.code import SupportedLanguage
    from opensandbox.sync.sandbox import SandboxSync

    sb = SandboxSync.create("python:3.11")
    try:
        ci = CodeInterpreterSync.create(sb)
        ex = ci.codes.run("x = 6 * 7\nprint(x)", language=SupportedLanguage.PYTHON)
        expect("".join(m.text for m in ex.logs.stdout), "42")
    finally:
        sb.kill()


def main() -> int:
    drive_osb()
    drive_osb_templates()
    drive_osb_credential_vault()
    asyncio.run(drive_mcp())
    check("CodeInterpreter python run", drive_code_interpreter)
    passed, failed = RESULTS.count(True), RESULTS.count(False)
    print(f"official-tools: {passed} passed, {failed} failed")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
