"""The base of this package's pydantic models."""

from pydantic import BaseModel, ConfigDict


class LazyModel(BaseModel):
    """``pydantic.BaseModel`` whose validator and serializer are built on first use.

    ``import opensandbox`` defines about a hundred models; building every schema up
    front was most of the import's time, and a program uses a handful of them.
    Behaviour is pydantic's own (``defer_build``): the same validation, errors and
    dumps, only later.
    """

    model_config = ConfigDict(defer_build=True)
