"""cellvm's compat packages (`e2b`, `e2b_code_interpreter`) against E2B's
public Python API as E2B's sources define it (tests/e2b_source_api.py reads
them with `ast`): every exported name, every public member of an exported
class (and of `sandbox.files`, `.commands`, `.pty`, `.git`), its kind (method,
property, classmethod, E2B's class_method_variant, async or not), every
parameter's name, kind, position and default, every overload, the classes
a return annotation names, dataclass fields in order, TypedDict keys, enum
values, base classes. A difference not in tests/e2b_api_allowlist.md (each
entry with its reason) fails, named as `Class.member(parameter)` (`->`: the
return type). No VM: it only imports and inspects."""

import ast
import dataclasses
import enum
import fnmatch
import importlib
import inspect
import os
import re
import sys

import pytest

from e2b_source_api import E2B_ROOTS, HAVE_SOURCES, NO_DEFAULT, ROOT, SHARED, E2BSource, Unresolved

ALLOWLIST_MD = os.path.join(os.path.dirname(os.path.abspath(__file__)), "e2b_api_allowlist.md")

# Dunder methods a program relies on (printing, indexing, `with`, iteration).
DUNDERS = {"__init__", "__repr__", "__str__", "__getitem__", "__iter__", "__next__", "__len__",
           "__enter__", "__exit__", "__aenter__", "__aexit__", "__aiter__", "__anext__", "__eq__",
           "__bool__", "__contains__"}

# What E2B's sandbox properties return, and cellvm's class for each (E2B's
# classes are found from the property's return annotation).
SUB_OBJECTS = {
    ("Sandbox", "files"): "cellvm.files:Filesystem",
    ("Sandbox", "commands"): "cellvm.commands:Commands",
    ("Sandbox", "pty"): "cellvm.pty:Pty",
    ("AsyncSandbox", "files"): "cellvm.async_files:AsyncFilesystem",
    ("AsyncSandbox", "commands"): "cellvm.async_commands:AsyncCommands",
    ("AsyncSandbox", "pty"): "cellvm.async_pty:AsyncPty",
    ("Sandbox", "git"): "cellvm.git:Git",
    ("AsyncSandbox", "git"): "cellvm.async_git:AsyncGit",
}

# Modules whose classes and functions are compared besides the packages'
# exports (sandbox.git's helpers: E2B's programs and tests import them).
MODULES = ["e2b_code_interpreter.charts", "e2b.sandbox._git.args", "e2b.sandbox._git.auth",
           "e2b.sandbox._git.config", "e2b.sandbox._git.parse", "e2b.sandbox._git.types"]

pytestmark = pytest.mark.skipif(not HAVE_SOURCES, reason="E2B's SDK sources are not at " + SHARED)


def read_allowlist():
    """`| pattern | reason |` rows of e2b_api_allowlist.md (fnmatch patterns)."""
    entries = {}
    with open(ALLOWLIST_MD, encoding="utf-8") as f:
        for line in f:
            m = re.match(r"^\|\s*`([^`]+)`\s*\|(.+)\|\s*$", line)
            if m:
                assert m.group(2).strip(), "allowlist entry without a reason: " + m.group(1)
                entries[m.group(1)] = m.group(2).strip()
    return entries


@pytest.fixture(scope="module")
def compat():
    """The compat packages, imported here and forgotten afterwards so that
    no other test sees `e2b` importable."""
    path = os.path.join(ROOT, "client", "python", "compat")  # client/python: conftest.py
    sys.path.insert(0, path)
    before = set(sys.modules)
    try:
        yield {name: importlib.import_module(name)
               for name in ["e2b", "e2b_code_interpreter"] + MODULES}
    finally:
        sys.path.remove(path)
        for name in set(sys.modules) - before:
            if name.split(".")[0] in E2B_ROOTS:
                del sys.modules[name]


def _load(spec):
    module, _, name = spec.partition(":")
    try:
        return getattr(importlib.import_module(module), name)
    except (ImportError, AttributeError):
        return None


# --- signatures -------------------------------------------------------------

