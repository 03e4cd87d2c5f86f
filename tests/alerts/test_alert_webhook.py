"""The webhook against a real HTTP server on 127.0.0.1 (in a thread, stopped after each test)."""

from __future__ import annotations

import json
import logging
import socket
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from netrules.alerts import Alert, WebhookNotifier, post_alerts


class Receiver:
    def __init__(self, status: int) -> None:
        self.status = status
        self.bodies: list[dict] = []
        self.headers: list[dict] = []


@pytest.fixture
def receiver(request: pytest.FixtureRequest) -> Iterator[tuple[str, Receiver]]:
    rec = Receiver(getattr(request, "param", 200))

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:  # noqa: N802 (http.server's naming)
            n = int(self.headers["Content-Length"])
            rec.bodies.append(json.loads(self.rfile.read(n)))
            rec.headers.append(dict(self.headers))
            self.send_response(rec.status)
            self.end_headers()

        def log_message(self, *args: object) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/hook", rec
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=5)


ALERT = Alert(kind="route_lost", severity="major", message="route lost: a has no bestPath to c",
              dedup_key="route_lost:bestPath:a:c", subject={"src": "a", "dst": "c"},
              raised_batch=3, raised_time=30.0)


def test_posts_raised_and_cleared(receiver: tuple[str, Receiver]) -> None:
    url, rec = receiver
    assert post_alerts(url, [ALERT], ["routing_loop:loop:a"], batch_id=3) is True
    (body,) = rec.bodies
    assert body["batch_id"] == 3 and body["cleared"] == ["routing_loop:loop:a"]
    assert Alert.from_json(body["raised"][0]) == ALERT
    assert rec.headers[0]["Content-Type"] == "application/json"
    assert WebhookNotifier(url)([], ["x"]) is True and len(rec.bodies) == 2
    assert post_alerts(url, [], []) is True and len(rec.bodies) == 2  # nothing to send


@pytest.mark.parametrize("receiver", [500], indirect=True)
def test_http_error_logged_not_raised(receiver: tuple[str, Receiver],
                                      caplog: pytest.LogCaptureFixture) -> None:
    url, rec = receiver
    with caplog.at_level(logging.WARNING, logger="netrules.alerts.webhook"):
        assert post_alerts(url, [ALERT], []) is False
    assert len(rec.bodies) == 1 and "500" in caplog.text


def test_unreachable_logged_not_raised(caplog: pytest.LogCaptureFixture) -> None:
    with socket.socket() as s:  # a port nobody listens on
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    with caplog.at_level(logging.WARNING, logger="netrules.alerts.webhook"):
        assert post_alerts(f"http://127.0.0.1:{port}/", [ALERT], [], timeout=1.0) is False
        assert post_alerts("not a url", [ALERT], []) is False
    assert caplog.text.count("failed") == 2
