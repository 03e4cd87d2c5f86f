"""The relay: how the tasks of one gang job swap their outboxes between rounds.

A resident batch runs all its rounds inside one Spark barrier stage (``resident.py``): Spark
starts every task of it together, and between rounds each task must see every other task's
outbox. ``BarrierTaskContext.allGather`` does exactly that, but it polls its answer once a
second: a deletion's ten rounds would cost ten seconds, against 0.25 s for a job. So the
driver runs this relay instead, as distributed trainers on Spark run their trackers: a TCP
server that, for each round, waits for one frame from every task of the gang and sends each
task the others' frames. It never unpickles what it relays (the frames are opaque bytes), and
it admits only connections that present the job's random secret.

It binds to 127.0.0.1 in local mode; on a cluster, to the driver's own address, which the
executors already reach. A gang whose task drops out is broken: its other tasks get an error,
and Spark reruns the whole stage, whose tasks then form a new gang.
"""

from __future__ import annotations

import contextlib
import hmac
import os
import socket
import struct
import threading
from dataclasses import dataclass, field

__all__ = ["Relay", "Link", "Ticket"]

_HELLO = struct.Struct("!16s16sIQI")  # secret, gang, task index, task attempt id, tasks
_SIZE = struct.Struct("!Q")
_DONE = (1 << 64) - 1  # a frame length that means: this task has finished its rounds
_FAIL = (1 << 64) - 2  # ... this task failed; the frame that follows says why


@dataclass(frozen=True)
class Ticket:
    """What a task needs to join its gang: picklable, shipped in the job's closure."""

    host: str
    port: int
    secret: bytes
    gang: bytes
    tasks: int


class Broken(Exception):
    """A task of the gang dropped out before the gang finished."""


@dataclass
class _Gang:
    tasks: int
    ids: dict[int, int] = field(default_factory=dict)  # task index -> task attempt id
    rounds: dict[int, dict[int, bytes]] = field(default_factory=dict)
    served: dict[int, int] = field(default_factory=dict)
    at: dict[int, int] = field(default_factory=dict)  # task index -> its next round
    broken: bool = False
    error: str = ""  # why a task that failed failed
    cond: threading.Condition = field(default_factory=threading.Condition)

    def admits(self, index: int, attempt: int) -> bool:
        """A task of the same stage attempt: its index is free and its attempt id is near
        the others' (Spark launches a barrier stage's tasks together, with consecutive ids)."""
        return (not self.broken and index not in self.ids
                and all(abs(attempt - a) < self.tasks for a in self.ids.values()))

    def swap(self, index: int, blob: bytes) -> list[bytes]:
        with self.cond:
            r = self.at.get(index, 0)
            self.at[index] = r + 1
            slot = self.rounds.setdefault(r, {})
            slot[index] = blob
            self.cond.notify_all()
            while len(slot) < self.tasks and not self.broken:
                self.cond.wait()
            if self.broken:
                raise Broken(self.error)
            others = [slot[t] for t in sorted(slot) if t != index]
            self.served[r] = self.served.get(r, 0) + 1
            if self.served[r] == self.tasks:
                del self.rounds[r], self.served[r]
            return others

    def break_(self, error: str = "") -> None:
        with self.cond:
            self.broken = True
            self.error = self.error or error
            self.cond.notify_all()


