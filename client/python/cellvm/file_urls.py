"""E2B's download_url() and upload_url(): signed URLs of envd's `/files`,
served by a small HTTP server on this host's loopback, one per Sandbox for as
long as it is open, over the sandbox's own connection (FILE_READ and
FILE_WRITE), as `cellvm serve` serves `/files` for E2B's npm SDK.

The URLs are signed as E2B signs them (e2b/sandbox/signature.py: v1, sha256
of path, operation, user, the sandbox's access token and the expiry) with a
token of the Sandbox's own, so that a URL names one file, one operation and
one user; the server refuses any other (401, envd's words)."""

import base64
import email.parser
import email.policy
import hashlib
import http.server
import json
import logging
import secrets
import threading
import time
import urllib.parse

from . import upload_body
from .exceptions import (InvalidArgumentException, NotEnoughSpaceException, NotFoundException,
                         SandboxException)

logger = logging.getLogger(__name__)


def signature(path, operation, user, token, expiration=None):
    """E2B's v1 signature of a file URL (`user` None: the default user)."""
    raw = f"{path}:{operation}:{user or ''}:{token}"
    if expiration is not None:
        raw += f":{expiration}"
    digest = hashlib.sha256(raw.encode("utf-8")).digest()
    return "v1_" + base64.b64encode(digest).rstrip(b"=").decode("ascii")


class FileServer:
    """http://127.0.0.1:N/files for sandbox `sbx` (its files API)."""

    def __init__(self, sbx):
        self.token = secrets.token_urlsafe(24)
        self._sbx = sbx
        handler = type("Handler", (_Handler,), {"files": self})
        self._httpd = _Server(("127.0.0.1", 0), handler)
        self._httpd.daemon_threads = True
        self.base = f"http://127.0.0.1:{self._httpd.server_address[1]}/files"
        threading.Thread(target=self._httpd.serve_forever, name="cellvm-file-urls",
                         daemon=True).start()

    def url(self, path, operation, user, expiration_s):
        """The signed URL of `operation` ("read", "write") on `path` as `user`."""
        expiration = int(time.time()) + int(expiration_s) if expiration_s is not None else None
        query = {"path": path} if path else {}
        if user:
            query["username"] = user
        query["signature"] = signature(path or "", operation, user, self.token, expiration)
        if expiration is not None:
            query["signature_expiration"] = str(expiration)
        return f"{self.base}?{urllib.parse.urlencode(query, quote_via=urllib.parse.quote)}"

    def close(self):
        self._httpd.shutdown()
        self._httpd.server_close()

    def check(self, query, operation):
        """None when the request's signature holds, else (401, why)."""
        given = query.get("signature")
        expiration = query.get("signature_expiration")
        if not given:
            return 401, "missing signature"
        if expiration is not None:
            if not expiration.isdigit():
                return 400, "signature_expiration: unix seconds"
            if int(expiration) < time.time():
                return 401, "signature is already expired"
        want = signature(query.get("path", ""), operation, query.get("username"), self.token,
                         int(expiration) if expiration is not None else None)
        if not secrets.compare_digest(given, want):
            return 401, "invalid signature"
        return None


class _Server(http.server.ThreadingHTTPServer):
    def handle_error(self, request, client_address):
        # A client that went away mid-request, say: the SDK user's stderr is
        # not this server's log.
        logger.debug("file URL request from %s failed", client_address, exc_info=True)


def _status(e):
    """envd's status for a failed file operation."""
    if isinstance(e, NotFoundException):
        return 404
    if isinstance(e, InvalidArgumentException):
        return 400
    if isinstance(e, NotEnoughSpaceException):
        return 507
    if getattr(e, "code", None) == "permission_denied":
        return 403
    return 500


class _Handler(http.server.BaseHTTPRequestHandler):
    files = None  # the FileServer, set per server
    protocol_version = "HTTP/1.1"

    def log_message(self, *args):
        pass  # no access log on the SDK user's stderr

    def _query(self):
        url = urllib.parse.urlsplit(self.path)
        if url.path != "/files":
            return None
        return {k: v[-1] for k, v in urllib.parse.parse_qs(url.query, keep_blank_values=True).items()}

    def _reply(self, status, body, content_type="application/json"):
        data = body if isinstance(body, bytes) else json.dumps(body).encode()
        self.send_response(status)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def _error(self, status, message):
        self._reply(status, {"code": status, "message": message})

    def _checked(self, operation):
        query = self._query()
        if query is None:
            self._error(404, f"no such route {urllib.parse.urlsplit(self.path).path}")
            return None
        refused = self.files.check(query, operation)
        if refused:
            self._error(*refused)
            return None
        return query

    def do_GET(self):
        query = self._checked("read")
        if query is None:
            return
        if not query.get("path"):
            return self._error(400, "the path query parameter is required")
        fs = self.files._sbx.files
        try:
            chunks = iter(fs.read(query["path"], format="stream", user=query.get("username")))
            first = next(chunks, b"")
        except SandboxException as e:
            return self._error(_status(e), str(e))
        self.send_response(200)
        self.send_header("Content-Type", "application/octet-stream")
        self.send_header("Transfer-Encoding", "chunked")
        self.end_headers()
        try:
            for chunk in _and_rest(first, chunks):
                if chunk:
                    self.wfile.write(b"%x\r\n%s\r\n" % (len(chunk), chunk))
            self.wfile.write(b"0\r\n\r\n")
        except (SandboxException, OSError):
            # A failure mid-file, or a client that went away: the body is cut
            # short, and the read ends in the sandbox too.
            self.close_connection = True
        finally:
            chunks.close()

    def do_POST(self):
        query = self._checked("write")
        if query is None:
            return
        if "chunked" in self.headers.get("Transfer-Encoding", "").lower():
            body = upload_body.Body(self.rfile, chunked=True)
        elif self.headers.get("Content-Length", "").isdigit():
            body = upload_body.Body(self.rfile, int(self.headers["Content-Length"]))
        else:
            self.close_connection = True
            return self._error(411, "an upload needs a Content-Length or a chunked body")
        fs, user, entries = self.files._sbx.files, query.get("username"), []
        try:
            for path, data in _uploads(self.headers.get("Content-Type", ""), body, query.get("path")):
                info = fs.write(path, data, user=user)
                entries.append({"name": info.name, "type": "file", "path": info.path})
        except ValueError as e:
            self.close_connection = True  # the rest of the body is not read
            return self._error(400, str(e))
        except SandboxException as e:
            self.close_connection = True
            return self._error(_status(e), str(e))
        self._reply(200, entries)


def _and_rest(first, chunks):
    yield first
    yield from chunks


def _uploads(ctype, body, path):
    """(path, stream) of each file of an upload, read as it arrives: each
    part of a multipart/form-data body (at the `path` query, else at its
    filename, as cellvm serve's /files), or an octet-stream body whole, at
    `path`. A stream is read to its end before the next is given."""
    if not ctype.startswith("multipart/form-data"):
        if not path:
            raise ValueError("an octet-stream upload needs the path query parameter")
        yield path, body
        return
    boundary = email.parser.BytesHeaderParser(policy=email.policy.HTTP).parsebytes(
        b"Content-Type: " + ctype.encode("latin-1") + b"\r\n\r\n").get_boundary()
    if not boundary:
        raise ValueError("a multipart body without its boundary")
    parts = upload_body.Multipart(body, boundary)
    count = 0
    while (headers := parts.next_part()) is not None:
        dest = path or headers.get_filename()
        if not dest:
            raise ValueError("a file part without a filename and no path query")
        count += 1
        yield dest, parts
    if not count:
        raise ValueError("a multipart body without a file")
