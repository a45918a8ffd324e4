"""Synchronous services of a sandbox."""

from opensandbox.sync.services.command import CommandsSync
from opensandbox.sync.services.diagnostics import DiagnosticsSync
from opensandbox.sync.services.egress import EgressSync
from opensandbox.sync.services.filesystem import FilesystemSync
from opensandbox.sync.services.isolated import IsolationServiceSync, IsolationSessionSync
from opensandbox.sync.services.metrics import MetricsSync
from opensandbox.sync.services.pty import PtyConnectionSync, PtySync

__all__ = [
    "CommandsSync",
    "DiagnosticsSync",
    "EgressSync",
    "FilesystemSync",
    "IsolationServiceSync",
    "IsolationSessionSync",
    "MetricsSync",
    "PtyConnectionSync",
    "PtySync",
]
