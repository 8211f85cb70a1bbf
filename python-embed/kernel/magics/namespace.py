"""IPython.core.magics.namespace's counterpart: the user's names (%who,
%whos, %reset, %xdel) and objects (%pdef, %pdoc, %psource)."""

import builtins
import gc
import os
import re
import sys

from ..error import UsageError
from . import find_py_file, parse_options
from .code import _source_file_and_line
from .osm import _ALIASES


_NOT_HIDDEN = object()


def _render_signature(sig, name):
        """IPython's _render_signature: one line, or one parameter a line past 75
        characters."""
        import inspect
        result = []
        pos_only = False
        kw_only = True
        for param in sig.parameters.values():
                if param.kind == inspect.Parameter.POSITIONAL_ONLY:
                        pos_only = True
                elif pos_only:
                        result.append("/")
                        pos_only = False
                if param.kind == inspect.Parameter.VAR_POSITIONAL:
                        kw_only = False
                elif param.kind == inspect.Parameter.KEYWORD_ONLY and kw_only:
                        result.append("*")
                        kw_only = False
                result.append(str(param))
        if pos_only:
                result.append("/")
        if len(name) + sum(len(r) + 2 for r in result) > 75:
                rendered = "{}(\n{})".format(name, "".join("    {},\n".format(r) for r in result))
        else:
                rendered = "{}({})".format(name, ", ".join(result))
        if sig.return_annotation is not inspect.Signature.empty:
                rendered += " -> {}".format(inspect.formatannotation(sig.return_annotation))
        return rendered


def _getattr_property(obj, name):
        """IPython's _getattr_property: a property of obj's class unevaluated
        (it may raise or have effects), else getattr."""
        if not isinstance(obj, type):
                attr = getattr(type(obj), name, None)
                if isinstance(attr, property):
                        return attr
        return getattr(obj, name)


