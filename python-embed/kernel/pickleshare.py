"""pickleshare's counterpart: PickleShareDB, IPython's shell.db (a directory
of the profile, one pickle a key), where %bookmark, %store and %cd's history
persist across kernels and sessions."""

import os
import pickle


def _root():
        base = os.environ.get("IPYTHONDIR") or os.path.join(os.path.expanduser("~"), ".ipython")
        return os.path.join(base, "profile_default", "db")


class PickleShareDB:
        """db[key], db.get, del db[key] (quiet when missing), db.keys(glob). Keys a write could not
        reach (no writable home) are kept in memory, as IPython then keeps its
        profile in a temporary directory."""

        def __init__(self):
                self.root = _root()
                self._memory = {}

        def __getitem__(self, key):
                if key in self._memory:
                        return self._memory[key]
                try:
                        with open(os.path.join(self.root, key), "rb") as f:
                                return pickle.load(f)
                except (OSError, EOFError, pickle.UnpicklingError):
                        raise KeyError(key) from None

        def get(self, key, default=None):
                try:
                        return self[key]
                except KeyError:
                        return default

        def __setitem__(self, key, value):
                path = os.path.join(self.root, key)
                try:
                        os.makedirs(os.path.dirname(path), exist_ok=True)
                        with open(path, "wb") as f:
                                pickle.dump(value, f, protocol=2)
                except OSError:
                        self._memory[key] = value
                else:
                        self._memory.pop(key, None)

        def __delitem__(self, key):
                if key in self._memory:
                        del self._memory[key]
                        return
                try:
                        os.remove(os.path.join(self.root, key))
                except OSError:  # pickleshare's: a missing key is no error
                        pass

        def keys(self, globpat=None):
                import glob
                files = glob.glob(os.path.join(self.root, globpat or "**/*"), recursive=globpat is None)
                keys = {os.path.relpath(p, self.root) for p in files if os.path.isfile(p)}
                keys.update(k for k in self._memory if globpat is None or _fnmatch(k, globpat))
                return list(keys)


def _fnmatch(key, pattern):
        import fnmatch
        return fnmatch.fnmatchcase(key, pattern)
