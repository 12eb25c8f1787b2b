"""Server interceptors: x-correlation-id (validated, regenerated when malformed, echoed back), and
RequestError -> gRPC status with google.rpc details, for every method."""

from __future__ import annotations

import contextvars
import inspect
import logging
import re
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any

import grpc

from rag_server.api.errors import RequestError

CORRELATION_HEADER = "x-correlation-id"
CORRELATION_PATTERN = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._:-]{0,127}$")

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


class CorrelationIdInterceptor(grpc.aio.ServerInterceptor):  # type: ignore[misc]
    """Puts a valid correlation id in a context variable and in the response headers."""

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

        async def _start(context: grpc.aio.ServicerContext[Any, Any]) -> None:
            correlation_id_var.set(cid)
            if not kept:
                log.debug("correlation id regenerated for %s", method)
            await context.send_initial_metadata(((CORRELATION_HEADER, cid),))

        if handler.unary_unary:
            inner_uu = handler.unary_unary

            async def unary_unary(request: Any, context: grpc.aio.ServicerContext[Any, Any]) -> Any:
                await _start(context)
                try:
                    return await inner_uu(request, context)
                except RequestError as err:
                    await context.abort_with_status(err.to_status())

            return grpc.unary_unary_rpc_method_handler(
                unary_unary, handler.request_deserializer, handler.response_serializer
            )
        if handler.unary_stream and not inspect.isasyncgenfunction(handler.unary_stream):
            inner_uw = handler.unary_stream  # writes with context.write() (e.g. grpc.health.v1 Watch)

            async def unary_stream_writer(request: Any, context: grpc.aio.ServicerContext[Any, Any]) -> None:
                await _start(context)
                try:
                    await inner_uw(request, context)
                except RequestError as err:
                    await context.abort_with_status(err.to_status())

            return grpc.unary_stream_rpc_method_handler(
                unary_stream_writer, handler.request_deserializer, handler.response_serializer
            )
        if handler.unary_stream:
            inner_us = handler.unary_stream

            async def unary_stream(
                request: Any, context: grpc.aio.ServicerContext[Any, Any]
            ) -> AsyncIterator[Any]:
                await _start(context)
                try:
                    async for item in inner_us(request, context):
                        yield item
                except RequestError as err:
                    await context.abort_with_status(err.to_status())

            return grpc.unary_stream_rpc_method_handler(
                unary_stream, handler.request_deserializer, handler.response_serializer
            )
        if handler.stream_unary:
            inner_su = handler.stream_unary

            async def stream_unary(requests: Any, context: grpc.aio.ServicerContext[Any, Any]) -> Any:
                await _start(context)
                try:
                    return await inner_su(requests, context)
                except RequestError as err:
                    await context.abort_with_status(err.to_status())

            return grpc.stream_unary_rpc_method_handler(
                stream_unary, handler.request_deserializer, handler.response_serializer
            )
        if handler.stream_stream and not inspect.isasyncgenfunction(handler.stream_stream):
            inner_sw = handler.stream_stream  # writes with context.write()

            async def stream_stream_writer(
                requests: Any, context: grpc.aio.ServicerContext[Any, Any]
            ) -> None:
                await _start(context)
                try:
                    await inner_sw(requests, context)
                except RequestError as err:
                    await context.abort_with_status(err.to_status())

            return grpc.stream_stream_rpc_method_handler(
                stream_stream_writer, handler.request_deserializer, handler.response_serializer
            )
        if handler.stream_stream:
            inner_ss = handler.stream_stream

            async def stream_stream(
                requests: Any, context: grpc.aio.ServicerContext[Any, Any]
            ) -> AsyncIterator[Any]:
                await _start(context)
                try:
                    async for item in inner_ss(requests, context):
                        yield item
                except RequestError as err:
                    await context.abort_with_status(err.to_status())

            return grpc.stream_stream_rpc_method_handler(
                stream_stream, handler.request_deserializer, handler.response_serializer
            )
        return handler
