"""gRPC failures as Python exceptions; google.rpc.BadRequest field violations are kept."""

from __future__ import annotations

from dataclasses import dataclass

import grpc
from google.rpc import error_details_pb2
from grpc_status import rpc_status


@dataclass(frozen=True)
class FieldViolation:
    field: str
    description: str


class RagError(Exception):
    """A call the service answered with a non-OK status."""

    def __init__(
        self,
        code: grpc.StatusCode,
        message: str,
        violations: list[FieldViolation] | None = None,
        correlation_id: str = "",
    ) -> None:
        self.code = code
        self.message = message
        self.violations = violations or []
        self.correlation_id = correlation_id
        fields = "; ".join(f"{v.field}: {v.description}" for v in self.violations)
        super().__init__(f"{code.name}: {message}" + (f" [{fields}]" if fields else ""))


class InvalidRequest(RagError):
    """INVALID_ARGUMENT: `violations` names each offending request field."""


def from_rpc_error(error: grpc.RpcError, correlation_id: str = "") -> RagError:
    """Translate a grpc.RpcError (also a grpc.Call) into RagError / InvalidRequest."""
    code: grpc.StatusCode = error.code()
    message: str = error.details() or ""
    violations: list[FieldViolation] = []
    try:
        status = rpc_status.from_call(error)
    except ValueError:
        status = None
    if status is not None:
        for detail in status.details:
            if detail.Is(error_details_pb2.BadRequest.DESCRIPTOR):
                bad = error_details_pb2.BadRequest()
                detail.Unpack(bad)
                violations += [FieldViolation(v.field, v.description) for v in bad.field_violations]
    cls = InvalidRequest if code == grpc.StatusCode.INVALID_ARGUMENT else RagError
    return cls(code, message, violations, correlation_id)
