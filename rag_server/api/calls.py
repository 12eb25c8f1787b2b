"""The call plumbing around every method, wrapped once per method when the services register
(`Registrar`), not an interceptor chain run per call:

* x-correlation-id: validated, regenerated when malformed, echoed back in the response trailers (with the
  status, so a unary reply costs no extra write) and, for a server stream, also in the response headers;
* RequestError -> gRPC status with google.rpc details; WorkCancelled (deadline passed between stages)
  -> DEADLINE_EXCEEDED;
* the request bytes: every handler is registered with a pass-through deserializer and the wrapper parses
  them after the correlation id and the gates (a keyless malformed call is UNAUTHENTICATED), so corrupt wire
  data or invalid UTF-8 in a string field is INVALID_ARGUMENT with a BadRequest violation on `request`, its
  correlation id in the trailers and counted by the observers, like any other refusal (grpc itself would
  answer UNKNOWN before any of the plumbing ran); a stream's messages are parsed one by one as they arrive;
* the call lifecycle (`Lifecycle`): in-flight calls are counted, and once the server drains (SIGTERM) new
  calls are refused with UNAVAILABLE while health keeps answering (NOT_SERVING) and accepted calls finish.
"""

from __future__ import annotations

import asyncio
import contextlib
import inspect
import logging
import re
import time
import uuid
from collections.abc import AsyncIterator, Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import grpc

from rag_server.call_context import Gate, Observer, correlation_id_var
from rag_server.lifecycle import Lifecycle
from rag_server.request_errors import RequestError, invalid_argument
from rag_server.retrieval.timing import WorkCancelled

CORRELATION_HEADER = "x-correlation-id"
CORRELATION_PATTERN = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._:-]{0,127}$")
HEALTH_PREFIX = "/grpc.health.v1.Health/"
# Open to every caller, whatever the gates say: health checks and server reflection.
OPEN_PREFIXES = (HEALTH_PREFIX, "/grpc.reflection.")
SHUTTING_DOWN = "the server is shutting down; retry elsewhere"

log = logging.getLogger("rag_server.api")


def resolve_correlation_id(metadata: Any) -> tuple[str, bool]:
    """(id to use, whether the caller's id was kept)."""
    for key, value in metadata or ():
        if key.lower() == CORRELATION_HEADER:
            if isinstance(value, str) and CORRELATION_PATTERN.fullmatch(value):
                return value, True
            return uuid.uuid4().hex, False
    return uuid.uuid4().hex, False


def _status_for(exc: BaseException) -> RequestError | None:
    if isinstance(exc, RequestError):
        return exc
    if isinstance(exc, WorkCancelled):
        code = grpc.StatusCode.DEADLINE_EXCEEDED if exc.expired else grpc.StatusCode.CANCELLED
        return RequestError(code, str(exc))
    return None


@dataclass
class Plumbing:
    """What every call passes through: the lifecycle, the gates (in order), the observers. Health and
    reflection skip the gates (they stay open) but are observed."""

    lifecycle: Lifecycle
    gates: list[Gate] = field(default_factory=list)
    observers: list[Observer] = field(default_factory=list)
    trailers: tuple[tuple[str, str], ...] = ()  # sent with every reply after the correlation id


def _code_of(exc: BaseException) -> grpc.StatusCode:
    if isinstance(exc, asyncio.CancelledError):
        return grpc.StatusCode.CANCELLED
    error = _status_for(exc)
    if error is not None:
        return error.code
    code = getattr(exc, "code", None)  # an abort: grpc's AbortError carries no code; the context has it
    return code if isinstance(code, grpc.StatusCode) else grpc.StatusCode.UNKNOWN


Parse = Callable[[bytes], Any]


def request_parser(method: str, deserializer: Parse | None) -> Parse | None:
    """`deserializer` (a message class's FromString) turning any failure to parse into INVALID_ARGUMENT with
    a BadRequest violation on `request`; None when the method takes raw bytes."""
    if deserializer is None:
        return None
    message_class = getattr(deserializer, "__self__", None)
    descriptor = getattr(message_class, "DESCRIPTOR", None)
    name = getattr(descriptor, "full_name", None) or f"request of {method}"

    def parse(raw: bytes) -> Any:
        try:
            return deserializer(raw)
        except Exception as exc:  # DecodeError: corrupt wire data, invalid UTF-8 in a string field, ...
            # "Error parsing message with type 'rag.v1.X': String field had bad UTF-8" -> the cause only
            reason = (str(exc) or type(exc).__name__).rpartition("': ")[2]
            raise invalid_argument(
                f"malformed request: not a valid {name}", ("request", f"not a valid {name}: {reason}")
            ) from None

    return parse


