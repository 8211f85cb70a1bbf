"""Plain HTTP for the tests: straight to the address, never through a proxy
the environment names, with an error status returned as any other."""

import time
import urllib.error
import urllib.request

DIRECT = urllib.request.build_opener(urllib.request.ProxyHandler({}))


def request(url, data=None, headers=None, method=None, timeout=120):
    """(status, body bytes) of one request."""
    req = urllib.request.Request(url, data=data, headers=headers or {}, method=method)
    try:
        with DIRECT.open(req, timeout=timeout) as r:
            return r.status, r.read()
    except urllib.error.HTTPError as e:
        return e.code, e.read()


def request_once_up(url, deadline_s=60, **kw):
    """request(url, **kw) once something listens there (a server just
    started in a sandbox), retried while the connection fails."""
    deadline = time.monotonic() + deadline_s
    while True:
        try:
            return request(url, **kw)
        except OSError:
            assert time.monotonic() < deadline, f"nothing answered at {url}"
            time.sleep(0.5)
