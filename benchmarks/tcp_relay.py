"""A bare TCP relay: the least an extra process in front of an engine costs.

    python benchmarks/tcp_relay.py PORT UPSTREAM_HOST UPSTREAM_PORT

Each accepted connection gets its own upstream connection; bytes are copied both ways as they
arrive, with no parsing. `bench_engine.py` puts it in front of vLLM's `/v1/completions` to show
what one more hop on loopback adds by itself, beside what the sidecar and vLLM's chat front end
add.
"""

from __future__ import annotations

import asyncio
import sys


async def _pipe(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
    try:
        while data := await reader.read(65536):
            writer.write(data)
            await writer.drain()
    except ConnectionError:
        pass
    finally:
        writer.close()


async def _serve(port: int, host: str, upstream: int) -> None:
    async def relay(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        up_reader, up_writer = await asyncio.open_connection(host, upstream)
        await asyncio.gather(_pipe(reader, up_writer), _pipe(up_reader, writer))

    server = await asyncio.start_server(relay, "127.0.0.1", port)
    async with server:
        await server.serve_forever()


if __name__ == "__main__":
    asyncio.run(_serve(int(sys.argv[1]), sys.argv[2], int(sys.argv[3])))
