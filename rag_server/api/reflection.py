"""Server reflection that also resolves method symbols.

grpc-python's reflection servicer asks the descriptor pool for the file containing a symbol; the pool
knows services, messages, fields and enum values by name but not methods, so `grpcurl describe
rag.v1.AnswerService.Ask` failed with "Symbol not found" (grpc/grpc#34743). Here a method that the pool
cannot find resolves to the file of its service (which declares it); everything else is unchanged.
"""

from __future__ import annotations

from typing import Any

from grpc_reflection.v1alpha import reflection
from grpc_reflection.v1alpha._async import ReflectionServicer


class MethodAwareReflection(ReflectionServicer):  # type: ignore[misc]
    def _file_containing_symbol(self, request: Any, fully_qualified_name: str) -> Any:
        response = super()._file_containing_symbol(request, fully_qualified_name)
        if not response.HasField("error_response"):
            return response
        service_name, _, method = fully_qualified_name.rpartition(".")
        try:
            service = self._pool.FindServiceByName(service_name)
        except KeyError:
            return response
        if method not in service.methods_by_name:
            return response
        return super()._file_containing_symbol(request, service_name)


def enable(service_names: tuple[str, ...], server: Any) -> None:
    """Register reflection (grpc.reflection.v1alpha) for `service_names` on `server`."""
    from grpc_reflection.v1alpha import reflection_pb2_grpc

    reflection_pb2_grpc.add_ServerReflectionServicer_to_server(MethodAwareReflection(service_names), server)


SERVICE_NAME: str = reflection.SERVICE_NAME
