"""IPython.core.display_functions' counterpart: display(),
publish_display_data() and clear_output(), publishing DISPLAY messages; and
E2B's PIL hook (template/startup_scripts/0003_images.py)."""

from .foreign_frames import as_if_in
from .formatters import format_bundle
from .iostream import _flush_std
from .session import DISPLAY, _send


_capturing = []  # the output lists of running %%capture cells, innermost last


def publish_display_data(data, metadata=None, **_ignored):
        body = {"data": dict(data)}
        if metadata:
                body["metadata"] = dict(metadata)
        if _capturing:
                _capturing[-1].append(body)
                return
        _send(DISPLAY, body)


def display(*objs, include=None, exclude=None, metadata=None, transient=None, display_id=None,
            raw=False, clear=False, **kwargs):
        """IPython.display.display, publishing DISPLAY messages."""
        if not objs and display_id is None:
                return None
        if display_id is True:
                import uuid
                display_id = uuid.uuid4().hex
        if kwargs.get("update"):
                # update_display_data: E2B's server drops it and the protocol has no
                # such message, so an update shows nothing.
                return None
        if not objs and display_id:
                # IPython's: an empty output, to be updated later (an empty result).
                objs, raw = [{}], True
        for obj in objs:
                if raw:
                        publish_display_data(obj, metadata=metadata)
                        continue
                data, md = format_bundle(obj, include=include, exclude=exclude)
                if not data:
                        continue
                if metadata:
                        md.update(metadata)
                publish_display_data(data, md)
        return DisplayHandle(display_id) if display_id else None


class DisplayHandle:
        """IPython's DisplayHandle, returned by display(..., display_id=...)."""

        def __init__(self, display_id=None):
                if display_id is None:
                        import uuid
                        display_id = uuid.uuid4().hex
                self.display_id = display_id

        def __repr__(self):
                return f"<{type(self).__name__} display_id={self.display_id}>"

        def display(self, obj, **kwargs):
                display(obj, display_id=self.display_id, **kwargs)

        def update(self, obj, **kwargs):
                display(obj, display_id=self.display_id, update=True, **kwargs)


# E2B's startup file that patches PIL, and its save (a failing save, such as
# savefig to a missing directory, shows that frame between matplotlib's and
# PIL's, at its file and line in E2B's template). E2B's kernel runs as root,
# whose HOME IPython writes as ~ in a traceback.
_E2B_IMAGES_PY = "~/.ipython/profile_default/startup/0003_images.py"
original_save = None  # each patched save has the real one in its own globals (as_if_in)


def _e2b_save(image, fp, format=None, **options):
        isinstance(fp, str) and display(image); original_save(image, fp, format, **options)  # noqa: E702


def _on_pil_image_import(pil_image):
        """E2B's template (startup_scripts/0003_images.py): Image.show() displays
        the image instead of starting a viewer, and Image.save() to a path given
        as a str also displays it (before saving, as E2B does). matplotlib
        saves PNG and JPEG through it: savefig('x.png') shows the saved image
        there too."""
        cls = pil_image.Image
        if getattr(cls.save, "_cellvm_displays", False):
                return  # already patched (zygote, then again in the executor)
        real_save = cls.save
        save = as_if_in(_e2b_save, "__main__", _E2B_IMAGES_PY, 32, qualname="save",
                        display=display, original_save=real_save)

        def show(self, title=None):
                display(self)

        # E2B's save is a function of its own (help() and its signature show
        # it); its show, a viewer's, is not seen from Image.
        show.__name__, show.__qualname__, show.__doc__ = cls.show.__name__, cls.show.__qualname__, cls.show.__doc__
        show.__wrapped__ = cls.show
        save._cellvm_displays = show._cellvm_displays = True
        cls.save = save
        cls.show = show


def clear_output(wait=False):
        """IPython.display.clear_output: ipykernel flushes the streams and sends
        clear_output, which E2B's server drops (the protocol has no such
        message). IPython's own, outside a kernel, would print escape codes."""
        _flush_std()


# Named as IPython's (the module maps them to these): a cell shows `display`
# as <function IPython.core.display_functions.display(*objs, ...)>.
display.__module__ = clear_output.__module__ = "IPython.core.display_functions"


def _on_ipython_display_import(mod):
        # Route IPython.display.display & co. to our DISPLAY messages.
        mod.display = display
        mod.publish_display_data = publish_display_data
        mod.clear_output = clear_output
