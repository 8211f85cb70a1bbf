"""The formatters E2B's code-interpreter template adds to IPython's
(template/startup_scripts/0002_data.py): e2b/data for DataFrames,
application/json for lists and dicts, e2b/chart for figures."""


def _e2b_data(df):
        """E2B code-interpreter's `_repr_e2b_data_` for a DataFrame: to_dict(orient='list'), JSON-safe."""
        import datetime
        import math
        out = {}
        for key, column in df.to_dict(orient="list").items():
                vals = []
                for v in column:
                        if hasattr(v, "item") and not isinstance(v, (str, bytes)):
                                try:
                                        v = v.item()
                                except Exception:
                                        pass
                        if isinstance(v, float) and (math.isnan(v) or math.isinf(v)):
                                # What E2B gets: jupyter_client's packer cleans the
                                # message ('nan', 'inf', '-inf') when JSON refuses it.
                                v = repr(v)
                        elif v is not None and not isinstance(v, (str, int, float, bool)):
                                # Dates and times ISO (E2B's Timestamps, jupyter_client's
                                # datetimes); other values (a Timedelta) as text.
                                v = v.isoformat() if isinstance(v, (datetime.date, datetime.time)) else str(v)
                        vals.append(v)
                out[str(key)] = vals
        return out


def _e2b_json(obj):
        """E2B's application/json formatter for lists and dicts: a JSON round trip
        (numpy values through .tolist()), shown expanded; None (the regular
        _repr_json_ lookup) when the value is not JSON."""
        import json
        try:
                value = json.loads(json.dumps(obj, default=lambda o: o.tolist(), allow_nan=False))
        except ValueError:
                # NaN or an infinity (or a cycle: no JSON, checked below). The
                # warning jupyter_client's packer prints then, with a path into
                # E2B's installation, is not copied (docs/SDK.md).
                try:
                        value = _json_clean(json.loads(json.dumps(obj, default=lambda o: o.tolist())))
                except (TypeError, AttributeError, ValueError, RecursionError):
                        return None
        except (TypeError, AttributeError, RecursionError):
                return None
        return value, {"expanded": True}


def _json_clean(v):
        """jupyter_client's json_clean as its packer applies it when JSON refuses
        a message: NaN and infinities become their repr."""
        if isinstance(v, float):
                return repr(v) if v != v or v in (float("inf"), float("-inf")) else v
        if isinstance(v, list):
                return [_json_clean(x) for x in v]
        if isinstance(v, dict):
                return {k: _json_clean(x) for k, x in v.items()}
        return v


def _figure_chart(fig):
        """E2B's e2b/chart of a figure (cellvm_charts); None, so no entry, when the
        figure has no chart or extraction failed: it never fails the display."""
        try:
                import cellvm_charts
        except Exception:
                return None
        return cellvm_charts.figure_chart(fig)
