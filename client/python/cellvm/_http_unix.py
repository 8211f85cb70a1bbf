"""HTTP/1.1 over a Unix socket: the API of Firecracker and Cloud Hypervisor.

    status, body = request("/tmp/x/api.sock", "PUT", "/snapshot/load", {...})

One request per connection (`Connection: close`); a JSON body in, the
reply's JSON (or text) out. Standard library only.
"""

import http.client
import json
import socket
import time


class ApiError(Exception):
    """The VMM's API did not answer, or answered with an error status."""


class _UnixConnection(http.client.HTTPConnection):
    def __init__(self, path, timeout):
        super().__init__("localhost", timeout=timeout)
        self._path = path

    def connect(self):
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM | socket.SOCK_CLOEXEC)
        sock.settimeout(self.timeout)
        try:
            sock.connect(self._path)
        except BaseException:
            sock.close()
            raise
        self.sock = sock


def request(path, method, url, body=None, timeout=30.0):
    """(status, parsed body) of one API call; ApiError if it cannot be made."""
    conn = _UnixConnection(path, timeout)
    try:
        data = None if body is None else json.dumps(body).encode()
        headers = {"Accept": "application/json", "Connection": "close"}
        if data is not None:
            headers["Content-Type"] = "application/json"
        conn.request(method, url, body=data, headers=headers)
        resp = conn.getresponse()
        raw = resp.read(1 << 20)
        status = resp.status
    except (OSError, http.client.HTTPException) as e:
        raise ApiError(f"{method} {url} on {path}: {e}") from None
    finally:
        conn.close()
    try:
        parsed = json.loads(raw) if raw else None
    except ValueError:
        parsed = raw.decode(errors="replace")
    return status, parsed


def call(path, method, url, body=None, timeout=30.0):
    """request() that raises ApiError, with the VMM's words, on a status >= 300."""
    status, parsed = request(path, method, url, body, timeout)
    if status >= 300:
        words = parsed.get("fault_message") or parsed.get("error") if isinstance(parsed, dict) else parsed
        raise ApiError(f"{method} {url}: HTTP {status}: {words or 'no message'}")
    return parsed


def wait_socket(path, timeout, check=None):
    """Waits until something accepts connections on `path` (the VMM's API is up)."""
    deadline = time.monotonic() + timeout
    while True:
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM | socket.SOCK_CLOEXEC)
        try:
            sock.connect(path)
            return
        except (FileNotFoundError, ConnectionRefusedError):
            pass
        finally:
            sock.close()
        if check is not None:
            check()
        if time.monotonic() >= deadline:
            raise ApiError(f"no API socket at {path} within {timeout} s")
        time.sleep(0.005)
