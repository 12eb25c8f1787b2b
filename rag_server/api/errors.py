"""Map domain failures to gRPC statuses with google.rpc details (never INTERNAL for bad input)."""

from __future__ import annotations

from collections.abc import Iterable

import grpc
from google.protobuf import any_pb2
from google.rpc import code_pb2, error_details_pb2, status_pb2
from grpc_status import rpc_status


class RequestError(Exception):
    """A request the service refuses: carries the gRPC code and field violations."""

    def __init__(
        self,
        code: grpc.StatusCode,
        message: str,
        violations: Iterable[tuple[str, str]] = (),
        precondition: Iterable[tuple[str, str, str]] = (),
    ) -> None:
        super().__init__(message)
        self.code = code
        self.message = message
        self.violations = list(violations)
        self.precondition = list(precondition)

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


def unimplemented(capability: str) -> RequestError:
    return RequestError(grpc.StatusCode.UNIMPLEMENTED, f"not built yet: {capability}")


async def abort_with(context: grpc.aio.ServicerContext, error: RequestError) -> None:
    await context.abort_with_status(error.to_status())
