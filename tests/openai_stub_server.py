"""A tiny HTTP server speaking the OpenAI chat-completions streaming protocol.

Real sockets, real SSE: the robot's openai client talks to it exactly as to a real
server. Each request takes the next behaviour from a script, so a test can make the
server answer, stall, fail with HTTP 500, or die in the middle of a reply.
"""

from __future__ import annotations

import asyncio
import json
from dataclasses import dataclass, field

OK, STALL, ERROR_500, CUT = "ok", "stall", "500", "cut"
BAD_JSON = "bad_json"  # a 200 event stream whose first event is not JSON
SLOW = "slow"  # the reply, after ``slow_s`` of silence
ECHO_KEY = "echo_key"  # HTTP 401 whose body repeats the API key the client sent (as some servers do)


@dataclass
class StubOpenAIServer:
    reply: str = "Kyoto is lovely in spring. Nara has friendly deer."
    script: list[str] = field(default_factory=list)  # behaviours, one per request; then OK
    requests: list[dict] = field(default_factory=list)
    port: int = 0
    slow_s: float = 3.0
    keep_requests: bool = True  # False: a long run (bench/soak.py) keeps none of them
    _server: asyncio.AbstractServer | None = None

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    async def __aenter__(self) -> "StubOpenAIServer":
        self._server = await asyncio.start_server(self._handle, "127.0.0.1", 0)
        self.port = self._server.sockets[0].getsockname()[1]
        return self

    async def __aexit__(self, *exc: object) -> None:
        assert self._server is not None
        self._server.close()
        # connections left stalled by a STALL behaviour are dropped, not awaited
        self._server.close_clients() if hasattr(self._server, "close_clients") else None

    async def _handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            request_line, body, auth = await self._read_request(reader)
            if request_line.startswith("GET ") and "/models" in request_line:  # the robot's start-up check
                models = {"object": "list", "data": [{"id": "stub", "object": "model", "owned_by": "test"}]}
                await self._send(writer, 200, "application/json", json.dumps(models).encode())
                return
            if self.keep_requests:
                self.requests.append(body)
            behaviour = self.script.pop(0) if self.script else OK
            if behaviour == STALL:
                await asyncio.sleep(3600)
            elif behaviour == BAD_JSON:
                writer.write(b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nConnection: close\r\n\r\n"
                             b"data: {\"id\": \"c1\", \"choices\": [{\"delta\": {\"content\": \"Kyo\n\n")
                await writer.drain()
            elif behaviour == ECHO_KEY:
                message = json.dumps({"error": {"message": f"Incorrect API key provided: {auth}"}})
                await self._send(writer, 401, "application/json", message.encode())
            elif behaviour == SLOW:
                await asyncio.sleep(self.slow_s)
                await self._stream(writer, cut=False)
            elif behaviour == ERROR_500:
                await self._send(writer, 500, "application/json", b'{"error": {"message": "boom"}}')
            else:
                await self._stream(writer, cut=behaviour == CUT)
        except (ConnectionError, asyncio.CancelledError):
            pass
        finally:
            writer.close()

    async def _read_request(self, reader: asyncio.StreamReader) -> tuple[str, dict, str]:
        head = await reader.readuntil(b"\r\n\r\n")
        length, auth = 0, ""
        for line in head.decode().split("\r\n"):
            if line.lower().startswith("content-length:"):
                length = int(line.split(":", 1)[1])
            if line.lower().startswith("authorization:"):
                auth = line.split(":", 1)[1].strip().removeprefix("Bearer ")
        request_line = head.decode().split("\r\n", 1)[0]
        return request_line, (json.loads(await reader.readexactly(length)) if length else {}), auth

    async def _send(self, writer: asyncio.StreamWriter, status: int, ctype: str, body: bytes) -> None:
        writer.write(f"HTTP/1.1 {status} X\r\nContent-Type: {ctype}\r\nContent-Length: {len(body)}\r\n"
                     "Connection: close\r\n\r\n".encode() + body)
        await writer.drain()

    async def _stream(self, writer: asyncio.StreamWriter, cut: bool) -> None:
        writer.write(b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nConnection: close\r\n\r\n")
        words = self.reply.split(" ")
        for i, word in enumerate(words):
            if cut and i == 2:
                return  # the connection dies mid-reply
            chunk = {"id": "c1", "object": "chat.completion.chunk", "created": 0, "model": "stub",
                     "choices": [{"index": 0, "delta": {"content": word + (" " if i < len(words) - 1 else "")},
                                  "finish_reason": "stop" if i == len(words) - 1 else None}]}
            writer.write(f"data: {json.dumps(chunk)}\n\n".encode())
            await writer.drain()
        writer.write(b"data: [DONE]\n\n")
        await writer.drain()


async def _serve(reply: str) -> None:
    async with StubOpenAIServer(reply=reply, keep_requests=False) as server:
        print(server.base_url, flush=True)
        await asyncio.Event().wait()


if __name__ == "__main__":  # a stub LLM in a process of its own: its URL on the first line
    import sys

    asyncio.run(_serve(sys.argv[1] if len(sys.argv) > 1 else StubOpenAIServer.reply))