P = inspect.Parameter
MISSING = object()
POSITIONAL = (P.POSITIONAL_ONLY, P.POSITIONAL_OR_KEYWORD)


def _same_default(e2b_default, ours):
    if isinstance(e2b_default, Unresolved):
        return True  # an expression of E2B's (a factory, a constant of its config): not comparable
    if isinstance(ours, enum.Enum) and not isinstance(e2b_default, enum.Enum):
        ours = ours.value
    return type(ours) is type(e2b_default) or (isinstance(ours, (int, float)) and isinstance(e2b_default, (int, float))
                                               and not isinstance(ours, bool)) if ours == e2b_default else False


def compare_signature(label, e2b_sig, ours, diffs, check_async=True, by_keyword=False):
    """ours: an inspect.Signature (without self/cls) or a callable.
    by_keyword: compare names and defaults only, not positions (an
    @overload's order is for type checkers; calls run the implementation)."""
    fn = ours
    if not isinstance(ours, inspect.Signature):
        try:
            ours = inspect.signature(ours)
        except (TypeError, ValueError):
            diffs.append((label, "cellvm's is not introspectable"))
            return
    params = list(ours.parameters.values())
    positional = [p for p in params if p.kind in POSITIONAL]
    by_name = {p.name: p for p in params}
    var_positional = any(p.kind == P.VAR_POSITIONAL for p in params)
    var_keyword = any(p.kind == P.VAR_KEYWORD for p in params)
    index = 0
    for ep in e2b_sig.params:
        where = "%s(%s)" % (label, ep.name)
        if ep.kind == "var_positional":
            if not var_positional:
                diffs.append((where, "E2B takes *%s, cellvm no extra positional arguments" % ep.name))
            continue
        if ep.kind == "var_keyword":
            if not var_keyword:
                diffs.append((where, "E2B takes **%s (api_key, request_timeout, ...), cellvm no other keywords"
                              % ep.name))
            continue
        mine = by_name.get(ep.name)
        if ep.kind in ("positional_only", "positional_or_keyword") and not by_keyword:
            at = positional[index] if index < len(positional) else None
            index += 1
            if at is None or at.name != ep.name:
                diffs.append((where, "E2B's positional parameter %d is %r, cellvm's is %s"
                              % (index, ep.name, repr(at.name) if at else
                                 ("*args" if var_positional else "none"))))
                continue
            mine = at
        elif mine is None or mine.kind not in (P.POSITIONAL_OR_KEYWORD, P.KEYWORD_ONLY):
            if not var_keyword:
                diffs.append((where, "E2B takes keyword %r, cellvm does not" % ep.name))
            continue
        if ep.default is NO_DEFAULT:
            continue
        if mine.default is P.empty:
            diffs.append((where, "E2B defaults %s=%r, cellvm requires it" % (ep.name, ep.default)))
        elif not _same_default(ep.default, mine.default):
            diffs.append((where, "E2B defaults %s=%r, cellvm %r" % (ep.name, ep.default, mine.default)))
    names = {ep.name for ep in e2b_sig.params}
    for p in params:
        if p.default is P.empty and p.kind not in (P.VAR_POSITIONAL, P.VAR_KEYWORD) and p.name not in names:
            diffs.append(("%s(%s)" % (label, p.name), "cellvm requires %r, which E2B does not take" % p.name))
    if RETURN_TYPES is not None and e2b_sig.returns and ours.return_annotation is not P.empty:
        # What the caller gets: each E2B class its annotation names must be in cellvm's.
        mine = ours.return_annotation
        mine = mine if isinstance(mine, str) else mine.__name__ if isinstance(mine, type) else repr(mine)
        for name in set(re.findall(r"\b[A-Z]\w*", e2b_sig.returns)) & RETURN_TYPES:
            if not re.search(r"\b%s\b" % name, mine):
                diffs.append((label + "->", "E2B's returns %s, cellvm's %s" % (e2b_sig.returns, mine)))
    if check_async and not isinstance(fn, inspect.Signature):
        ours_async = inspect.iscoroutinefunction(fn) or inspect.isasyncgenfunction(fn)
        if e2b_sig.is_async != ours_async:
            diffs.append((label, "E2B's is %s, cellvm's %s" % ("async" if e2b_sig.is_async else "not async",
                                                                  "async" if ours_async else "not async")))


