"""``opensandbox.api.execd``: execd wire models (see ``opensandbox.api``)."""
