"""A server on 127.0.0.1 that answers as the test says: for the tests of what a client makes of a
server's answers (odd bodies, HTML pages, a trickle), which no real model server gives on demand."""

from __future__ import annotations

import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


class AnsweringServer:
    """Serves in a daemon thread until the ``with`` block ends. Subclasses answer in
    :meth:`answer_get` and :meth:`answer_post` through ``handler.send``; ``url`` is the
    ``/v1`` base URL (with ``userinfo@`` before the host when given)."""

    def __init__(self, userinfo: str = ""):
        owner = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args):
                pass

            def send(self, body: bytes, content_type: str = "application/json", trickle: bool = False) -> None:
                """``body`` whole, or one byte every 0.5 s when ``trickle``."""
                self.send_response(200)
                self.send_header("Content-Type", content_type)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                step = 1 if trickle else len(body)
                for i in range(0, len(body), step):
                    self.wfile.write(body[i:i + step])
                    self.wfile.flush()
                    if trickle:
                        time.sleep(0.5)

            def do_GET(self):
                owner.answer_get(self)

            def do_POST(self):
                self.rfile.read(int(self.headers.get("Content-Length") or 0))
                owner.answer_post(self)

        class Server(ThreadingHTTPServer):
            daemon_threads = True

            def handle_error(self, request, client_address):  # the client hung up past its bound, as it should
                if not isinstance(sys.exc_info()[1], (BrokenPipeError, ConnectionResetError)):
                    super().handle_error(request, client_address)

        self.server = Server(("127.0.0.1", 0), Handler)
        self.url = f"http://{userinfo + '@' if userinfo else ''}127.0.0.1:{self.server.server_address[1]}/v1"
        threading.Thread(target=self.server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True).start()

    def answer_get(self, handler) -> None:
        raise NotImplementedError

    def answer_post(self, handler) -> None:
        raise NotImplementedError

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.server.shutdown()
        self.server.server_close()
