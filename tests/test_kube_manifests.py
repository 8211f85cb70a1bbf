"""`cellvm kube manifests` (client/c/kube_manifests.c, docs/KUBERNETES.md):
every object it prints is checked as an API server would check it, closed to
unknown fields:

- agent-sandbox's kinds against the openAPIV3Schema of their CRD
  ($CELLVM_AGENT_SANDBOX_CRDS, else ../shared/agent-sandbox/crds beside the
  repository), with Debian's python3-jsonschema. Structural schemas prune
  unknown fields where an API server would silently drop them; here every
  object that lists its properties (and does not say
  x-kubernetes-preserve-unknown-fields) gets additionalProperties: false, so
  a misspelt field is an error instead of a silent loss.
- the core kinds (and the pod spec inside the SandboxTemplate) against
  Debian's python3-kubernetes models: every key must be one of the model's
  attributes with the model's type, and the model's own constructor refuses
  a missing required field.

The negative cases must fail: an unknown field, a wrong type, a missing
required field, for a CRD kind and for a core kind.
"""

import copy
import glob
import os
import re
import subprocess
import sys

import pytest

yaml = pytest.importorskip("yaml", reason="python3-yaml is needed to read the YAML stream")
jsonschema = pytest.importorskip("jsonschema", reason="Debian's python3-jsonschema is needed")
kubernetes = pytest.importorskip("kubernetes", reason="Debian's python3-kubernetes is needed")
from kubernetes import client as k8s  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from serve_process import CLI  # noqa: E402

CRDS = os.environ.get("CELLVM_AGENT_SANDBOX_CRDS",
                      os.path.join(os.path.dirname(ROOT), "shared", "agent-sandbox", "crds"))
CORE_MODELS = {("v1", "ServiceAccount"): "V1ServiceAccount",
               ("v1", "Service"): "V1Service",
               ("apps/v1", "Deployment"): "V1Deployment",
               ("rbac.authorization.k8s.io/v1", "Role"): "V1Role",
               ("rbac.authorization.k8s.io/v1", "RoleBinding"): "V1RoleBinding"}


# --- the schemas --------------------------------------------------------------

def close(schema):
    """A CRD's structural schema as JSON Schema that refuses unknown fields."""
    if isinstance(schema, list):
        return [close(s) for s in schema]
    if not isinstance(schema, dict):
        return schema
    out = {k: close(v) for k, v in schema.items()}
    if ("properties" in out and "additionalProperties" not in out
            and not out.get("x-kubernetes-preserve-unknown-fields")):
        out["additionalProperties"] = False
    if out.get("x-kubernetes-int-or-string") and "type" not in out and "anyOf" not in out:
        out["anyOf"] = [{"type": "integer"}, {"type": "string"}]
    return out


def crd_schemas():
    if not os.path.isdir(CRDS):
        pytest.skip(f"agent-sandbox's CRDs are not at {CRDS} (set $CELLVM_AGENT_SANDBOX_CRDS)")
    out = {}
    for path in sorted(glob.glob(os.path.join(CRDS, "*.yaml"))):
        with open(path) as f:
            crd = yaml.safe_load(f)
        group, kind = crd["spec"]["group"], crd["spec"]["names"]["kind"]
        for v in crd["spec"]["versions"]:
            if v.get("served"):
                out[(f"{group}/{v['name']}", kind)] = close(v["schema"]["openAPIV3Schema"])
    assert out, f"no CRD in {CRDS}"
    return out


# --- the core models ----------------------------------------------------------

PRIMITIVES = {"str": str, "int": int, "bool": bool, "float": (int, float)}


def check_model(value, type_name, where, errors):
    """Appends to `errors` every key `value` has that the model lacks and every
    value of the wrong type."""
    if type_name.startswith("list["):
        if not isinstance(value, list):
            errors.append(f"{where}: a list expected, got {type(value).__name__}")
            return
        for i, v in enumerate(value):
            check_model(v, type_name[5:-1], f"{where}[{i}]", errors)
        return
    m = re.match(r"dict\((\w+), (.+)\)$", type_name)
    if m:
        if not isinstance(value, dict):
            errors.append(f"{where}: a map expected, got {type(value).__name__}")
            return
        for k, v in value.items():
            check_model(v, m.group(2), f"{where}.{k}", errors)
        return
    if type_name in PRIMITIVES:
        t = PRIMITIVES[type_name]
        if not isinstance(value, t) or (type_name == "int" and isinstance(value, bool)):
            errors.append(f"{where}: {type_name} expected, got {value!r}")
        return
    if type_name == "object":  # IntOrString, Quantity: a string or a number
        if not isinstance(value, (str, int)) or isinstance(value, bool):
            errors.append(f"{where}: a string or an integer expected, got {value!r}")
        return
    if type_name == "datetime":
        return
    cls = getattr(k8s, type_name)
    if not isinstance(value, dict):
        errors.append(f"{where}: {type_name} (a map) expected, got {type(value).__name__}")
        return
    by_json = {j: py for py, j in cls.attribute_map.items()}
    for k, v in value.items():
        if k not in by_json:
            errors.append(f"{where}.{k}: unknown field of {type_name}")
        else:
            check_model(v, cls.openapi_types[by_json[k]], f"{where}.{k}", errors)


