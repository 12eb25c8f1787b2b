"""Refusals of a request, raised by the servicers and the security gates alike and turned into the reply by
the call plumbing (api/calls.py): gRPC statuses with google.rpc details (never INTERNAL for bad input):
BadRequest, PreconditionFailure, QuotaFailure, ErrorInfo (a machine-readable reason, domain "formulary-rag")
and RetryInfo. No generated rag.v1 code: only grpc and the google.rpc messages."""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping

import grpc
from google.protobuf import any_pb2, duration_pb2
from google.rpc import code_pb2, error_details_pb2, status_pb2
from grpc_status import rpc_status

ERROR_DOMAIN = "formulary-rag"  # google.rpc.ErrorInfo.domain of every refusal that names a reason
CONVERSATION_NOT_OWNED = "CONVERSATION_NOT_OWNED"


class RequestError(Exception):
    """A request the service refuses: carries the gRPC code and field violations."""

    def __init__(
        self,
        code: grpc.StatusCode,
        message: str,
        violations: Iterable[tuple[str, str]] = (),
        precondition: Iterable[tuple[str, str, str]] = (),
        *,
        reason: str = "",
        info: Mapping[str, str] | None = None,
        retry_delay_s: float | None = None,
        quota: Iterable[tuple[str, str]] = (),
    ) -> None:
        super().__init__(message)
        self.code = code
        self.message = message
        self.violations = list(violations)
        self.precondition = list(precondition)
        self.reason = reason  # google.rpc.ErrorInfo.reason (domain ERROR_DOMAIN) when set
        self.info = dict(info or {})  # google.rpc.ErrorInfo.metadata
        self.retry_delay_s = retry_delay_s  # google.rpc.RetryInfo.retry_delay when set
        self.quota = list(quota)  # google.rpc.QuotaFailure violations: (subject, description)

    def to_status(self) -> grpc.Status:
        details: list[any_pb2.Any] = []
        if self.violations:
            bad = error_details_pb2.BadRequest(
                field_violations=[
                    error_details_pb2.BadRequest.FieldViolation(field=f, description=d)
                    for f, d in self.violations
                ]
            )
            packed = any_pb2.Any()
            packed.Pack(bad)
            details.append(packed)
        if self.precondition:
            pre = error_details_pb2.PreconditionFailure(
                violations=[
                    error_details_pb2.PreconditionFailure.Violation(type=t, subject=s, description=d)
                    for t, s, d in self.precondition
                ]
            )
            packed = any_pb2.Any()
            packed.Pack(pre)
            details.append(packed)
        if self.quota:
            quota = error_details_pb2.QuotaFailure(
                violations=[error_details_pb2.QuotaFailure.Violation(subject=s, description=d)
                            for s, d in self.quota]
            )
            packed = any_pb2.Any()
            packed.Pack(quota)
            details.append(packed)
        if self.reason:
            info = error_details_pb2.ErrorInfo(reason=self.reason, domain=ERROR_DOMAIN, metadata=self.info)
            packed = any_pb2.Any()
            packed.Pack(info)
            details.append(packed)
        if self.retry_delay_s is not None:
            millis = max(1, math.ceil(self.retry_delay_s * 1000))  # never "retry now": round up to a ms
            delay = duration_pb2.Duration(seconds=millis // 1000, nanos=(millis % 1000) * 1_000_000)
            packed = any_pb2.Any()
            packed.Pack(error_details_pb2.RetryInfo(retry_delay=delay))
            details.append(packed)
        status = status_pb2.Status(
            code=getattr(code_pb2, self.code.name), message=self.message, details=details
        )
        return rpc_status.to_status(status)


def invalid_argument(message: str, *violations: tuple[str, str]) -> RequestError:
    return RequestError(grpc.StatusCode.INVALID_ARGUMENT, message, violations)


def failed_precondition(message: str, subject: str, kind: str = "STATE") -> RequestError:
    return RequestError(grpc.StatusCode.FAILED_PRECONDITION, message, precondition=[(kind, subject, message)])


def not_found(message: str, *violations: tuple[str, str]) -> RequestError:
    return RequestError(grpc.StatusCode.NOT_FOUND, message, violations)


def unauthenticated(message: str, reason: str, info: Mapping[str, str]) -> RequestError:
    """No usable credentials (missing, unknown or revoked API key): UNAUTHENTICATED with ErrorInfo."""
    return RequestError(grpc.StatusCode.UNAUTHENTICATED, message, reason=reason, info=info)


def permission_denied(message: str, reason: str, info: Mapping[str, str]) -> RequestError:
    """A known caller without the right (a missing scope): PERMISSION_DENIED with ErrorInfo."""
    return RequestError(grpc.StatusCode.PERMISSION_DENIED, message, reason=reason, info=info)


def conversation_not_owned(conversation_id: str) -> RequestError:
    """Another caller's conversation: PERMISSION_DENIED with ErrorInfo, naming neither that caller nor
    anything of the conversation."""
    return permission_denied(
        f"conversation {conversation_id!r} belongs to another caller: start a new conversation with a new "
        "conversation_id", CONVERSATION_NOT_OWNED, {"conversation_id": conversation_id},
    )


def resource_exhausted(
    message: str, reason: str, retry_delay_s: float, info: Mapping[str, str]
) -> RequestError:
    """A limit reached (rate, concurrent streams): RESOURCE_EXHAUSTED with ErrorInfo and RetryInfo."""
    return RequestError(
        grpc.StatusCode.RESOURCE_EXHAUSTED, message, reason=reason, info=info, retry_delay_s=retry_delay_s
    )