async def _parsed_stream(requests: AsyncIterator[bytes], parse: Parse) -> AsyncIterator[Any]:
    """A stream's messages, each parsed as it arrives."""
    async for raw in requests:
        yield parse(raw)


def wrap_handler(method: str, handler: grpc.RpcMethodHandler, plumbing: Plumbing) -> grpc.RpcMethodHandler:
    """The handler of `method` inside the call plumbing (correlation id, gates, status mapping, lifecycle,
    observers); built once per method at registration, so a call pays for one coroutine frame, not an
    interceptor chain."""
    lifecycle = plumbing.lifecycle
    open_method = method.startswith(OPEN_PREFIXES)
    health_method = method.startswith(HEALTH_PREFIX)
    parse = request_parser(method, handler.request_deserializer)

    async def start(context: grpc.aio.ServicerContext[Any, Any], streaming: bool) -> list[Callable[[], None]]:
        cid, kept = resolve_correlation_id(context.invocation_metadata())
        correlation_id_var.set(cid)
        if not kept:
            log.debug("correlation id regenerated for %s", method)
        echo = ((CORRELATION_HEADER, cid), *plumbing.trailers)
        # In the trailers of every reply (they travel with the status: no extra write); a stream also has it
        # in its headers, before the first message.
        context.set_trailing_metadata(echo)
        releases: list[Callable[[], None]] = []
        if not open_method:
            try:
                for gate in plumbing.gates:
                    release = gate.admit(method, context)
                    if release is not None:
                        releases.append(release)
            except BaseException:
                for release in reversed(releases):
                    release()
                raise
        if streaming:
            await context.send_initial_metadata(echo)
        return releases

    async def fail(context: grpc.aio.ServicerContext[Any, Any], exc: BaseException) -> None:
        error = _status_for(exc)
        if error is None:
            raise exc
        status = error.to_status()
        echo = ((CORRELATION_HEADER, correlation_id_var.get()),)
        await context.abort(status.code, status.details, (*status.trailing_metadata, *echo))

    def observe(code: grpc.StatusCode, began: float) -> None:
        if plumbing.observers:
            seconds = time.perf_counter() - began
            for observer in plumbing.observers:
                observer.finished(method, code, seconds)

    async def refuse(context: grpc.aio.ServicerContext[Any, Any], began: float) -> None:
        """UNAVAILABLE while the server drains: never in flight, so it cannot hold the drain open."""
        lifecycle.refused += 1
        cid, _ = resolve_correlation_id(context.invocation_metadata())
        correlation_id_var.set(cid)
        try:
            await context.abort(grpc.StatusCode.UNAVAILABLE, SHUTTING_DOWN,
                                ((CORRELATION_HEADER, cid), *plumbing.trailers))
        finally:
            observe(grpc.StatusCode.UNAVAILABLE, began)

    @contextlib.asynccontextmanager
    async def call(
        context: grpc.aio.ServicerContext[Any, Any], streaming: bool = False
    ) -> AsyncIterator[None]:
        began = time.perf_counter()
        if lifecycle.draining and not health_method:
            await refuse(context, began)
        lifecycle.enter()
        code = grpc.StatusCode.OK
        releases: list[Callable[[], None]] = []
        try:
            releases = await start(context, streaming)
            yield
        except (RequestError, WorkCancelled) as err:
            code = _code_of(err)
            await fail(context, err)
        except BaseException as exc:
            code = _aborted_code(context) or _code_of(exc)
            raise
        finally:
            for release in reversed(releases):
                release()
            lifecycle.leave()
            observe(code, began)

    def rebuilt(behaviour: Any, factory: Callable[..., grpc.RpcMethodHandler]) -> grpc.RpcMethodHandler:
        # Bytes in: the request is parsed inside the plumbing (`parse`), after the correlation id and gates.
        return factory(behaviour, None, handler.response_serializer)

    def one(raw: Any) -> Any:
        return parse(raw) if parse is not None else raw

    def each(raw: Any) -> Any:
        return _parsed_stream(raw, parse) if parse is not None else raw

    if handler.unary_unary:
        inner_uu = handler.unary_unary

        async def unary_unary(request: Any, context: grpc.aio.ServicerContext[Any, Any]) -> Any:
            async with call(context):
                return await inner_uu(one(request), context)

        return rebuilt(unary_unary, grpc.unary_unary_rpc_method_handler)
    if handler.unary_stream and not inspect.isasyncgenfunction(handler.unary_stream):
        inner_uw = handler.unary_stream  # writes with context.write() (e.g. grpc.health.v1 Watch)

        async def unary_stream_writer(request: Any, context: grpc.aio.ServicerContext[Any, Any]) -> None:
            async with call(context, streaming=True):
                await inner_uw(one(request), context)

        return rebuilt(unary_stream_writer, grpc.unary_stream_rpc_method_handler)
    if handler.unary_stream:
        inner_us = handler.unary_stream

        async def unary_stream(
            request: Any, context: grpc.aio.ServicerContext[Any, Any]
        ) -> AsyncIterator[Any]:
            async with call(context, streaming=True):
                async for item in inner_us(one(request), context):
                    yield item

        return rebuilt(unary_stream, grpc.unary_stream_rpc_method_handler)
    if handler.stream_unary:
        inner_su = handler.stream_unary

        async def stream_unary(requests: Any, context: grpc.aio.ServicerContext[Any, Any]) -> Any:
            async with call(context):
                return await inner_su(each(requests), context)

        return rebuilt(stream_unary, grpc.stream_unary_rpc_method_handler)
    if handler.stream_stream and not inspect.isasyncgenfunction(handler.stream_stream):
        inner_sw = handler.stream_stream

        async def stream_stream_writer(requests: Any, context: grpc.aio.ServicerContext[Any, Any]) -> None:
            async with call(context, streaming=True):
                await inner_sw(each(requests), context)

        return rebuilt(stream_stream_writer, grpc.stream_stream_rpc_method_handler)
    if handler.stream_stream:  # server reflection: open (no gates), but observed and its requests parsed
        inner_ss = handler.stream_stream

        async def stream_stream(
            requests: Any, context: grpc.aio.ServicerContext[Any, Any]
        ) -> AsyncIterator[Any]:
            async with call(context, streaming=True):
                async for item in inner_ss(each(requests), context):
                    yield item

        return rebuilt(stream_stream, grpc.stream_stream_rpc_method_handler)
    return handler


