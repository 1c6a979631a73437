from __future__ import annotations

import os
from typing import TYPE_CHECKING, BinaryIO, Optional, Union

from .._request_sender import RequestOptions
from ._base import Resource

if TYPE_CHECKING:
    from .._types import File


class Files(Resource):
    def create(
        self,
        *,
        file: Union[bytes, BinaryIO, str, os.PathLike[str]],
        filename: Optional[str] = None,
        mime_type: Optional[str] = None,
        request_options: Optional[RequestOptions] = None,
    ) -> File:
        """Uploads a file (at most 100 MiB; read whole into memory): `file` is a path, bytes, or a file opened in
        binary mode. The name defaults to the path's or the file object's own, the type to what the name suggests."""
        upload = {"file": file, "filename": filename, "mime_type": mime_type}
        return self._sender.send("files.create", body=upload, options=request_options)

    def retrieve(self, id: str, *, request_options: Optional[RequestOptions] = None) -> File:
        return self._request("files.retrieve", path={"id": id}, options=request_options)

    def content(self, id: str, *, request_options: Optional[RequestOptions] = None) -> bytes:
        """The file's bytes."""
        return self._request("files.content", path={"id": id}, options=request_options)
