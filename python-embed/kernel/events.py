"""IPython.core.events' EventManager (shell.events): callbacks around each cell."""

import functools
import sys

from . import backend_inline
from .backend_inline import _flush_figures_callback


def _is_pyplot_draw(func):
        """pyplot's post_execute callback (install_repl_displayhook): cellvm
        emulates it (_draw_all_first) rather than drawing every figure."""
        plt = sys.modules.get("matplotlib.pyplot")
        return plt is not None and func is getattr(plt, "_draw_all_if_interactive", None)


_EVENTS = ("pre_execute", "pre_run_cell", "post_execute", "post_run_cell", "shell_initialized")


class EventManager:
        """IPython's EventManager (shell.events): callbacks around each cell."""

        __module__ = "IPython.core.events"

        def __init__(self, shell):
                self.shell = shell
                self.callbacks = {n: [] for n in _EVENTS}
                # As in ipykernel: pyplot (imported after IPython there) registered
                # its draw, and the inline backend, once active, its flush.
                plt = sys.modules.get("matplotlib.pyplot")
                if plt is not None and backend_inline._draw_all_first and hasattr(plt, "_draw_all_if_interactive"):
                        self.callbacks["post_execute"].append(plt._draw_all_if_interactive)
                if backend_inline._mpl_activated:
                        self.callbacks["post_execute"].append(_flush_figures_callback)

        def register(self, event, function):
                if not callable(function):
                        raise TypeError("Need a callable, got %r" % function)
                if event not in _EVENTS:
                        raise KeyError(event)
                if function not in self.callbacks[event]:
                        self.callbacks[event].append(self._adapt(event, function))
                        kernel = self.shell.kernel
                        if event in ("post_execute", "post_run_cell") and function is not _flush_figures_callback \
                                        and not _is_pyplot_draw(function):
                                kernel._events_registered()

        @staticmethod
        def _adapt(event, function):
                """IPython's callback_prototype.adapt: pre/post_run_cell callbacks
                taking no argument are still called."""
                if event not in ("pre_run_cell", "post_run_cell"):
                        return function
                import inspect
                try:
                        inspect.signature(function).bind(None)
                        return function
                except TypeError:
                        pass
                except ValueError:
                        return function

                @functools.wraps(function)
                def adapted(*args, **kwargs):
                        return function()
                return adapted

        def unregister(self, event, function):
                if function in self.callbacks[event]:
                        return self.callbacks[event].remove(function)
                for callback in self.callbacks[event]:
                        try:
                                if callback.__wrapped__ is function:
                                        return self.callbacks[event].remove(callback)
                        except AttributeError:
                                pass
                raise ValueError("Function {!r} is not registered as a {} callback".format(function, event))

        def trigger(self, event, *args, **kwargs):
                for func in self.callbacks[event][:]:
                        if event == "post_execute" and _is_pyplot_draw(func):
                                continue
                        try:
                                func(*args, **kwargs)
                        except (Exception, KeyboardInterrupt) as e:
                                print("Error in callback {} (for {}):".format(func, event))
                                self.shell.showtraceback(e)

        def _user_callbacks(self):
                """Whether a cell must go through the events (anything but the
                figure callbacks that cellvm runs on its own)."""
                for event, funcs in self.callbacks.items():
                        for f in funcs:
                                if f is not _flush_figures_callback and not _is_pyplot_draw(f):
                                        return True
                return False
