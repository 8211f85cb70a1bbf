"""E2B's public Python API, read from E2B's sources with `ast` (never
imported: their dependencies, httpx, connectrpc, ..., are not installed).

`E2BSource(roots)` resolves names the way Python's imports would: a module's
public names (its bindings, `from x import *` following x's `__all__`), and
for a class its members through its bases in E2B's sources: methods (with
their decorators: property, classmethod, staticmethod, E2B's
class_method_variant, overload), fields of dataclasses and TypedDicts, enum
members. tests/test_e2b_api_surface.py compares that with cellvm's compat
packages."""

import __future__
import ast
import dataclasses
import os
import sys
import types
from typing import Dict, List, Optional, Tuple

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SHARED = os.environ.get("CELLVM_E2B_SDK", os.path.join(os.path.dirname(ROOT), "shared", "e2b_sdk"))
E2B_ROOTS = {
    "e2b": os.path.join(SHARED, "e2b-python-sdk", "e2b"),
    "e2b_code_interpreter": os.path.join(SHARED, "code-interpreter-python", "e2b_code_interpreter"),
}
"""Where E2B's Python SDK sources are ($CELLVM_E2B_SDK, else ../shared/e2b_sdk)."""
HAVE_SOURCES = all(os.path.isdir(p) for p in E2B_ROOTS.values())

NO_DEFAULT = "<required>"


class Unresolved:
    """A default that is an expression, kept as its source text."""

    def __init__(self, text):
        self.text = text

    def __repr__(self):
        return self.text


@dataclasses.dataclass
class Param:
    name: str
    kind: str  # "positional_only", "positional_or_keyword", "var_positional", "keyword_only", "var_keyword"
    default: object = NO_DEFAULT


@dataclasses.dataclass
class Signature:
    params: List[Param]  # without self / cls
    is_async: bool
    returns: Optional[str] = None  # the return annotation's source text


@dataclasses.dataclass
class Member:
    name: str
    kind: str  # "method", "property", "classmethod", "staticmethod", "variant", "field", "enum", "attribute"
    signature: Optional[Signature] = None
    # (is_static, Signature) of each @overload; static ones are the class-level call of a variant
    overloads: List[Tuple[bool, Signature]] = dataclasses.field(default_factory=list)
    # a variant's class-level implementation (its classmethod `_cls_*`)
    class_signature: Optional[Signature] = None
    default: object = NO_DEFAULT  # a field's default, an enum member's value
    owner: str = ""  # "module.Class" that defines it
    kw_only: bool = False  # a dataclass field(kw_only=True)


@dataclasses.dataclass
class ClassInfo:
    module: str
    name: str
    flavor: str  # "dataclass", "typeddict", "enum", "exception", "class"
    bases: List[str]  # names of every E2B base class, nearest first (transitively)
    members: Dict[str, Member]
    fields: List[Member]  # dataclass / TypedDict fields in declaration order (bases first)
    external_bases: List[str]  # names of bases outside E2B's sources (Exception, Enum, str, ...)


    def init_signature(self) -> Signature:
        """The __init__ @dataclass writes: fields in order, kw_only ones last."""
        fields = [f for f in self.fields if not f.kw_only] + [f for f in self.fields if f.kw_only]
        return Signature([Param(f.name, "keyword_only" if f.kw_only else "positional_or_keyword", f.default)
                          for f in fields], False)


@dataclasses.dataclass
class FunctionInfo:
    module: str
    name: str
    signature: Signature


def _decorator_name(dec) -> str:
    if isinstance(dec, ast.Call):
        dec = dec.func
    if isinstance(dec, ast.Attribute):
        return dec.attr if dec.attr in ("setter", "getter", "deleter") else dec.attr
    if isinstance(dec, ast.Name):
        return dec.id
    return ""


