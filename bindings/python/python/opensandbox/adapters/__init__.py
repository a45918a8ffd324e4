"""The official SDK's ``opensandbox.adapters`` path, kept for code that imports it.

The official package converts its generated HTTP clients' models here; this package
has no generated clients (the native layer speaks the protocol), so only the
converters that tools use on their own data are provided.
"""
