"""The opt-in "data" image profile (`make image-data` -> build/image-data,
docs/IMAGE.md, "The data profile"): the default image plus SciPy, seaborn,
scikit-learn, statsmodels and more of E2B's code-interpreter packages, with
python3-pythran (a compiler chain) stubbed out.

The first tests need no build: the default profile's inputs, and so its
base layer's cache key and image, are what they were before profiles
existed; the profiles' caches and stubs stay apart; the SDK's template
names. The others need build/image-data and skip with the reason when it was
not built (`make image-data` takes several minutes: no test starts it). The
VM test boots it under QEMU and runs seaborn, scikit-learn and SciPy.
"""

import base64
import hashlib
import json
import os
import subprocess
import sys

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
HERE = os.path.join(ROOT, "image-build")
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(ROOT, "client", "python"))

import build_image  # noqa: E402
from cellvm import Sandbox  # noqa: E402
from cellvm import launch, sandbox as sandbox_mod  # noqa: E402
from conftest import BOOT_TIMEOUT, FIRST_RUN_TIMEOUT, IMAGE  # noqa: E402
from test_image import is_build_tool  # noqa: E402

IMAGE_DATA = os.path.join(ROOT, "build", "image-data")
DATA_BUDGET = 900 * 1000 * 1000  # docs/IMAGE.md: "keep the profile under ~900 MB"
MIRRORS = ["deb http://deb.debian.org/debian bookworm main",
           "deb http://deb.debian.org/debian bookworm-updates main",
           "deb http://deb.debian.org/debian-security bookworm-security main"]
EXTRA = ["libc6", "libcbor0.8", "libpng16-16", "libseccomp2", "zlib1g"]


def provides(control_file):
    with open(os.path.join(HERE, control_file)) as f:
        line = next(ln for ln in f if ln.startswith("Provides:"))
    return [p.strip() for p in line.split(":", 1)[1].split(",")]


# ------------------------------------------------------- no build needed
def test_default_profile_base_key_is_the_one_from_before_profiles():
    """The default's base layer is hashed exactly as before the data profile
    existed (the same files, nothing else): an existing build/image-cache
    stays valid and the default image is built from the same inputs."""
    h = hashlib.sha256()  # build_image.base_key() as it was
    h.update(" ".join(EXTRA).encode() + b"\0")
    for name in ("packages.txt", "dpkg-excludes.txt", "customize-base.sh", "stub-control"):
        with open(os.path.join(HERE, name), "rb") as f:
            h.update(name.encode() + b"\0" + f.read() + b"\0")
    h.update("\n".join(MIRRORS).encode())
    assert build_image.base_key(MIRRORS, EXTRA) == h.hexdigest()[:16]
    assert build_image.base_key(MIRRORS, EXTRA, "default") == h.hexdigest()[:16]
    assert build_image.base_tar_name("default", "0123456789abcdef") == "base-0123456789abcdef.tar"
    default = build_image.PROFILES["default"]
    assert default == {"out": "image", "packages": ["packages.txt"],
                       "customize": ["customize-base.sh"], "stub": "stub-control"}
    assert build_image.profile_packages("default") == build_image.read_list(
        os.path.join(HERE, "packages.txt"))


def test_the_default_stub_keeps_its_provides_and_only_data_stubs_pythran():
    default, data = provides("stub-control"), provides("stub-control-data")
    # git's perl and liberror-perl (docs/IMAGE.md, "Everyday tools")
    assert default == ["python3-pil.imagetk", "libjs-jquery-ui", "perl", "liberror-perl"]
    assert data == default + ["python3-pythran"]
    listed = build_image.read_list(os.path.join(HERE, "packages.txt"))
    assert "python3-scipy" not in listed and "python3-munkres" in listed


def test_data_profile_is_a_superset_with_its_own_cache_key():
    default = build_image.profile_packages("default")
    data = build_image.profile_packages("data")
    assert data[:len(default)] == default
    for pkg in ("python3-scipy", "python3-seaborn", "python3-sklearn", "python3-statsmodels",
                "python3-openpyxl", "python3-xlrd", "python3-requests", "python3-bs4"):
        assert pkg in data, pkg
    assert not [p for p in data if is_build_tool(p)]
    assert build_image.PROFILES["data"]["out"] == "image-data"
    keys = {p: build_image.base_key(MIRRORS, EXTRA, p) for p in build_image.PROFILES}
    assert len(set(keys.values())) == len(keys)
    names = {p: build_image.base_tar_name(p, k) for p, k in keys.items()}
    assert names["data"] == f"base-data-{keys['data']}.tar"
    # a new base of one profile removes that profile's old tarballs only
    for p in names:
        for q, name in names.items():
            assert build_image.is_base_tar_of(p, name) == (p == q), (p, name)
            assert build_image.is_base_tar_of(p, name + ".part") == (p == q), (p, name)