def model_errors(obj, type_name):
    errors = []
    check_model(obj, type_name, type_name, errors)
    if not errors:
        # The model's constructors refuse a missing required field.
        try:
            k8s.ApiClient()._ApiClient__deserialize(copy.deepcopy(obj), type_name)
        except (ValueError, TypeError) as e:
            errors.append(f"{type_name}: {e}")
    return errors


# --- checking one object ------------------------------------------------------

def object_errors(obj, schemas):
    key = (obj.get("apiVersion"), obj.get("kind"))
    if key in CORE_MODELS:
        return model_errors(obj, CORE_MODELS[key])
    if key not in schemas:
        return [f"{key}: neither a core kind nor one of agent-sandbox's CRDs"]
    v = jsonschema.Draft7Validator(schemas[key])
    errors = [f"{obj['kind']}.{'.'.join(map(str, e.absolute_path))}: {e.message}"
              for e in v.iter_errors(obj)]
    # The CRD leaves metadata to the API server: ObjectMeta's rules.
    errors += model_errors(obj.get("metadata", {}), "V1ObjectMeta")
    pod = obj.get("spec", {}).get("podTemplate", {}).get("spec")
    if pod is not None:
        errors += model_errors(pod, "V1PodSpec")
    return errors


def manifests(*args):
    r = subprocess.run([CLI, "kube", "manifests", *args], capture_output=True, text=True,
                       timeout=30)
    assert r.returncode == 0, r.stderr
    return [d for d in yaml.safe_load_all(r.stdout) if d is not None]


@pytest.fixture(scope="module")
def schemas():
    if not os.access(CLI, os.X_OK):
        pytest.fail(f"{CLI} is not built (make all)")
    return crd_schemas()


@pytest.fixture(scope="module")
def objects(schemas):
    return manifests("--image", "registry.example/cellvm:1.0", "--namespace", "agents",
                     "--replicas", "5")


def by_kind(objects, kind):
    found = [o for o in objects if o["kind"] == kind]
    assert len(found) == 1, f"{len(found)} {kind} objects"
    return found[0]


# --- the stream ---------------------------------------------------------------

def test_every_object_passes_its_schema(objects, schemas):
    assert sorted(o["kind"] for o in objects) == sorted(
        ["SandboxTemplate", "SandboxWarmPool", "ServiceAccount", "Role", "RoleBinding",
         "Deployment", "Service"])
    for o in objects:
        assert o["metadata"]["namespace"] == "agents", o["kind"]
        assert object_errors(o, schemas) == [], o["kind"]


@pytest.mark.parametrize("args", [["--no-kvm", "--template-host-path", ""],
                                  ["--memory", "2048", "--vcpus", "2", "--replicas", "0",
                                   "--control-plane-replicas", "1", "--api-key-secret", "k"]])
def test_options_keep_the_objects_valid(schemas, args):
    for o in manifests("--image", "cellvm:dev", *args):
        assert object_errors(o, schemas) == [], o["kind"]


def test_what_the_objects_say(objects):
    tpl = by_kind(objects, "SandboxTemplate")
    pod = tpl["spec"]["podTemplate"]["spec"]
    (c,) = pod["containers"]
    assert c["image"] == "registry.example/cellvm:1.0"
    assert c["readinessProbe"]["httpGet"] == {"path": "/health", "port": 3000}
    assert c["resources"]["limits"]["devices.kubevirt.io/kvm"] == "1"
    env = {e["name"]: e for e in c["env"]}
    assert env["CELLVM_ACCEL"]["value"] == "kvm"
    assert env["CELLVM_API_KEY"]["valueFrom"]["secretKeyRef"] == {"name": "cellvm-api-key",
                                                                  "key": "api-key"}
    pool = by_kind(objects, "SandboxWarmPool")
    assert pool["spec"] == {"replicas": 5, "sandboxTemplateRef": {"name": "cellvm"}}
    role = by_kind(objects, "Role")
    rules = {(r["apiGroups"][0], r["resources"][0]): set(r["verbs"]) for r in role["rules"]}
    verbs = {"get", "list", "watch", "create", "delete"}
    assert rules == {("extensions.agents.x-k8s.io", "sandboxclaims"): verbs | {"patch"},
                     ("agents.x-k8s.io", "sandboxes"): verbs}
    dep = by_kind(objects, "Deployment")
    args = dep["spec"]["template"]["spec"]["containers"][0]["args"]
    assert args[:5] == ["serve", "--backend", "agent-sandbox", "--namespace", "agents"]
    assert dep["spec"]["selector"]["matchLabels"].items() <= \
        dep["spec"]["template"]["metadata"]["labels"].items()
    svc = by_kind(objects, "Service")
    assert svc["spec"]["selector"] == dep["spec"]["selector"]["matchLabels"]
    # The sandboxes admit the control plane's pods.
    peer = tpl["spec"]["networkPolicy"]["ingress"][0]["from"][0]["podSelector"]["matchLabels"]
    assert peer.items() <= dep["spec"]["template"]["metadata"]["labels"].items()
    (no_kvm,) = [o for o in manifests("--image", "x", "--no-kvm") if o["kind"] == "SandboxTemplate"]
    c = no_kvm["spec"]["podTemplate"]["spec"]["containers"][0]
    assert "devices.kubevirt.io/kvm" not in c["resources"]["limits"]
    assert {e["name"]: e.get("value") for e in c["env"]}["CELLVM_ACCEL"] == "tcg"


