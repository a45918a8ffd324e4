"""The README quickstart: the same steps with the async and the blocking API.
Reads OPEN_SANDBOX_DOMAIN / OPEN_SANDBOX_API_KEY from the environment."""

import asyncio

from opensandbox import Sandbox, SandboxSync
from opensandbox.models.execd import ExecutionHandlers


async def main() -> None:
    sandbox = await Sandbox.create("python:3.11")
    try:
        await sandbox.files.write_file(
            "hello.py", "import sys; print('Hello World from Python', sys.version.split()[0])"
        )
        result = await sandbox.commands.run("python3 hello.py")
        print(result.logs.stdout[0].text.rstrip("\n"))  # 1.1 servers keep the line ending

        async def on_stdout(msg):
            print("streamed:", msg.text.rstrip("\n"))

        await sandbox.commands.run("echo one; echo two", handlers=ExecutionHandlers(on_stdout=on_stdout))
        info = await sandbox.get_info()
        print("state:", info.status.state)
    finally:
        await sandbox.kill()


def main_sync() -> None:
    with SandboxSync.create("python:3.11") as sandbox:
        try:
            sandbox.files.write_file("/tmp/note.txt", "hi from the sync API")
            print(sandbox.files.read_file("/tmp/note.txt"))
            print("exit code:", sandbox.commands.run("exit 3").exit_code)
        finally:
            sandbox.kill()


if __name__ == "__main__":
    asyncio.run(main())
    main_sync()
