"""grpc.health.v1.Health whose Watch streams end once the server shuts down.

The stock aio servicer keeps every Watch stream open forever, so a single health watcher would hold
`server.stop(grace)` for the whole grace period. Here a watcher receives NOT_SERVING and its stream
then completes, so shutdown waits only for real in-flight work.
"""

from __future__ import annotations

from typing import Any

from grpc_health.v1 import health_pb2
from grpc_health.v1._async import HealthServicer as _AsyncHealthServicer


class HealthServicer(_AsyncHealthServicer):  # type: ignore[misc]
    async def Watch(self, request: health_pb2.HealthCheckRequest, context: Any) -> None:
        condition = self._server_watchers[request.service]
        self._watcher_count_by_service[request.service] += 1
        last_status = None
        try:
            async with condition:
                while True:
                    status = self._server_status.get(
                        request.service, health_pb2.HealthCheckResponse.SERVICE_UNKNOWN
                    )
                    if status != last_status:
                        await context.write(health_pb2.HealthCheckResponse(status=status))
                    last_status = status
                    if self._gracefully_shutting_down:
                        return
                    await condition.wait()
        finally:
            self._watcher_count_by_service[request.service] -= 1
            if self._watcher_count_by_service[request.service] == 0:
                self._server_watchers.pop(request.service, None)
                self._watcher_count_by_service.pop(request.service, None)
