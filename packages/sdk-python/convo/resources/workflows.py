from __future__ import annotations

from typing import TYPE_CHECKING, Optional

from .._pagination import Page
from .._request_sender import RequestOptions
from ._base import Resource

if TYPE_CHECKING:
    from typing_extensions import Unpack

    from .._types import CreateWorkflowBody, ListRunsQuery, ListWorkflowsQuery, TriggerWorkflowBody, UpdateWorkflowBody, Workflow, WorkflowRun


class Workflows(Resource):
    def list(self, *, request_options: Optional[RequestOptions] = None, **params: Unpack[ListWorkflowsQuery]) -> Page[Workflow]:
        return self._paginate("workflows.list", params, options=request_options)

    def create(self, *, request_options: Optional[RequestOptions] = None, **params: Unpack[CreateWorkflowBody]) -> Workflow:
        return self._request("workflows.create", body=params, options=request_options)

    def retrieve(self, id: str, *, request_options: Optional[RequestOptions] = None) -> Workflow:
        return self._request("workflows.retrieve", path={"id": id}, options=request_options)

    def update(self, id: str, *, request_options: Optional[RequestOptions] = None, **params: Unpack[UpdateWorkflowBody]) -> Workflow:
        """Changes its name, steps or `enabled`; runs already started keep the steps they started with."""
        return self._request("workflows.update", path={"id": id}, body=params, options=request_options)

    def delete(self, id: str, *, request_options: Optional[RequestOptions] = None) -> None:
        """Deletes it and cancels its unfinished runs; its runs stay readable."""
        self._request("workflows.delete", path={"id": id}, options=request_options)

    def trigger(self, id: str, *, request_options: Optional[RequestOptions] = None, **params: Unpack[TriggerWorkflowBody]) -> WorkflowRun:
        """Starts a run for a contact; returns the queued run (the steps run in the background)."""
        return self._request("workflows.trigger", path={"id": id}, body=params, options=request_options)

    def runs(self, id: str, *, request_options: Optional[RequestOptions] = None, **params: Unpack[ListRunsQuery]) -> Page[WorkflowRun]:
        """The workflow's runs, newest first; filter `status`."""
        return self._paginate("workflows.listRuns", params, path={"id": id}, options=request_options)

    def retrieve_run(self, id: str, run_id: str, *, request_options: Optional[RequestOptions] = None) -> WorkflowRun:
        return self._request("workflows.retrieveRun", path={"id": id, "run_id": run_id}, options=request_options)

    def cancel_run(self, id: str, run_id: str, *, request_options: Optional[RequestOptions] = None) -> WorkflowRun:
        """Cancels a run still queued or waiting."""
        return self._request("workflows.cancelRun", path={"id": id, "run_id": run_id}, options=request_options)
