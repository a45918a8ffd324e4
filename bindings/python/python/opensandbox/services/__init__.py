"""Async services of a sandbox."""

from opensandbox.services.command import Commands
from opensandbox.services.diagnostics import Diagnostics
from opensandbox.services.egress import Egress
from opensandbox.services.filesystem import Filesystem
from opensandbox.services.isolated import IsolationService, IsolationSession
from opensandbox.services.metrics import Metrics
from opensandbox.services.pty import Pty, PtyConnection

__all__ = [
    "Commands",
    "Diagnostics",
    "Egress",
    "Filesystem",
    "IsolationService",
    "IsolationSession",
    "Metrics",
    "Pty",
    "PtyConnection",
]