# --- classes ----------------------------------------------------------------

def _instance_attributes(cls):
    """Names an instance has without a property: dataclass fields, __slots__,
    annotations, and __init__'s parameters (attributes stored as given)."""
    names = set()
    for klass in inspect.getmro(cls):
        names |= set(getattr(klass, "__annotations__", {}))
        names |= set(getattr(klass, "__slots__", ()))
    if dataclasses.is_dataclass(cls):
        names |= {f.name for f in dataclasses.fields(cls)}
    try:
        names |= set(inspect.signature(cls).parameters)
    except (TypeError, ValueError):
        pass
    return names


def _unwrap_variant(static):
    """cellvm's _class_or_instance keeps the instance method as `_fn`."""
    return getattr(static, "_fn", None)


def compare_class(label, info, ours, diffs, source):
    if not inspect.isclass(ours):
        diffs.append((label, "E2B's is a class, cellvm's %r is not" % (ours,)))
        return
    mro_names = {k.__name__ for k in inspect.getmro(ours)}
    exported = set(source.public_names("e2b"))
    for base in info.bases:
        if base in exported and base not in mro_names:
            diffs.append((label, "E2B's is a subclass of %s, cellvm's is not" % base))
    if info.flavor == "exception" and not issubclass(ours, Exception):
        diffs.append((label, "E2B's is an exception, cellvm's is not"))
    if info.flavor == "enum" and not issubclass(ours, enum.Enum):
        diffs.append((label, "E2B's is an Enum, cellvm's is not"))
    if info.flavor == "typeddict":
        keys = set(getattr(ours, "__annotations__", {})) | set(getattr(ours, "__required_keys__", ())) \
            | set(getattr(ours, "__optional_keys__", ()))
        for field in info.fields:
            if field.name not in keys:
                diffs.append(("%s[%r]" % (label, field.name), "E2B's TypedDict has key %r, cellvm's not"
                              % field.name))
        return
    own_init = "__init__" in info.members  # @dataclass keeps an __init__ the class defines
    if info.flavor == "dataclass" and not own_init:
        compare_signature(label + ".__init__", info.init_signature(), ours, diffs, check_async=False)
    attributes = _instance_attributes(ours)
    for name, member in sorted(info.members.items()):
        if name.startswith("_") and name not in DUNDERS:
            continue
        if name == "__init__" and info.flavor == "dataclass" and not own_init:
            continue
        where = "%s.%s" % (label, name)
        static = inspect.getattr_static(ours, name, MISSING)
        present = static is not MISSING
        static = static if present else None
        if member.kind == "enum":
            if static is None or not isinstance(static, enum.Enum):
                diffs.append((where, "E2B's enum has member %s, cellvm's not" % name))
            elif not isinstance(member.default, Unresolved) and static.value != member.default:
                diffs.append((where, "E2B's value is %r, cellvm's %r" % (member.default, static.value)))
            continue
        if member.kind in ("field", "attribute"):
            if not present and name not in attributes:
                diffs.append((where, "E2B's has attribute %s, cellvm's not" % name))
            elif member.kind == "attribute" and present and not _same_default(member.default, static):
                diffs.append((where, "E2B's is %r, cellvm's %r" % (member.default, static)))
            continue
        if not present and name not in attributes:
            diffs.append((where, "missing: E2B's %s %s" % (member.kind, name)))
            continue
        if member.kind == "property":
            if callable(static) and not isinstance(static, (property,)) and not hasattr(static, "__get__") \
                    or isinstance(static, (staticmethod, classmethod)) or inspect.isfunction(static):
                diffs.append((where, "E2B's is a property, cellvm's a method"))
            continue
        if not present:  # E2B's method, cellvm's instance attribute
            diffs.append((where, "E2B's is a %s, cellvm's an attribute" % member.kind))
            continue
        if isinstance(static, property):
            diffs.append((where, "E2B's is a %s, cellvm's a property" % member.kind))
            continue
        variant = _unwrap_variant(static)
        if member.kind == "variant":
            if variant is None:
                diffs.append((where, "E2B's works on an instance and on the class (class_method_variant), "
                              "cellvm's only on %s" % ("the class" if isinstance(static, classmethod)
                                                       else "an instance")))
                continue
            compare_signature(where, member.signature, _drop_first(variant), diffs, check_async=False)
            _check_async(where, member.signature, variant, diffs)
            if member.class_signature:
                cls_fn = getattr(ours, name)
                compare_signature(where + "[class]", member.class_signature, cls_fn, diffs)
            for n, (is_static, sig) in enumerate(member.overloads):
                target = getattr(ours, name) if is_static else _drop_first(variant)
                compare_signature("%s[overload %d]" % (where, n + 1), sig, target, diffs, check_async=False,
                                  by_keyword=True)
            continue
        if member.kind in ("classmethod", "staticmethod"):
            if not isinstance(static, (classmethod, staticmethod)) and variant is None:
                diffs.append((where, "E2B's is a %s, cellvm's only works on an instance" % member.kind))
                continue
            compare_signature(where, member.signature, getattr(ours, name), diffs)
            continue
        # a method
        fn = variant or (static.__func__ if isinstance(static, (classmethod, staticmethod)) else static)
        if not callable(fn):
            diffs.append((where, "E2B's is a method, cellvm's %r is not callable" % (static,)))
            continue
        if isinstance(static, staticmethod):
            compare_signature(where, member.signature, fn, diffs)
            continue
        if isinstance(static, classmethod):
            compare_signature(where, member.signature, getattr(ours, name), diffs)
            continue
        if name == "__init__" and ours.__init__ is object.__init__:
            diffs.append((where, "E2B's takes arguments, cellvm's none"))
            continue
        compare_signature(where, member.signature, _drop_first(fn), diffs, check_async=False)
        _check_async(where, member.signature, fn, diffs)
        for n, (_, sig) in enumerate(member.overloads):
            compare_signature("%s[overload %d]" % (where, n + 1), sig, _drop_first(fn), diffs, check_async=False,
                              by_keyword=True)


