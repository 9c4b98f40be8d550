"""The fork server's request reader: whole lines however the pipe delivers them."""

from __future__ import annotations

import os
import threading

from buildtool.isolation.forkserver import _Requests


def test_lines_split_and_joined_across_writes_then_end_of_file() -> None:
    read_end, write_end = os.pipe()
    try:
        os.write(write_end, b'{"a": 1}\n{"b"')
        requests = _Requests(read_end)
        assert requests.next() == b'{"a": 1}\n'
        os.write(write_end, b': 2}\n{"c": 3}\n')
        assert requests.next() == b'{"b": 2}\n'
        assert requests.next() == b'{"c": 3}\n'
        os.write(write_end, b"unfinished")
        os.close(write_end)
        write_end = -1
        assert requests.next() == b""  # end of file: a line without its newline is no request
    finally:
        os.close(read_end)
        if write_end != -1:
            os.close(write_end)


def test_a_request_larger_than_a_pipe_buffer_arrives_whole() -> None:
    read_end, write_end = os.pipe()
    line = b'{"env": "' + b"x" * 300_000 + b'"}\n'

    def write() -> None:
        os.write(write_end, line)  # blocks until the reader has taken most of it
        os.close(write_end)

    writer = threading.Thread(target=write)
    writer.start()
    try:
        assert _Requests(read_end).next() == line
    finally:
        writer.join()
        os.close(read_end)
