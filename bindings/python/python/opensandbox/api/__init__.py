"""The official SDK's ``opensandbox.api`` path (its generated HTTP clients there).

Only the wire models that tools build from data they fetched themselves are provided;
requests go through the native layer, never through a second HTTP stack.
"""