def _drop_first(fn):
    try:
        sig = inspect.signature(fn)
    except (TypeError, ValueError):
        return fn
    return sig.replace(parameters=list(sig.parameters.values())[1:])


def _check_async(where, e2b_sig, fn, diffs):
    ours_async = inspect.iscoroutinefunction(fn) or inspect.isasyncgenfunction(fn)
    if e2b_sig.is_async != ours_async:
        diffs.append((where, "E2B's is %s, cellvm's %s" % ("async" if e2b_sig.is_async else "not async",
                                                             "async" if ours_async else "not async")))


# --- the whole surface ------------------------------------------------------

RETURN_TYPES = None  # E2B's exported classes, for comparing return annotations (set below)


def surface_differences(compat):
    global RETURN_TYPES
    source = E2BSource(E2B_ROOTS)
    RETURN_TYPES = {n for n in source.public_names("e2b_code_interpreter")
                    if (source.resolve("e2b_code_interpreter", n) or ("",))[0] == "class"}
    diffs, done = [], set()

    def compare_name(module, name, label):
        found = source.resolve(module, name)
        ours = getattr(compat[module], name, None) if module in compat else None
        if ours is None and not hasattr(compat.get(module), name):
            diffs.append((label, "%s exports %s, cellvm's compat %s does not" % (module, name, module)))
            return
        if not found:
            return
        if found[0] == "class":
            info = source.class_info(module, name)
            compare_class(label, info, ours, diffs, source)
            for (owner, prop), spec in SUB_OBJECTS.items():
                if owner == label and prop in info.members:
                    sub = _property_class(source, info.members[prop])
                    if sub:
                        mine = _load(spec)
                        if mine is None:
                            diffs.append(("%s.%s" % (label, prop), "cellvm has no %s" % spec))
                        else:
                            compare_class("%s.%s" % (label, prop), sub, mine, diffs, source)
        elif found[0] == "function":
            info = source.function_info(module, name)
            if not callable(ours):
                diffs.append((label, "E2B's is a function, cellvm's is not callable"))
            else:
                compare_signature(label, info.signature, ours, diffs)

    # e2b_code_interpreter first: its names are e2b's plus its own (Sandbox with run_code, ...)
    for module in ("e2b_code_interpreter", "e2b"):
        for name in source.public_names(module):
            if name not in done:
                done.add(name)
                compare_name(module, name, name)
    # E2B's submodules that compat has (programs import from them): each class E2B defines there.
    for module in compat_submodules():
        tree = source.tree(module)
        if tree is None:
            continue
        try:
            ours = importlib.import_module(module)
        except ImportError as e:
            diffs.append((module, "compat's module does not import: %s" % e))
            continue
        for node in tree.body:
            if isinstance(node, ast.ClassDef) and not node.name.startswith("_") \
                    and not hasattr(ours, node.name):
                diffs.append(("%s:%s" % (module, node.name), "E2B's %s has class %s, compat's not"
                              % (module, node.name)))
    for module in MODULES:
        tree = source.tree(module)
        for node in tree.body:
            if hasattr(node, "name") and not node.name.startswith("_") and node.name not in done:
                compare_name(module, node.name, "%s.%s" % (module.split(".")[-1], node.name))
    return diffs