class E2BSource:
    def __init__(self, roots: Dict[str, str]):
        """roots: top-level package name -> its directory."""
        self.roots = roots
        self._trees = {}
        self._classes = {}

    # --- modules -------------------------------------------------------

    def module_path(self, module: str) -> Optional[str]:
        top, _, rest = module.partition(".")
        if top not in self.roots:
            return None
        base = os.path.join(self.roots[top], *rest.split(".")) if rest else self.roots[top]
        for path in (base + ".py", os.path.join(base, "__init__.py")):
            if os.path.isfile(path):
                return path
        return None

    def tree(self, module: str) -> Optional[ast.Module]:
        if module not in self._trees:
            path = self.module_path(module)
            self._trees[module] = None
            if path:
                with open(path, encoding="utf-8") as f:
                    self._trees[module] = ast.parse(f.read(), path)
        return self._trees[module]

    def _absolute(self, module: str, node: ast.ImportFrom) -> str:
        if not node.level:
            return node.module or ""
        is_package = (self.module_path(module) or "").endswith("__init__.py")
        parts = module.split(".")
        keep = len(parts) - node.level + (1 if is_package else 0)
        base = ".".join(parts[:keep])
        return base + ("." + node.module if node.module else "")

    def _statements(self, module: str):
        """Top-level statements, including those in try/if blocks."""
        tree = self.tree(module)
        stack = list(tree.body) if tree else []
        while stack:
            node = stack.pop(0)
            if isinstance(node, (ast.Try, ast.If)):
                stack[:0] = list(node.body) + [s for h in getattr(node, "handlers", []) for s in h.body]
                continue
            yield node

    def all_list(self, module: str) -> Optional[List[str]]:
        for node in self._statements(module):
            if isinstance(node, ast.Assign) and any(
                    isinstance(t, ast.Name) and t.id == "__all__" for t in node.targets):
                return list(ast.literal_eval(node.value))
        return None

    def public_names(self, module: str) -> List[str]:
        """What `from module import *` gives, and what `from module import X`
        finds: its __all__ plus every other public binding it has."""
        names = list(self.all_list(module) or [])
        for node in self._statements(module):
            bound = []
            if isinstance(node, (ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)):
                bound = [node.name]
            elif isinstance(node, ast.Assign):
                bound = [t.id for t in node.targets if isinstance(t, ast.Name)]
            elif isinstance(node, ast.ImportFrom):
                if node.names[0].name == "*":
                    src = self._absolute(module, node)
                    bound = self.star_names(src) if self.tree(src) else []
                else:
                    bound = [a.asname or a.name for a in node.names]
            for name in bound:
                if not name.startswith("_") and name not in names:
                    names.append(name)
        return names

    def star_names(self, module: str) -> List[str]:
        explicit = self.all_list(module)
        return explicit if explicit is not None else self.public_names(module)

    def resolve(self, module: str, name: str, _seen=None):
        """("class", ClassDef, module) / ("function", FunctionDef, module) /
        ("value", expr, module) / ("external", "pkg.name", None) / None."""
        seen = _seen or set()
        if (module, name) in seen:
            return None
        seen.add((module, name))
        found = None
        for node in self._statements(module):
            if isinstance(node, ast.ClassDef) and node.name == name:
                found = ("class", node, module)
            elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.name == name:
                found = ("function", node, module)
            elif isinstance(node, ast.Assign) and any(
                    isinstance(t, ast.Name) and t.id == name for t in node.targets):
                found = ("value", node.value, module)
            elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name) \
                    and node.target.id == name and node.value is not None:
                found = ("value", node.value, module)
            elif isinstance(node, ast.ImportFrom):
                src = self._absolute(module, node)
                for alias in node.names:
                    if alias.name == "*":
                        if self.tree(src) and name in self.star_names(src):
                            found = self.resolve(src, name, seen)
                    elif (alias.asname or alias.name) == name:
                        if self.tree(src):
                            found = self.resolve(src, alias.name, seen)
                        elif self.tree(src + "." + alias.name):
                            found = ("module", None, src + "." + alias.name)
                        else:
                            found = ("external", src + "." + alias.name, None)
            elif isinstance(node, ast.Import):
                for alias in node.names:
                    if (alias.asname or alias.name.split(".")[0]) == name:
                        found = ("external", alias.name, None)
        return found

    # --- values --------------------------------------------------------

    def literal(self, module: str, expr):
        """A default's value: a literal, a module constant naming one, or
        Unresolved(source text)."""
        try:
            return ast.literal_eval(expr)
        except ValueError:
            pass
        if isinstance(expr, ast.Name):
            found = self.resolve(module, expr.id)
            if found and found[0] == "value":
                return self.literal(found[2], found[1])
        return Unresolved(ast.unparse(expr))

    def signature(self, module: str, fn, drop_first: bool) -> Signature:
        a = fn.args
        params = []
        positional = list(a.posonlyargs) + list(a.args)
        defaults = [NO_DEFAULT] * (len(positional) - len(a.defaults)) + [
            self.literal(module, d) for d in a.defaults]
        for i, arg in enumerate(positional):
            kind = "positional_only" if i < len(a.posonlyargs) else "positional_or_keyword"
            params.append(Param(arg.arg, kind, defaults[i]))
        if a.vararg:
            params.append(Param(a.vararg.arg, "var_positional"))
        for arg, default in zip(a.kwonlyargs, a.kw_defaults):
            params.append(Param(arg.arg, "keyword_only",
                                NO_DEFAULT if default is None else self.literal(module, default)))
        if a.kwarg:
            params.append(Param(a.kwarg.arg, "var_keyword"))
        if drop_first and params:
            params = params[1:]
        returns = ast.unparse(fn.returns) if fn.returns is not None else None
        return Signature(params, isinstance(fn, ast.AsyncFunctionDef), returns)

    # --- classes -------------------------------------------------------

    def class_info(self, module: str, name: str) -> Optional[ClassInfo]:
        found = self.resolve(module, name)
        if not found or found[0] != "class":
            return None
        node, mod = found[1], found[2]
        key = (mod, node.name)
        if key not in self._classes:
            self._classes[key] = self._read_class(mod, node)
        return self._classes[key]

    def _read_class(self, module: str, node: ast.ClassDef) -> ClassInfo:
        bases, external, members, fields = [], [], {}, []
        flavor = "class"
        for base in node.bases:
            if isinstance(base, ast.Subscript):
                base = base.value
            text = ast.unparse(base)
            info = self.class_info(module, text) if isinstance(base, ast.Name) else None
            if info:
                bases += [info.name] + info.bases
                external += info.external_bases
                members.update({k: v for k, v in info.members.items() if k not in members})
                fields += [f for f in info.fields if f.name not in {g.name for g in fields}]
                if flavor == "class":
                    flavor = info.flavor
            else:
                external.append(text.split(".")[-1])
        decorators = {_decorator_name(d) for d in node.decorator_list}
        if "dataclass" in decorators:
            flavor = "dataclass"
        elif "TypedDict" in external:
            flavor = "typeddict"
        elif {"Enum", "IntEnum", "StrEnum"} & set(external):
            flavor = "enum"
        elif {"Exception", "BaseException"} & set(external):
            flavor = "exception"
        owner = module + "." + node.name
        own = {}
        for item in node.body:
            if isinstance(item, (ast.FunctionDef, ast.AsyncFunctionDef)):
                self._read_function(module, owner, item, own)
            elif isinstance(item, ast.AnnAssign) and isinstance(item.target, ast.Name):
                if "ClassVar" in ast.unparse(item.annotation):
                    continue
                default, kw_only = NO_DEFAULT, False
                if isinstance(item.value, ast.Call) and _decorator_name(item.value) == "field":
                    options = {k.arg: k.value for k in item.value.keywords}
                    if "default" in options:
                        default = self.literal(module, options["default"])
                    elif "default_factory" in options:
                        default = Unresolved(ast.unparse(options["default_factory"]) + "()")
                    kw_only = "kw_only" in options and ast.literal_eval(options["kw_only"])
                elif item.value is not None:
                    default = self.literal(module, item.value)
                member = Member(item.target.id, "field", default=default, owner=owner, kw_only=kw_only)
                own[member.name] = member
                fields = [f for f in fields if f.name != member.name] + [member]
            elif isinstance(item, ast.Assign):
                for target in item.targets:
                    if isinstance(target, ast.Name):
                        kind = "enum" if flavor == "enum" else "attribute"
                        own[target.id] = Member(target.id, kind,
                                                default=self.literal(module, item.value), owner=owner)
        for name, member in own.items():
            if member.kind == "variant":
                impl = own.get(member.class_signature) or members.get(member.class_signature)
                member.class_signature = impl.signature if impl else None
        members.update(own)
        return ClassInfo(module, node.name, flavor, bases, members, fields, external)

    def _read_function(self, module, owner, fn, own):
        decs = [_decorator_name(d) for d in fn.decorator_list]
        if "setter" in decs or "deleter" in decs:
            return
        is_static = "staticmethod" in decs
        sig = self.signature(module, fn, drop_first=not is_static)
        if "overload" in decs:
            member = own.setdefault(fn.name, Member(fn.name, "method", owner=owner))
            member.overloads.append((is_static, sig))
            return
        member = own.get(fn.name) or Member(fn.name, "method", owner=owner)
        member.signature, member.owner = sig, owner
        if "property" in decs or "cached_property" in decs:
            member.kind = "property"
        elif "classmethod" in decs:
            member.kind = "classmethod"
        elif is_static:
            member.kind = "staticmethod"
        elif "class_method_variant" in decs:
            member.kind = "variant"
            call = next(d for d in fn.decorator_list if _decorator_name(d) == "class_method_variant")
            member.class_signature = ast.literal_eval(call.args[0])  # resolved to its Signature later
        own[fn.name] = member

    def function_info(self, module: str, name: str) -> Optional[FunctionInfo]:
        found = self.resolve(module, name)
        if not found or found[0] != "function":
            return None
        return FunctionInfo(found[2], name, self.signature(found[2], found[1], drop_first=False))


