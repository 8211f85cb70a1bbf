"""The formatters E2B's code-interpreter template adds to IPython's
(template/startup_scripts/0002_data.py): e2b/data for DataFrames,
application/json for lists and dicts, e2b/chart for figures."""


import sys


def _e2b_data(df):
        """E2B code-interpreter's `_repr_e2b_data_` for a DataFrame: to_dict(orient='list'), JSON-safe."""
        return {str(key): [v if type(v) in _PLAIN else _data_value(v, 0) for v in column]
                for key, column in df.to_dict(orient="list").items()}


_PLAIN = frozenset({str, int, bool, type(None)})  # sent as they are


def _data_value(v, depth):
        """A DataFrame cell as E2B's JSON carries it."""
        if hasattr(v, "item") and not isinstance(v, (str, bytes)):
                try:
                        v = v.item()
                except Exception:
                        pass
        if isinstance(v, float) and (v != v or v in (_INF, -_INF)):
                # What E2B gets: jupyter_client's packer cleans the message
                # ('nan', 'inf', '-inf') when JSON refuses it.
                return repr(v)
        if v is None or isinstance(v, (str, int, float, bool)):
                return v
        if isinstance(v, (list, tuple, dict)) and depth < 32:
                # Lists and dicts in cells (a groupby's .agg(list)) stay JSON's.
                if isinstance(v, dict):
                        return {str(k): _data_value(x, depth + 1) for k, x in v.items()}
                return [_data_value(x, depth + 1) for x in v]
        # Dates and times ISO (E2B's Timestamps, jupyter_client's datetimes);
        # other values (a Timedelta, where E2B's message fails) as text.
        dt = sys.modules.get("datetime")  # pandas has imported it
        return v.isoformat() if dt is not None and isinstance(v, (dt.date, dt.time)) else str(v)


def _e2b_json(obj):
        """E2B's application/json formatter for lists and dicts: an orjson round
        trip (OPT_SERIALIZE_NUMPY, OPT_NON_STR_KEYS), shown expanded; None
        (the regular _repr_json_ lookup) when orjson refuses the value."""
        try:
                return _orjson_value(obj, 0), {"expanded": True}
        except (TypeError, RecursionError):
                return None


# What orjson.loads(orjson.dumps(v, option=OPT_SERIALIZE_NUMPY | OPT_NON_STR_KEYS))
# gives, as orjson documents its types (Debian has no orjson): NaN and
# infinities null, dates and times ISO, enums their value, dataclasses and
# UUIDs, subclasses of str, int, list and dict but not of tuple or float,
# integers within 64 bits, numpy arrays and scalars. TypeError otherwise.
_ORJSON_MAX_DEPTH = 254


def _orjson_value(v, depth):
        t = type(v)
        if t is str or v is None or t is bool:
                return v
        if t is int:
                if -(1 << 63) <= v < (1 << 64):
                        return v
                raise TypeError("Integer exceeds 64-bit range")
        if t is float:
                return v if v == v and v not in (_INF, -_INF) else None
        if depth >= _ORJSON_MAX_DEPTH:
                raise TypeError("Recursion limit reached")
        if t is tuple or isinstance(v, list):  # a list's subclass too, not a tuple's
                return [_orjson_value(x, depth + 1) for x in v]
        if isinstance(v, dict):
                return {_orjson_key(k): _orjson_value(x, depth + 1) for k, x in v.items()}
        import datetime
        if t in (datetime.datetime, datetime.date, datetime.time):
                return v.isoformat()
        import enum
        if isinstance(v, enum.Enum):
                return _orjson_value(v.value, depth + 1)
        if isinstance(v, str):
                return str(v)
        if isinstance(v, int):
                return _orjson_value(int(v), depth)
        np = sys.modules.get("numpy")
        if np is not None and isinstance(v, (np.ndarray, np.generic)):
                if v.dtype.kind not in "biuf" and v.dtype.kind != "M":
                        raise TypeError(f"Type is not JSON serializable: {t.__name__}")
                return _orjson_value(v.tolist(), depth) if v.dtype.kind != "M" else \
                        _orjson_value(v.astype("datetime64[us]").astype(object).tolist(), depth)
        import dataclasses
        if dataclasses.is_dataclass(v) and not isinstance(v, type):
                return {f.name: _orjson_value(getattr(v, f.name), depth + 1) for f in dataclasses.fields(v)}
        import uuid
        if t is uuid.UUID:
                return str(v)
        raise TypeError(f"Type is not JSON serializable: {t.__name__}")


_INF = float("inf")


def _orjson_key(k):
        """A dict key as OPT_NON_STR_KEYS writes it."""
        t = type(k)
        if t is str:
                return k
        if k is None:
                return "null"
        if t is bool:
                return "true" if k else "false"
        if t is float:
                return repr(k) if k == k and k not in (_INF, -_INF) else "null"
        value = _orjson_value(k, 0)
        if isinstance(value, (dict, list)):
                raise TypeError("Dict key must a type serializable with OPT_NON_STR_KEYS")
        return value if isinstance(value, str) else str(value)


def _json_clean(v, depth=0):
        """jupyter_client's json_clean as its packer applies it when JSON refuses
        a message: NaN and infinities become their repr. (Deeper than the wire
        carries, a value is left as it is.)"""
        if isinstance(v, float):
                return repr(v) if v != v or v in (_INF, -_INF) else v
        if depth > 64:
                return v
        if isinstance(v, list):
                return [_json_clean(x, depth + 1) for x in v]
        if isinstance(v, dict):
                return {k: _json_clean(x, depth + 1) for k, x in v.items()}
        return v


def _figure_chart(fig):
        """E2B's e2b/chart of a figure (cellvm_charts): {} when the figure has no
        chart or extraction failed, as E2B's formatter gives; None (no entry)
        only without cellvm_charts. It never fails the display."""
        try:
                import cellvm_charts
        except Exception:
                return None
        return cellvm_charts.figure_chart(fig)
