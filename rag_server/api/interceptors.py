"""The one server interceptor, around every method:

* x-correlation-id: validated, regenerated when malformed, echoed back as a response header;
* RequestError -> gRPC status with google.rpc details; WorkCancelled (deadline passed between stages)
  -> DEADLINE_EXCEEDED;
* the call lifecycle (`Lifecycle`): in-flight calls are counted, and once the server drains (SIGTERM) new
  calls are refused with UNAVAILABLE while health keeps answering (NOT_SERVING) and accepted calls finish.
"""

from __future__ import annotations

import asyncio
import contextvars
import inspect
import logging
import re
import time
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any

import grpc

from rag_server.api.errors import RequestError
from rag_server.retrieval.timing import WorkCancelled

CORRELATION_HEADER = "x-correlation-id"
CORRELATION_PATTERN = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._:-]{0,127}$")
HEALTH_PREFIX = "/grpc.health.v1.Health/"
SHUTTING_DOWN = "the server is shutting down; retry elsewhere"

correlation_id_var: contextvars.ContextVar[str] = contextvars.ContextVar("correlation_id", default="")
log = logging.getLogger("rag_server.api")


def resolve_correlation_id(metadata: Any) -> tuple[str, bool]:
    """(id to use, whether the caller's id was kept)."""
    for key, value in metadata or ():
        if key.lower() == CORRELATION_HEADER:
            if isinstance(value, str) and CORRELATION_PATTERN.fullmatch(value):
                return value, True
            return uuid.uuid4().hex, False
    return uuid.uuid4().hex, False


def current_correlation_id() -> str:
    return correlation_id_var.get()


class Lifecycle:
    """Counts in-flight calls; `drain()` makes new calls (health excepted) fail with UNAVAILABLE."""

    def __init__(self) -> None:
        self.in_flight = 0
        self.draining = False
        self.last_call = 0.0  # time.monotonic() of the last call seen (served or refused)
        self._idle = asyncio.Event()
        self._idle.set()

    def enter(self) -> None:
        self.in_flight += 1
        self.last_call = time.monotonic()
        self._idle.clear()

    def leave(self) -> None:
        self.in_flight -= 1
        if self.in_flight <= 0:
            self.in_flight = 0
            self._idle.set()

    def drain(self) -> None:
        self.draining = True

    async def wait_quiet(self, quiet_s: float, timeout: float) -> None:
        """Until no call has arrived for `quiet_s` (calls still queued get their UNAVAILABLE instead of
        being cut by the server's stop), at most `timeout` seconds."""
        ends = time.monotonic() + timeout
        while (now := time.monotonic()) < ends and now - self.last_call < quiet_s:
            await asyncio.sleep(min(quiet_s, ends - now))

    async def wait_idle(self, timeout: float) -> bool:
        """True when no call is in flight within `timeout` seconds."""
        if self._idle.is_set():
            return True
        if timeout <= 0:
            return False
        try:
            await asyncio.wait_for(self._idle.wait(), timeout)
        except TimeoutError:
            return False
        return True


def _status_for(exc: BaseException) -> RequestError | None:
    if isinstance(exc, RequestError):
        return exc
    if isinstance(exc, WorkCancelled):
        code = grpc.StatusCode.DEADLINE_EXCEEDED if exc.expired else grpc.StatusCode.CANCELLED
        return RequestError(code, str(exc))
    return None