def test_help_tells_the_profiles():
    r = subprocess.run([sys.executable, os.path.join(HERE, "build_image.py"), "--help"],
                       stdout=subprocess.PIPE, text=True, check=True)
    assert "--profile {data,default}" in r.stdout
    assert "make image-data" in r.stdout and "build/image-data" in r.stdout
    with open(os.path.join(HERE, "build.mk")) as f:
        assert "image-data: $(IMAGE_BINS)\n\t$(PYTHON) image-build/build_image.py --build $(B) " \
               "--profile data" in f.read()


def test_template_data_picks_the_data_image_beside_the_default(tmp_path, monkeypatch):
    for d in ("image", "image-data"):
        (tmp_path / d).mkdir()
        (tmp_path / d / "manifest.json").write_text("{}")
    monkeypatch.setenv(launch.IMAGE_ENV, str(tmp_path / "image"))
    monkeypatch.chdir(tmp_path)
    assert sandbox_mod._profile_image("data") == str(tmp_path / "image-data")
    assert sandbox_mod._profile_image("cellvm-data") == str(tmp_path / "image-data")
    assert sandbox_mod._profile_image("base") is None
    booted = []
    monkeypatch.setattr(launch, "create_sandbox",
                        lambda cls, image=None, **kw: booted.append(image) or Sandbox.__new__(cls))
    monkeypatch.delenv("CELLVM_ADDR", raising=False)
    Sandbox.create(template="data")
    Sandbox.create(template="code-interpreter-v1")
    Sandbox.create(image=str(tmp_path / "image"))
    assert booted == [str(tmp_path / "image-data"), None, str(tmp_path / "image")]
    # not built: the default image, with a warning naming the make target
    (tmp_path / "image-data" / "manifest.json").unlink()
    monkeypatch.setattr(launch, "_ROOT", str(tmp_path / "elsewhere"))
    assert sandbox_mod._profile_image("data") is None
    Sandbox.create(template="data")
    assert booted[-1] is None


# ---------------------------------------------------- needs `make image-data`
def data_image_or_skip():
    if not os.path.exists(os.path.join(IMAGE_DATA, "manifest.json")):
        pytest.skip(f"{IMAGE_DATA} not built: run `make image-data` (opt-in profile, "
                    "several minutes; not built by the test suite)")
    with open(os.path.join(IMAGE_DATA, "manifest.json")) as f:
        return json.load(f)


@pytest.fixture(scope="module")
def data_manifest():
    return data_image_or_skip()


def test_data_manifest_budget_and_no_compilers(data_manifest):
    m = data_manifest
    assert m["profile"] == "data" and m["format"] == 1
    for name in ("vmlinuz", "vmlinux", "initramfs.cpio.gz", "rootfs.ext4", "rootfs.erofs"):
        assert m["files"][name]["size"] == os.path.getsize(os.path.join(IMAGE_DATA, name)), name
    assert m["rootfs"]["base"].startswith("base-data-")
    assert os.path.getsize(os.path.join(IMAGE_DATA, "rootfs.ext4")) < DATA_BUDGET
    everything = m["packages"]["all"]
    requested = m["packages"]["requested"]
    assert set(requested) == set(build_image.profile_packages("data"))
    assert all(requested.values()), [p for p, v in requested.items() if not v]
    assert [p for p in everything if is_build_tool(p)] == []
    for unwanted in ("python3-pythran", "perl", "python3-tk", "usrmerge", "g++", "gcc"):
        assert unwanted not in everything, unwanted
    assert "cellvm-guest-stubs" in everything
    with open(os.path.join(IMAGE_DATA, "launch.txt")) as f:
        assert f"cmdline_base={m['cmdline']['base']}\n" in f.read()


