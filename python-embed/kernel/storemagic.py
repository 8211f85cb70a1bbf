"""IPython.extensions.storemagic's counterpart (loaded by default in
ipykernel): %store, variables and aliases kept in the profile's db."""

import os

from .error import UsageError
from .magics import parse_options


class StoreMagics:
        """IPython's StoreMagics, mixed into zmqshell.Shell."""

        def magic_store(self, line):
                """%store [-d NAME] [-z] [-r [NAME...]] [NAME... | NAME >FILE]."""
                opts, args = parse_options(line, "drz")
                args = " ".join(args).split()
                db = self.db
                if "d" in opts:
                        if not args:
                                raise UsageError("You must provide the variable to forget")
                        del db["autorestore/" + args[0]]
                elif "z" in opts:
                        for k in db.keys("autorestore/*"):
                                del db[k]
                elif "r" in opts:
                        self._store_restore(args)
                elif not args:
                        keys = sorted(db.keys("autorestore/*"))
                        size = max(map(len, keys), default=0)
                        print("Stored variables and their in-db values:")
                        for key in keys:
                                print(f"%-{size}s -> %s" % (os.path.basename(key),
                                                            repr(db.get(key, "<unavailable>"))[:50]))
                elif len(args) > 1 and args[1].startswith(">"):
                        self._store_to_file(args[0], args[1])
                else:
                        self._store_names(args)

        def _store_restore(self, args):
                db = self.db
                if not args:
                        for key in db.keys("autorestore/*"):
                                self.user_ns[os.path.basename(key)] = db[key]
                        self.aliases.update(db.get("stored_aliases", {}))
                        self.user_ns["_dh"] = db.get("dhist", [])
                        return
                for arg in args:
                        try:
                                self.user_ns[arg] = db["autorestore/" + arg]
                        except KeyError:
                                stored = db.get("stored_aliases", {})
                                if arg in stored:
                                        self.aliases[arg] = stored[arg]
                                else:
                                        print(f"no stored variable or alias {arg}")

        def _store_to_file(self, name, target):
                path = os.path.expanduser(target.lstrip(">").lstrip())
                with open(path, "a" if target.startswith(">>") else "w", encoding="utf-8") as f:
                        obj = eval(name, self.user_ns)
                        print(f"Writing '{name}' ({obj.__class__.__name__}) to file '{path}'.")
                        if not isinstance(obj, str):
                                from pprint import pprint
                                pprint(obj, f)
                        else:
                                f.write(obj if obj.endswith("\n") else obj + "\n")

        def _store_names(self, args):
                import inspect
                db = self.db
                for arg in args:
                        if arg not in self.user_ns:
                                if arg not in self.aliases:
                                        raise UsageError(f"Unknown variable '{arg}'")
                                stored = db.get("stored_aliases", {})
                                stored[arg] = self.aliases[arg]
                                db["stored_aliases"] = stored
                                print(f"Alias stored: {arg} ({self.aliases[arg]})")
                                return
                        obj = self.user_ns[arg]
                        if getattr(inspect.getmodule(obj), "__name__", "") == "__main__":
                                print(f"Warning:{arg} is {obj}\nProper storage of interactively declared "
                                      "classes (or instances\nof those classes) is not possible! Only "
                                      "instances\nof classes in real modules on file system can be "
                                      "%store'd.\n")
                                return
                        db["autorestore/" + arg] = obj
                        print(f"Stored '{arg}' ({obj.__class__.__name__})")
