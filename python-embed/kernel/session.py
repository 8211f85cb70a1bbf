"""Messages to the agent (docs/PROTOCOL.md section 8), as jupyter_client's
Session sends ipykernel's: their types, the request and context they belong
to, and sending one after all the output written before it."""

import errno

import _cellvm

from .iostream import _flush_std


# Internal message types (docs/PROTOCOL.md section 8) and client types.
Z_READY = 0x4001
X_READY = 0x4010
X_EXECUTE = 0x4011
X_END = 0x4012
EXEC_INPUT = 0x8010
DISPLAY = 0x8012
RESULT = 0x8013
EXEC_ERROR = 0x8014


# Longest wait for the agent to read output written before a message.
OUTPUT_DRAIN_TIMEOUT = 0.05


def _send(mtype, body, defer=False):
        """Sends one message after all output written before it (defer: in one
        write with the next message; only when no output can come in between,
        so the next message's flush and drain cover this one's too)."""
        if not defer:
                _flush_std()
                _cellvm.wait_output_drained(OUTPUT_DRAIN_TIMEOUT)
        try:
                _cellvm.send(_state.fd, mtype, _state.req_id, body, defer)
        except (OSError, ValueError) as e:
                # A figure's chart (every point of every line) can make the message
                # larger than the wire allows: the figure then goes without it, as
                # when extraction fails. JSON nested deeper than the wire allows
                # (a list in a list ... 50 deep) goes without its application/json:
                # its text/plain still shows. Nothing was written (encoding failed first).
                drop = "application/json" if isinstance(e, ValueError) else "e2b/chart"
                data = body.get("data")
                if (isinstance(e, OSError) and e.errno != errno.EMSGSIZE) or \
                                not isinstance(data, dict) or drop not in data:
                        raise
                body = dict(body, data={k: v for k, v in data.items() if k != drop})
                md = body.pop("metadata", None)
                if isinstance(md, dict):
                        md = {k: v for k, v in md.items() if k != drop}
                if md:
                        body["metadata"] = md
                _cellvm.send(_state.fd, mtype, _state.req_id, body, defer)


class _State:
        fd = -1
        req_id = 0
        kernel = None


_state = _State()