STDLIB_IMPORTS = {"inspect", "json", "logging", "dataclasses", "typing", "enum", "datetime", "re"}


def run_definitions(source: E2BSource, module: str, namespace: dict, names=None) -> dict:
    """Run E2B's own definitions of `module` (all, or the top-level `names`)
    in `namespace`, unchanged, without its imports of E2B's other modules and
    third-party packages (httpx, ...): what they would bind must already be in
    `namespace`. For comparing what E2B's models print (repr, str, to_json)
    with cellvm's, where reading the syntax tree is not enough."""
    body = []
    for node in source.tree(module).body:
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            mods = [a.name for a in node.names] if isinstance(node, ast.Import) else [node.module or ""]
            if not node.__dict__.get("level") and all(m.split(".")[0] in STDLIB_IMPORTS for m in mods):
                body.append(node)
            continue
        bound = {getattr(node, "name", None)} | {t.id for t in getattr(node, "targets", [])
                                                 if isinstance(t, ast.Name)}
        if isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
            bound.add(node.target.id)
        if names is None or bound & set(names):
            body.append(node)
    # Annotations stay text (PEP 563), so the types of E2B's transport they name need not exist.
    code = compile(ast.Module(body=body, type_ignores=[]), source.module_path(module), "exec",
                   flags=__future__.annotations.compiler_flag, dont_inherit=True)
    # A module of its own (named e2b_source.*, never e2b), for dataclasses to find by __module__.
    mod = types.ModuleType("e2b_source." + module)
    mod.__dict__.update(namespace)
    sys.modules[mod.__name__] = mod
    exec(code, mod.__dict__)
    return mod.__dict__