class CallInterceptor(grpc.aio.ServerInterceptor):  # type: ignore[misc]
    def __init__(self, lifecycle: Lifecycle | None = None) -> None:
        self.lifecycle = lifecycle or Lifecycle()

    async def intercept_service(
        self,
        continuation: Callable[[grpc.HandlerCallDetails], Awaitable[grpc.RpcMethodHandler]],
        handler_call_details: grpc.HandlerCallDetails,
    ) -> grpc.RpcMethodHandler:
        handler = await continuation(handler_call_details)
        if handler is None:
            return handler
        cid, kept = resolve_correlation_id(handler_call_details.invocation_metadata)
        method = handler_call_details.method
        lifecycle = self.lifecycle
        exempt = method.startswith(HEALTH_PREFIX)

        async def _start(context: grpc.aio.ServicerContext[Any, Any]) -> None:
            correlation_id_var.set(cid)
            if not kept:
                log.debug("correlation id regenerated for %s", method)
            if lifecycle.draining and not exempt:
                await context.abort(grpc.StatusCode.UNAVAILABLE, SHUTTING_DOWN)
            await context.send_initial_metadata(((CORRELATION_HEADER, cid),))

        async def _fail(context: grpc.aio.ServicerContext[Any, Any], exc: BaseException) -> None:
            error = _status_for(exc)
            if error is None:
                raise exc
            await context.abort_with_status(error.to_status())

        if handler.unary_unary:
            inner_uu = handler.unary_unary

            async def unary_unary(request: Any, context: grpc.aio.ServicerContext[Any, Any]) -> Any:
                lifecycle.enter()
                try:
                    await _start(context)
                    return await inner_uu(request, context)
                except (RequestError, WorkCancelled) as err:
                    await _fail(context, err)
                finally:
                    lifecycle.leave()

            return grpc.unary_unary_rpc_method_handler(
                unary_unary, handler.request_deserializer, handler.response_serializer
            )
        if handler.unary_stream and not inspect.isasyncgenfunction(handler.unary_stream):
            inner_uw = handler.unary_stream  # writes with context.write() (e.g. grpc.health.v1 Watch)

            async def unary_stream_writer(request: Any, context: grpc.aio.ServicerContext[Any, Any]) -> None:
                lifecycle.enter()
                try:
                    await _start(context)
                    await inner_uw(request, context)
                except (RequestError, WorkCancelled) as err:
                    await _fail(context, err)
                finally:
                    lifecycle.leave()

            return grpc.unary_stream_rpc_method_handler(
                unary_stream_writer, handler.request_deserializer, handler.response_serializer
            )
        if handler.unary_stream:
            inner_us = handler.unary_stream

            async def unary_stream(
                request: Any, context: grpc.aio.ServicerContext[Any, Any]
            ) -> AsyncIterator[Any]:
                lifecycle.enter()
                try:
                    await _start(context)
                    async for item in inner_us(request, context):
                        yield item
                except (RequestError, WorkCancelled) as err:
                    await _fail(context, err)
                finally:
                    lifecycle.leave()

            return grpc.unary_stream_rpc_method_handler(
                unary_stream, handler.request_deserializer, handler.response_serializer
            )
        if handler.stream_unary:
            inner_su = handler.stream_unary

            async def stream_unary(requests: Any, context: grpc.aio.ServicerContext[Any, Any]) -> Any:
                lifecycle.enter()
                try:
                    await _start(context)
                    return await inner_su(requests, context)
                except (RequestError, WorkCancelled) as err:
                    await _fail(context, err)
                finally:
                    lifecycle.leave()

            return grpc.stream_unary_rpc_method_handler(
                stream_unary, handler.request_deserializer, handler.response_serializer
            )
        if handler.stream_stream and not inspect.isasyncgenfunction(handler.stream_stream):
            inner_sw = handler.stream_stream  # writes with context.write()

            async def stream_stream_writer(
                requests: Any, context: grpc.aio.ServicerContext[Any, Any]
            ) -> None:
                lifecycle.enter()
                try:
                    await _start(context)
                    await inner_sw(requests, context)
                except (RequestError, WorkCancelled) as err:
                    await _fail(context, err)
                finally:
                    lifecycle.leave()

            return grpc.stream_stream_rpc_method_handler(
                stream_stream_writer, handler.request_deserializer, handler.response_serializer
            )
        if handler.stream_stream:
            inner_ss = handler.stream_stream

            async def stream_stream(
                requests: Any, context: grpc.aio.ServicerContext[Any, Any]
            ) -> AsyncIterator[Any]:
                lifecycle.enter()
                try:
                    await _start(context)
                    async for item in inner_ss(requests, context):
                        yield item
                except (RequestError, WorkCancelled) as err:
                    await _fail(context, err)
                finally:
                    lifecycle.leave()

            return grpc.stream_stream_rpc_method_handler(
                stream_stream, handler.request_deserializer, handler.response_serializer
            )
        return handler

