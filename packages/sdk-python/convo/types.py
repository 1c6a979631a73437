"""The types of the /v1 contract (generated into `convo/_types.py` from the OpenAPI document)."""

from ._types import *  # noqa: F403
from ._types import __all__ as __all__
