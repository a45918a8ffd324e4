"""Models of the OpenSandbox SDK (pydantic, as in the official SDK)."""

from opensandbox.models.diagnostics import *  # noqa: F401,F403
from opensandbox.models.execd import *  # noqa: F401,F403
from opensandbox.models.execd_sync import *  # noqa: F401,F403
from opensandbox.models.filesystem import *  # noqa: F401,F403
from opensandbox.models.isolated import *  # noqa: F401,F403
from opensandbox.models.sandboxes import *  # noqa: F401,F403