class Relay:
    """The driver's side: one per driver address (``resident._relay``), serving every gang
    job of every engine; each job's gang has its own id."""

    def __init__(self, host: str = "127.0.0.1") -> None:
        self.secret = os.urandom(16)
        self._sock = socket.create_server((host, 0))
        self.host, self.port = host, self._sock.getsockname()[1]
        self._gangs: dict[bytes, list[_Gang]] = {}
        self._lock = threading.Lock()
        threading.Thread(target=self._accept, name="netrules-relay", daemon=True).start()

    def ticket(self, tasks: int) -> Ticket:
        """A new gang of ``tasks`` tasks (one per job)."""
        return Ticket(self.host, self.port, self.secret, os.urandom(16), tasks)

    def forget(self, ticket: Ticket) -> None:
        """Drop a finished job's gangs."""
        with self._lock:
            for gang in self._gangs.pop(ticket.gang, []):
                gang.break_()

    def close(self) -> None:
        with contextlib.suppress(OSError):
            self._sock.close()

    def _accept(self) -> None:
        while True:
            try:
                conn, _ = self._sock.accept()
            except OSError:
                return
            threading.Thread(target=self._serve, args=(conn,), daemon=True).start()

    def _join(self, gang_id: bytes, index: int, attempt: int, tasks: int) -> _Gang:
        with self._lock:
            gangs = self._gangs.setdefault(gang_id, [])
            if gangs and gangs[-1].ids and attempt + tasks <= min(gangs[-1].ids.values()):
                late = _Gang(tasks)  # a task of an attempt already rerun: it joins nothing
                late.broken = True
                return late
            if gangs and gangs[-1].admits(index, attempt):
                gang = gangs[-1]
            else:  # a rerun of the stage: the gang before it is over
                for old in gangs:
                    old.break_()
                gang = _Gang(tasks)
                gangs.append(gang)
            gang.ids[index] = attempt
            return gang

    def _serve(self, conn: socket.socket) -> None:
        gang = None
        with conn:
            conn.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            try:
                secret, gang_id, index, attempt, tasks = _HELLO.unpack(
                    _read(conn, _HELLO.size))
                if not hmac.compare_digest(secret, self.secret):
                    return
                gang = self._join(gang_id, index, attempt, tasks)
                while True:
                    (size,) = _SIZE.unpack(_read(conn, _SIZE.size))
                    if size == _DONE:
                        return
                    if size == _FAIL:
                        (size,) = _SIZE.unpack(_read(conn, _SIZE.size))
                        gang.break_(_read(conn, min(size, 1 << 16)).decode(errors="replace"))
                        return
                    others = gang.swap(index, _read(conn, size))
                    _send(conn, others)
            except Broken as err:  # tell the task why, so every task's failure says it
                if gang is not None:
                    gang.break_()
                with contextlib.suppress(OSError):
                    why = str(err).encode()
                    conn.sendall(_SIZE.pack(_FAIL) + _SIZE.pack(len(why)) + why)
            except (OSError, struct.error):
                if gang is not None:
                    gang.break_()


class Link:
    """A task's side: join the gang, then swap one frame per round."""

    def __init__(self, ticket: Ticket, index: int, attempt: int) -> None:
        self.alone = ticket.tasks == 1
        if self.alone:
            return
        self._conn = socket.create_connection((ticket.host, ticket.port))
        self._conn.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self._conn.sendall(_HELLO.pack(ticket.secret, ticket.gang, index, attempt,
                                       ticket.tasks))

    def swap(self, blob: bytes) -> list[bytes]:
        """Send this task's frame; return the other tasks' frames of the same round, in
        task order."""
        if self.alone:
            return []
        self._conn.sendall(_SIZE.pack(len(blob)))
        self._conn.sendall(blob)
        (count,) = _SIZE.unpack(_read(self._conn, _SIZE.size))
        if count == _FAIL:
            (size,) = _SIZE.unpack(_read(self._conn, _SIZE.size))
            why = _read(self._conn, size).decode(errors="replace")
            raise Broken(f"another task of the gang failed: {why}" if why
                         else "another task of the gang dropped out")
        out = []
        for _ in range(count):
            (size,) = _SIZE.unpack(_read(self._conn, _SIZE.size))
            out.append(_read(self._conn, size))
        return out

    def close(self, error: BaseException | None = None) -> None:
        """Leave the gang; a task that failed with ``error`` breaks it, and the others fail
        saying why (Spark reports whichever task failed first)."""
        if self.alone:
            return
        with contextlib.suppress(OSError):
            if error is None:
                self._conn.sendall(_SIZE.pack(_DONE))
            elif not isinstance(error, Broken):
                why = f"{type(error).__module__}.{type(error).__qualname__}: {error}".encode()
                self._conn.sendall(_SIZE.pack(_FAIL) + _SIZE.pack(len(why)) + why)
            self._conn.close()


def _send(conn: socket.socket, frames: list[bytes]) -> None:
    conn.sendall(_SIZE.pack(len(frames)))
    for frame in frames:
        conn.sendall(_SIZE.pack(len(frame)))
        conn.sendall(frame)


def _read(conn: socket.socket, n: int) -> bytes:
    buf = bytearray(n)
    view, got = memoryview(buf), 0
    while got < n:
        k = conn.recv_into(view[got:])
        if not k:
            raise Broken("connection closed")
        got += k
    return bytes(buf)
