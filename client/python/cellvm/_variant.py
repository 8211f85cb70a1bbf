"""E2B's class_method_variant (e2b/sandbox/utils.py): one name that acts on
an instance, or on a sandbox id when called on the class."""

import types


class class_or_instance:
    """E2B's class_method_variant: `sbx.kill()` acts on that sandbox,
    `Sandbox.kill(sandbox_id)` on the sandbox with that id (the classmethod
    named `cls_impl`)."""

    def __init__(self, cls_impl):
        self._cls_impl = cls_impl

    def __call__(self, fn):
        self._fn = fn
        self.__doc__ = fn.__doc__
        self.__name__ = fn.__name__
        return self

    def __get__(self, obj, objtype=None):
        if obj is None:
            return getattr(objtype, self._cls_impl)
        return types.MethodType(self._fn, obj)
