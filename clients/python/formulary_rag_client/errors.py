"""gRPC failures as Python exceptions. The google.rpc details the server sends are kept: BadRequest field
violations, the ErrorInfo reason and metadata, the RetryInfo delay."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

import grpc
from google.rpc import error_details_pb2, status_pb2

STATUS_DETAILS_KEY = "grpc-status-details-bin"


@dataclass(frozen=True)
class FieldViolation:
    field: str
    description: str


class RagError(Exception):
    """A call the service answered with a non-OK status.

    `reason` / `error_metadata`: the google.rpc.ErrorInfo the server attached ("" / {} when none), e.g.
    reason "SCOPE_MISSING" with metadata {"method": ..., "scope": "ingest"}. `retry_delay`: seconds the
    server asks the caller to wait before retrying (google.rpc.RetryInfo), or None.
    """

    def __init__(
        self,
        code: grpc.StatusCode,
        message: str,
        violations: list[FieldViolation] | None = None,
        correlation_id: str = "",
        *,
        reason: str = "",
        error_metadata: dict[str, str] | None = None,
        retry_delay: float | None = None,
    ) -> None:
        self.code = code
        self.message = message
        self.violations = violations or []
        self.correlation_id = correlation_id
        self.reason = reason
        self.error_metadata = dict(error_metadata or {})
        self.retry_delay = retry_delay
        fields = "; ".join(f"{v.field}: {v.description}" for v in self.violations)
        super().__init__(
            f"{code.name}: {message}"
            + (f" [{fields}]" if fields else "")
            + (f" ({reason})" if reason else "")
        )


class InvalidRequest(RagError):
    """INVALID_ARGUMENT: `violations` names each offending request field."""


class Unauthenticated(RagError):
    """UNAUTHENTICATED: no API key, or one the server does not know (`reason` API_KEY_MISSING or
    API_KEY_INVALID; `error_metadata` names the method and the scope it needs)."""


class PermissionDenied(RagError):
    """PERMISSION_DENIED: the API key lacks the method's scope (`reason` SCOPE_MISSING;
    `error_metadata["scope"]` is the scope needed)."""


class ResourceExhausted(RagError):
    """RESOURCE_EXHAUSTED: a rate limit or the cap on concurrent Ask streams (`reason` RATE_LIMITED or
    STREAM_CAP_REACHED); `retry_delay` is the seconds to wait before trying again."""


_BY_CODE: dict[grpc.StatusCode, type[RagError]] = {
    grpc.StatusCode.INVALID_ARGUMENT: InvalidRequest,
    grpc.StatusCode.UNAUTHENTICATED: Unauthenticated,
    grpc.StatusCode.PERMISSION_DENIED: PermissionDenied,
    grpc.StatusCode.RESOURCE_EXHAUSTED: ResourceExhausted,
}


def _rich_status(trailers: Iterable[Any] | None) -> status_pb2.Status | None:
    for item in trailers or ():
        key, value = item[0], item[1]
        if key == STATUS_DETAILS_KEY and isinstance(value, bytes):
            try:
                return status_pb2.Status.FromString(value)
            except Exception:  # a malformed detail is no reason to hide the status itself
                return None
    return None


def from_rpc_error(error: grpc.RpcError, correlation_id: str = "") -> RagError:
    """Translate a grpc.RpcError (a grpc.Call, or grpc.aio.AioRpcError) into RagError or its subclass for
    the status code, with the details the server attached."""
    code: grpc.StatusCode = error.code()
    message: str = error.details() or ""
    try:
        trailers = error.trailing_metadata()
    except Exception:  # no trailers (e.g. the connection was refused)
        trailers = None
    violations: list[FieldViolation] = []
    reason, metadata, retry_delay = "", {}, None
    status = _rich_status(trailers)
    for detail in status.details if status is not None else ():
        if detail.Is(error_details_pb2.BadRequest.DESCRIPTOR):
            bad = error_details_pb2.BadRequest()
            detail.Unpack(bad)
            violations += [FieldViolation(v.field, v.description) for v in bad.field_violations]
        elif detail.Is(error_details_pb2.ErrorInfo.DESCRIPTOR):
            info = error_details_pb2.ErrorInfo()
            detail.Unpack(info)
            reason, metadata = info.reason, dict(info.metadata)
        elif detail.Is(error_details_pb2.RetryInfo.DESCRIPTOR):
            retry = error_details_pb2.RetryInfo()
            detail.Unpack(retry)
            retry_delay = retry.retry_delay.seconds + retry.retry_delay.nanos / 1e9
    cls = _BY_CODE.get(code, RagError)
    return cls(
        code, message, violations, correlation_id,
        reason=reason, error_metadata=metadata, retry_delay=retry_delay,
    )
