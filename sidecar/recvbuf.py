"""One receive buffer per thread for asyncio `BufferedProtocol` reads.

A plain asyncio `Protocol` socket allocates `recv(256 KiB)` per read: above glibc's mmap
threshold, so depending on the allocator's history every read can cost an mmap, an mremap
and an munmap (runs of the sidecar differed by about 2 of each per request, and its CPU per
request with them). A `BufferedProtocol` is handed a buffer to receive into instead. Its
`buffer_updated` copies the bytes out before the event loop reads another socket, so one
buffer per thread (per event loop) serves all connections.
"""

from __future__ import annotations

import threading

SIZE = 65536
_local = threading.local()


def view() -> memoryview:
    """This thread's receive buffer."""
    try:
        return _local.view  # type: ignore[no-any-return]
    except AttributeError:
        buffer = _local.view = memoryview(bytearray(SIZE))
        return buffer


def take(nbytes: int) -> bytes:
    """The first `nbytes` received into this thread's buffer, copied out."""
    return bytes(_local.view[:nbytes])