def _aborted_code(context: grpc.aio.ServicerContext[Any, Any]) -> grpc.StatusCode | None:
    """The code a handler aborted with (context.abort raises, and the context keeps the code)."""
    try:
        code = context.code()
    except Exception:
        return None
    return code if isinstance(code, grpc.StatusCode) and code != grpc.StatusCode.OK else None


class _WrappedGeneric(grpc.GenericRpcHandler):  # type: ignore[misc]
    def __init__(self, inner: grpc.GenericRpcHandler, plumbing: Plumbing) -> None:
        self.inner = inner
        self.plumbing = plumbing
        self.wrapped: dict[str, grpc.RpcMethodHandler | None] = {}

    def service(self, handler_call_details: grpc.HandlerCallDetails) -> grpc.RpcMethodHandler | None:
        method = handler_call_details.method
        if method not in self.wrapped:
            handler = self.inner.service(handler_call_details)
            self.wrapped[method] = wrap_handler(method, handler, self.plumbing) if handler else None
        return self.wrapped[method]


class Registrar:
    """Stands in for the grpc.aio server while the generated `add_*_to_server` functions (and reflection)
    register their handlers: every handler is wrapped once (`wrap_handler`); everything else goes to the
    server. No interceptor runs per call."""

    def __init__(self, server: grpc.aio.Server, plumbing: Plumbing) -> None:
        self._server = server
        self._plumbing = plumbing

    def add_generic_rpc_handlers(self, handlers: Sequence[grpc.GenericRpcHandler]) -> None:
        self._server.add_generic_rpc_handlers([_WrappedGeneric(h, self._plumbing) for h in handlers])

    def add_registered_method_handlers(
        self, service_name: str, method_handlers: dict[str, grpc.RpcMethodHandler]
    ) -> None:
        wrapped = {
            name: wrap_handler(f"/{service_name}/{name}", handler, self._plumbing)
            for name, handler in method_handlers.items()
        }
        self._server.add_registered_method_handlers(service_name, wrapped)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._server, name)
