"""Plain HTTP for the tests: straight to the address, never through a proxy
the environment names, with an error status returned as any other."""

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