def test_data_image_holds_the_default_image(data_manifest):
    if not os.path.exists(os.path.join(IMAGE, "manifest.json")):
        pytest.skip("build/image not built (`make image`)")
    with open(os.path.join(IMAGE, "manifest.json")) as f:
        default = json.load(f)
    assert default.get("profile", "default") == "default"
    assert os.path.getsize(os.path.join(IMAGE, "rootfs.ext4")) < 400 * 1000 * 1000
    assert "python3-scipy" not in default["packages"]["all"]
    # by name: the two base layers may have been built days apart (security updates)
    data = data_manifest["packages"]["all"]
    assert sorted(set(default["packages"]["all"]) - set(data)) == []
    assert data_manifest["kernel"] == default["kernel"]


@pytest.fixture(scope="module")
def data_sbx(data_manifest, monkeypatch_module):
    """build/image-data booted under QEMU (TCG here) through the SDK's
    template name, as an E2B program asks for a template."""
    monkeypatch_module.delenv("CELLVM_ADDR", raising=False)
    s = Sandbox.create(template="data", memory_mb=1024, boot_timeout=BOOT_TIMEOUT + FIRST_RUN_TIMEOUT,
                       request_timeout=FIRST_RUN_TIMEOUT)
    try:
        yield s
    finally:
        s.kill()


@pytest.fixture(scope="module")
def monkeypatch_module():
    mp = pytest.MonkeyPatch()
    yield mp
    mp.undo()


def test_data_image_runs_seaborn_sklearn_scipy(data_sbx):
    assert data_sbx.get_info().template_id == IMAGE_DATA
    ex = data_sbx.run_code(
        "import seaborn as sns, sklearn, scipy.stats\n"
        "import matplotlib.pyplot as plt, pandas as pd\n"
        "from sklearn.datasets import make_classification\n"
        "from sklearn.linear_model import LogisticRegression\n"
        "X, y = make_classification(n_samples=200, n_features=4, random_state=0)\n"
        "model = LogisticRegression().fit(X, y)\n"
        "df = pd.DataFrame(X[:, :2], columns=['a', 'b']).assign(label=y)\n"
        "ax = sns.scatterplot(data=df, x='a', y='b', hue='label')\n"
        "plt.show()\n"
        "t = scipy.stats.ttest_ind(X[y == 0, 0], X[y == 1, 0])\n"
        "print(sklearn.__version__, sns.__version__, scipy.__version__)\n"
        "print(type(model).__name__, model.coef_.shape, t.pvalue < 1)\n"
        "round(model.score(X, y), 3)",
        timeout=FIRST_RUN_TIMEOUT * 2)
    assert ex.error is None, ex.error
    lines = "".join(ex.logs.stdout).splitlines()
    versions = lines[0].split()
    assert versions[0].startswith("1.2.") and versions[1].startswith("0.12.") \
        and versions[2].startswith("1.10."), lines
    assert lines[1] == "LogisticRegression (1, 4) True", lines
    assert 0.8 < float(ex.text) <= 1.0, ex.text
    pngs = [r for r in ex.results if r.png]
    assert len(pngs) == 1, ex.results
    png = base64.b64decode(pngs[0].png)
    assert png.startswith(b"\x89PNG\r\n\x1a\n") and len(png) > 10000


def test_data_image_imports_the_rest_of_the_profile(data_sbx):
    modules = ["statsmodels.api", "skimage", "plotly.express", "xarray", "imageio", "openpyxl",
               "xlrd", "docx", "requests", "urllib3", "aiohttp", "bs4", "nltk", "soundfile",
               "tornado", "pytest", "sympy", "pytz", "IPython.display"]
    ex = data_sbx.run_code(
        "import importlib\n"
        f"for name in {modules!r}:\n"
        "    importlib.import_module(name)\n"
        "import sympy, openpyxl, statsmodels.api as sm, numpy as np\n"
        "wb = openpyxl.Workbook(); wb.active['A1'] = 2; wb.save('t.xlsx')\n"
        "ols = sm.OLS(np.arange(10.0) * 3 + 1, sm.add_constant(np.arange(10.0))).fit()\n"
        "print(sympy.integrate(sympy.Symbol('x') ** 2), openpyxl.load_workbook('t.xlsx').active['A1'].value,"
        " [round(float(p), 6) for p in ols.params])",
        timeout=FIRST_RUN_TIMEOUT * 2)
    assert ex.error is None, ex.error
    assert "".join(ex.logs.stdout).strip() == "x**3/3 2 [1.0, 3.0]"
