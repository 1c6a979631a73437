from __future__ import annotations

from typing import TYPE_CHECKING, Optional

from .._pagination import Page
from .._request_sender import RequestOptions
from ._base import Resource

if TYPE_CHECKING:
    from typing_extensions import Unpack

    from .._types import CreateWorkflowBody, ListRunsQuery, ListWorkflowsQuery, TriggerWorkflowBody, Workflow, WorkflowRun


class Workflows(Resource):
    def list(self, *, request_options: Optional[RequestOptions] = None, **params: Unpack[ListWorkflowsQuery]) -> Page[Workflow]:
        return self._paginate("workflows.list", params, options=request_options)

    def create(self, *, request_options: Optional[RequestOptions] = None, **params: Unpack[CreateWorkflowBody]) -> Workflow:
        return self._request("workflows.create", body=params, options=request_options)

    def retrieve(self, id: str, *, request_options: Optional[RequestOptions] = None) -> Workflow:
        return self._request("workflows.retrieve", path={"id": id}, options=request_options)

    def trigger(self, id: str, *, request_options: Optional[RequestOptions] = None, **params: Unpack[TriggerWorkflowBody]) -> WorkflowRun:
        """Starts a run for a contact; returns the queued run (the steps run in the background)."""
        return self._request("workflows.trigger", path={"id": id}, body=params, options=request_options)

    def runs(self, id: str, *, request_options: Optional[RequestOptions] = None, **params: Unpack[ListRunsQuery]) -> Page[WorkflowRun]:
        """The workflow's runs, newest first; filter `status`."""
        return self._paginate("workflows.listRuns", params, path={"id": id}, options=request_options)