# --- the negative cases: each must fail ---------------------------------------

def mutated(objects, kind, change):
    o = copy.deepcopy(by_kind(objects, kind))
    change(o)
    return o


NEGATIVE = {
    "SandboxTemplate: unknown field in spec": (
        "SandboxTemplate", lambda o: o["spec"].__setitem__("replicas", 3)),
    "SandboxTemplate: unknown field in a container": (
        "SandboxTemplate",
        lambda o: o["spec"]["podTemplate"]["spec"]["containers"][0].__setitem__("imagePolicy", "x")),
    "SandboxTemplate: wrong type (service)": (
        "SandboxTemplate", lambda o: o["spec"].__setitem__("service", "yes")),
    "SandboxTemplate: wrong type (containerPort)": (
        "SandboxTemplate",
        lambda o: o["spec"]["podTemplate"]["spec"]["containers"][0]["ports"][0]
        .__setitem__("containerPort", "3000")),
    "SandboxTemplate: missing podTemplate": (
        "SandboxTemplate", lambda o: o["spec"].pop("podTemplate")),
    "SandboxTemplate: container without a name": (
        "SandboxTemplate", lambda o: o["spec"]["podTemplate"]["spec"]["containers"][0].pop("name")),
    "SandboxTemplate: unknown metadata field": (
        "SandboxTemplate", lambda o: o["metadata"].__setitem__("owner", "me")),
    "SandboxWarmPool: wrong type (replicas)": (
        "SandboxWarmPool", lambda o: o["spec"].__setitem__("replicas", "two")),
    "SandboxWarmPool: negative replicas": (
        "SandboxWarmPool", lambda o: o["spec"].__setitem__("replicas", -1)),
    "SandboxWarmPool: missing sandboxTemplateRef": (
        "SandboxWarmPool", lambda o: o["spec"].pop("sandboxTemplateRef")),
    "SandboxWarmPool: unknown field": (
        "SandboxWarmPool", lambda o: o["spec"].__setitem__("size", 2)),
    "Deployment: unknown field in the pod spec": (
        "Deployment", lambda o: o["spec"]["template"]["spec"].__setitem__("kvm", True)),
    "Deployment: wrong type (replicas)": (
        "Deployment", lambda o: o["spec"].__setitem__("replicas", "2")),
    "Deployment: missing selector": (
        "Deployment", lambda o: o["spec"].pop("selector")),
    "Service: wrong type (port)": (
        "Service", lambda o: o["spec"]["ports"][0].__setitem__("port", "3000")),
    "Role: missing verbs": (
        "Role", lambda o: o["rules"][0].pop("verbs")),
    "RoleBinding: missing roleRef": (
        "RoleBinding", lambda o: o.pop("roleRef")),
    "ServiceAccount: unknown top-level field": (
        "ServiceAccount", lambda o: o.__setitem__("spec", {})),
}


@pytest.mark.parametrize("case", sorted(NEGATIVE))
def test_a_broken_object_fails(objects, schemas, case):
    kind, change = NEGATIVE[case]
    assert object_errors(mutated(objects, kind, change), schemas) != [], case


def test_usage_errors():
    for args in (["kube", "manifests"], ["kube", "manifests", "--image", "a b"],
                 ["kube", "manifests", "--image", "x", "--namespace", "Not_A_Label"],
                 ["kube", "manifests", "--image", "x", "--replicas", "-1"],
                 ["kube", "manifests", "--image", "x", "--template-host-path", "relative"],
                 ["kube", "nothing"]):
        r = subprocess.run([CLI, *args], capture_output=True, text=True, timeout=30)
        assert r.returncode == 2 and r.stdout == "", (args, r.stdout, r.stderr)
    r = subprocess.run([CLI, "kube", "manifests", "--help"], capture_output=True, text=True,
                       timeout=30)
    assert r.returncode == 0 and "SandboxWarmPool" in r.stdout