class NamespaceMagics:
        """IPython's NamespaceMagics (IPython.core.magics.namespace), mixed into zmqshell.Shell."""

        def magic_reset_selective(self, line):
                """IPython's %reset_selective [-f] REGEX: the user's names (%who_ls)
                matching it go. Without -f it asks (ask_yes_no), whose input()
                fails under ipykernel: it goes on as with -f."""
                regex = " ".join(parse_options(line, "f")[1])
                if not regex:
                        print("No regex pattern specified. Nothing done.")
                        return
                m = re.compile(regex)
                for name in self.magic_who_ls(""):
                        if m.search(name):
                                del self.user_ns[name]

        def _find_object(self, oname):
                """IPython's _ofind: a dotted name in the user's namespace, then the
                builtins (the first whose every part resolves), else a magic
                (`%name`, `%%name`, or `name` as a line then a cell magic);
                (found, obj). (IPython's last case, empty literals such as '',
                cannot be reached: its identifier check refuses them first.)"""
                oname = oname.strip()
                parts = oname.split(".")
                if not oname.startswith("%") and not all(p.isidentifier() for p in parts):
                        return False, None
                for ns in (self.user_ns, builtins.__dict__):
                        if parts[0] not in ns:
                                continue
                        obj = ns[parts[0]]
                        try:
                                for i, attr in enumerate(parts[1:], 2):
                                        obj = _getattr_property(obj, attr) if i == len(parts) \
                                                else getattr(obj, attr)
                        except Exception:  # noqa: BLE001 - IPython's bare except
                                continue
                        return True, obj
                if oname.startswith("%%"):
                        obj = self.find_cell_magic(oname.lstrip("%"))
                elif oname.startswith("%"):
                        obj = self.find_line_magic(oname.lstrip("%"))
                else:  # `run?` finds %run
                        obj = self.find_line_magic(oname) or self.find_cell_magic(oname)
                return (True, obj) if obj is not None else (False, None)

        def magic_pdef(self, line):
                """IPython's %pdef: the call signature, printed."""
                import inspect
                found, obj = self._find_object(line.strip())
                if not found:
                        print(f"Object `{line.strip()}` not found.")
                        return
                if not callable(obj):
                        print("Object is not callable.")
                        return
                header = "Class constructor information:\n" if inspect.isclass(obj) else ""
                try:
                        hdef = _render_signature(inspect.signature(obj), line.strip())
                except Exception:
                        print(f"No definition header found for {line.strip()}")
                        return
                print(header, hdef + "\n", end=" ")

        def magic_pdoc(self, line):
                """IPython's %pdoc: the docstring goes to the pager (a payload E2B
                drops): only a miss is printed."""
                import inspect
                found, obj = self._find_object(line.strip())
                if not found:
                        print(f"Object `{line.strip()}` not found.")
                elif inspect.getdoc(obj) is None and not callable(obj):
                        print(f"No documentation found for {line.strip()}")

        def magic_psource(self, line):
                """IPython's %psource: the source goes to the pager (a payload E2B drops)."""
                import inspect
                if not line.strip():
                        raise UsageError("Missing object name.")
                found, obj = self._find_object(line.strip())
                if not found:
                        print(f"Object `{line.strip()}` not found.")
                        return
                try:
                        inspect.getsource(obj)
                except Exception:
                        print(f"No source found for {line.strip()}")

        def magic_pfile(self, line):
                """IPython's %pfile: the file an object (or a file name) comes from goes
                to the pager (a payload E2B drops): only what it prints shows."""
                oname = line.strip()
                found, obj = self._find_object(oname)
                if not found:
                        print(f"Object `{oname}` not found.")
                        if find_py_file(line) is None:
                                print("File `%r` not found." % os.path.expanduser(line))
                        return
                ofile, lineno = _source_file_and_line(obj)
                if lineno is None:
                        print(f"No file found for {oname}" if oname else "No file found ")
                elif ofile.endswith((".so", ".dll", ".pyd")):
                        print("File %r is binary, not printing." % ofile)
                elif not os.path.isfile(ofile):
                        print("File %r does not exist, not printing." % ofile)

        def magic_psearch(self, line):
                """IPython's %psearch [-a] [-c|-i] [-e NS] [-s NS] [-l] PATTERN [TYPE]:
                the names found go to the pager (a payload E2B drops): only its
                errors show, as tracebacks after which the cell goes on."""
                opts, args = parse_options(line, "cias:e:l", list_all=True)
                pattern = " ".join(args)
                search = ["user_local", "user_global", "builtin"] + opts.get("s", [])
                search = [n for n in search if n not in opts.get("e", [])]
                table = {"user_global": None, "user_local": None, "builtin": None}
                try:
                        if "l" in opts:
                                return
                        if len(pattern.split()) not in (1, 2):
                                raise ValueError(f"invalid argument string for psearch: <{pattern}>")
                        for name in search:
                                if name not in table:
                                        raise ValueError(f"invalid namespace <{name}>. Valid names: "
                                                         f"{table.keys()}")
                except ValueError:
                        self.showtraceback()

        def magic_pinfo(self, line, detail=False):
                """IPython's %pinfo (`obj?`, `?obj`): what it finds goes to the pager
                (a payload E2B drops); a miss is printed. A `*` pattern is %psearch's."""
                if not detail:
                        oname = re.match(r"(pinfo )?(\?*)(.*?)(\??$)", line).group(3)
                        if "*" in oname:
                                return self.magic_psearch(oname)
                else:
                        oname = line
                if not self._find_object(oname)[0]:
                        print(f"Object `{oname}` not found.")

        def magic_pinfo2(self, line):
                """IPython's %pinfo2 (`obj??`): %pinfo in detail, no pattern search."""
                return self.magic_pinfo(line, detail=True)

        def magic_who_ls(self, line):
                """IPython's %who_ls: the user's names, optionally of the given type names."""
                hidden = self.kernel.ns_hidden()
                out = [n for n, v in self.user_ns.items()
                       if not n.startswith("_") and v is not hidden.get(n, _NOT_HIDDEN)]
                types_wanted = set(line.split())
                if types_wanted:
                        out = [n for n in out if type(self.user_ns[n]).__name__ in types_wanted]
                return sorted(out)

        def magic_whos(self, line):
                """IPython's %whos: a table of the user's names, types and values."""
                names = self.magic_who_ls(line)
                if not names:
                        print("No variables match your requested type." if line
                              else "Interactive namespace is empty.")
                        return
                ndarray = getattr(sys.modules.get("numpy"), "ndarray", None)
                values = [self.user_ns[n] for n in names]
                types_ = [type(v).__name__ for v in values]
                varwidth = max(max(map(len, names)), len("Variable")) + 3
                typewidth = max(max(map(len, types_)), len("Type")) + 3
                print("Variable".ljust(varwidth) + "Type".ljust(typewidth) + " Data/Info\n"
                      + "-" * (varwidth + typewidth + len("Data/Info") + 1))
                for name, value, tname in zip(names, values, types_):
                        print(f"{name:<{varwidth}}{tname:<{typewidth}}", end=" ")
                        if tname in ("dict", "list", "tuple"):
                                print("n=" + str(len(value)))
                        elif ndarray is not None and tname == ndarray.__name__:
                                shape = str(value.shape).replace(",", "").replace(" ", "x")[1:-1]
                                nbytes = value.size * value.itemsize
                                info = "%s: %s elems, type `%s`, %s bytes" % (shape, value.size,
                                                                           value.dtype, nbytes)
                                if nbytes < 100000:
                                        print(info)
                                elif nbytes < 1048576:
                                        print(info, "(%s kb)" % (nbytes / 1024,))
                                else:
                                        print(info, "(%s Mb)" % (nbytes / 1048576,))
                        else:
                                try:
                                        text = str(value)
                                except Exception:
                                        text = "<object with id %d (str() failed)>" % id(value)
                                text = text.replace("\n", "\\n")
                                print(text if len(text) < 50 else text[:25] + "<...>" + text[-25:])

        def magic_xdel(self, line):
                """IPython's %xdel NAME: the name and the output history's references to it."""
                name = line.strip()
                if name not in self.user_ns:
                        print(f"NameError: name '{name}' is not defined")  # IPython prints it
                        return
                value = self.user_ns.pop(name)
                for key, out in list(self.kernel.Out.items()):
                        if out is value:
                                del self.kernel.Out[key]
                for under in ("_", "__", "___"):
                        if self.user_ns.get(under) is value:
                                self.user_ns[under] = ""

        def magic_reset(self, line):
                """IPython's %reset [-f] [-s] [--aggressive] [in|out|dhist|array...].
                Without -f it asks (ask_yes_no), whose input() fails under
                ipykernel: it goes on as with -f. -s: the user's names (%who_ls)
                go; else, without targets, a hard reset (_reset_namespace).
                Each target then flushes its history or the user's arrays."""
                opts, args = parse_options(line, "sf", "aggressive")
                if "s" in opts:
                        for name in self.magic_who_ls(""):
                                del self.user_ns[name]
                elif not args:
                        self._reset_namespace("aggressive" in opts)
                ns = self.user_ns
                for target in args:
                        target = target.lower()
                        if target == "out":
                                print("Flushing output cache (%d entries)" % len(ns["_oh"]))
                                self._flush_output()
                        elif target == "in":
                                # IPython's history keeps its length (%save and %macro count on it).
                                print("Flushing input history")
                                pc = self.kernel.count + 1
                                for n in range(1, pc):
                                        ns.pop(f"_i{n}", None)
                                ns.update({"_i": "", "_ii": "", "_iii": ""})
                                self.kernel.In[:] = [""] * pc
                                self.kernel.raw_in[:] = [""] * pc
                                self.kernel.inputs = ["", "", "", ""]
                        elif target == "array":
                                try:
                                        from numpy import ndarray
                                except ImportError:
                                        print("reset array only works if Numpy is available.")
                                        continue
                                for name, value in list(ns.items()):
                                        if isinstance(value, ndarray):
                                                del ns[name]
                        elif target == "dhist":
                                print("Flushing directory history")
                                del ns["_dh"][:]
                        else:
                                print("Don't know how to reset ", end=" ")
                                print(target + ", please run `%reset?` for details")
                gc.collect()

        def _flush_output(self):
                """IPython's DisplayHook.flush: _N, Out and _, __, ___ ('' unless
                builtins has a _)."""
                for n in range(1, self.kernel.count + 1):
                        self.user_ns.pop(f"_{n}", None)
                self.kernel.Out.clear()
                self.kernel.under = ["", "", ""]
                if "_" not in builtins.__dict__:
                        self.user_ns.update({"_": "", "__": "", "___": ""})

        def _reset_namespace(self, aggressive):
                """IPython's InteractiveShell.reset(new_session=False): the output
                history flushed, the directory history the cwd, every name gone
                but __builtin__, __builtins__ and __name__ (so _, _i... too, and
                __doc__ or __spec__ read as builtins'), then init_user_ns's names
                back; the input history and the execution count stay, and the
                aliases and %run's module cache are made anew. --aggressive
                prints IPython's line but culls no module: its snapshot of
                sys.modules is taken at the kernel's start, where cellvm's
                executor has already imported preloads and its own modules that
                cannot be imported twice (docs/NOTEBOOK.md)."""
                self._flush_output()
                ns = self.user_ns
                for name in [n for n in ns if n not in ("__builtin__", "__builtins__", "__name__")]:
                        del ns[name]
                k = self.kernel
                k.pylab_names = {}  # IPython's user_ns_hidden.clear()
                # E2B's startup names were in the namespace there: they go too.
                for name, value in k.startup_names.items():
                        if builtins.__dict__.get(name) is value:
                                delattr(builtins, name)
                k.startup_names = {}
                ns.update({"_ih": k.In, "_oh": k.Out, "_dh": [os.getcwd()], "In": k.In, "Out": k.Out,
                           "get_ipython": k.get_ipython, "exit": k.exiter, "quit": k.exiter})
                if aggressive:
                        print("culling sys module...")
                self.aliases = dict(_ALIASES)
                self.__dict__.get("_main_mod_cache", {}).clear()

        def magic_who(self, line):
                names = self.magic_who_ls(line)
                if not names:
                        print("No variables match your requested type." if line
                              else "Interactive namespace is empty.")
                        return
                count = 0
                for name in names:
                        print(name + "\t", end=" ")
                        count += 1
                        if count > 8:
                                count = 0
                                print()
                print()