def compat_submodules():
    """The dotted names of compat's modules below e2b and e2b_code_interpreter."""
    base = os.path.join(ROOT, "client", "python", "compat")
    names = []
    for top in E2B_ROOTS:
        for folder, _, files in os.walk(os.path.join(base, top)):
            for f in files:
                if f.endswith(".py"):
                    name = os.path.relpath(os.path.join(folder, f), base)[:-3].replace(os.sep, ".")
                    name = name[:-len(".__init__")] if name.endswith(".__init__") else name
                    if "." in name:
                        names.append(name)
    return sorted(names)


def _property_class(source, member):
    """The E2B class a property's return annotation names."""
    module, _, cls = member.owner.rpartition(".")
    for node in source.tree(module).body:
        if getattr(node, "name", None) == cls:
            for item in node.body:
                if getattr(item, "name", None) == member.name and getattr(item, "returns", None) is not None:
                    return source.class_info(module, getattr(item.returns, "id", ""))
    return None


def matches(key, pattern):
    """fnmatch with `*` and `?` only: `[` is literal (`Class[key]`, `[overload 1]`)."""
    return fnmatch.fnmatchcase(key, pattern.replace("[", "[[]"))


def allowed(key, allowlist):
    return next((p for p in allowlist if matches(key, p)), None)


def test_cellvms_e2b_api_matches_e2bs_sources(compat):
    allowlist = read_allowlist()
    diffs = surface_differences(compat)
    unexplained = ["%s: %s" % d for d in diffs if not allowed(d[0], allowlist)]
    assert not unexplained, "%d differences from E2B's API not in %s:\n  %s" % (
        len(unexplained), os.path.basename(ALLOWLIST_MD), "\n  ".join(unexplained))


def test_every_allowlist_entry_is_still_needed(compat):
    """An entry nothing matches any more is stale: remove it so that the
    difference it excused cannot come back unnoticed."""
    diffs = surface_differences(compat)
    stale = [p for p in read_allowlist() if not any(matches(d[0], p) for d in diffs)]
    assert not stale, "allowlist entries that match no difference: %s" % stale


def test_the_comparison_catches_a_difference(compat, monkeypatch):
    """The check itself: a renamed parameter, a changed default, another
    return type and a missing method of cellvm's Sandbox are each reported by name."""
    sandbox = compat["e2b_code_interpreter"].Sandbox

    def run_code(self, code, lang=None, context=None, on_stdout=None, on_stderr=None, on_result=None,
                 on_error=None, envs=None, timeout=30, request_timeout=None) -> dict:
        pass
    monkeypatch.setattr(sandbox, "run_code", run_code)
    monkeypatch.delattr(sandbox, "list_code_contexts")
    keys = {d[0] for d in surface_differences(compat)}
    assert {"Sandbox.run_code(language)", "Sandbox.run_code(timeout)", "Sandbox.run_code->",
            "Sandbox.list_code_contexts"} <= keys
