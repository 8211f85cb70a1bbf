"""E2B's pause and resume through `cellvm serve`'s control plane, spoken raw
(docs/SERVE.md, "Pause and resume"; PROTOCOL_NOTES.md: pause is 204, 409
`{"code": 409}` when already paused; connect is 201 when it resumed, 200 when
it was running; the deprecated /resume is 201, 409 when running), with real
QEMU VMs: the paused sandbox's state (a variable through the code
interpreter, a file through envd) survives, list and info show it paused with
its metadata, kill drops its record, and the server leaves nothing behind.
E2B's npm SDK does the same in tests/test_serve_sdk.py's test_g_pause.
"""

import json
import os
import sys
import time
import urllib.parse
import urllib.request

import pytest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import http_direct  # noqa: E402
from conftest import build_image_or_skip  # noqa: E402
from serve_process import serving  # noqa: E402


@pytest.fixture(scope="module")
def serve(tmp_path_factory):
    build_image_or_skip()
    yield from serving(str(tmp_path_factory.mktemp("serve-pause")))


def call(serve, method, path, body=None, headers=None, timeout=120):
    """(status, parsed JSON body or None)."""
    data = None if body is None else json.dumps(body).encode()
    h = {"X-API-Key": serve.key, **(headers or {})}
    if data is not None:
        h["Content-Type"] = "application/json"
    status, raw = http_direct.request(serve.url + path, data=data, method=method, headers=h,
                                      timeout=timeout)
    return status, (json.loads(raw) if raw else None)


def run_code(serve, sbx, code):
    """The code interpreter's /execute: the text of its result."""
    req = urllib.request.Request(
        serve.url + "/execute", data=json.dumps({"code": code}).encode(), method="POST",
        headers={"E2b-Sandbox-Id": sbx["sandboxID"], "E2b-Sandbox-Port": "49999",
                 "X-Access-Token": sbx["envdAccessToken"], "Content-Type": "application/json"})
    with http_direct.DIRECT.open(req, timeout=120) as r:
        lines = [json.loads(x) for x in r.read().decode().splitlines() if x.strip()]
    errors = [x for x in lines if x.get("type") == "error"]
    assert not errors, errors
    return [x.get("text") for x in lines if x.get("type") == "result"]


def files(serve, sbx, method, path, data=None):
    return http_direct.request(
        serve.url + "/files?" + urllib.parse.urlencode({"path": path, "username": "user"}),
        data=data, method=method, timeout=60,
        headers={"E2b-Sandbox-Id": sbx["sandboxID"], "E2b-Sandbox-Port": "49983",
                 "X-Access-Token": sbx["envdAccessToken"],
                 **({"Content-Type": "application/octet-stream"} if data is not None else {})})


def listed(serve, query, v2=True):
    status, body = call(serve, "GET", ("/v2/sandboxes?" if v2 else "/sandboxes?") + query)
    assert status == 200, body
    return {x["sandboxID"]: x["state"] for x in body}


def test_pause_list_info_connect_and_kill(serve):
    meta = {"suite": "serve-pause", "run": os.urandom(4).hex()}
    q = urllib.parse.quote(urllib.parse.urlencode(meta))
    status, sbx = call(serve, "POST", "/sandboxes", {"templateID": "base", "metadata": meta,
                                                      "timeout": 600})
    assert status == 201, sbx
    sid = sbx["sandboxID"]
    status, other = call(serve, "POST", "/sandboxes", {"metadata": meta})
    assert status == 201, other
    try:
        assert run_code(serve, sbx, "kept = 40") == []
        assert files(serve, sbx, "POST", "/home/user/kept.txt", b"kept across pause")[0] == 200

        assert call(serve, "POST", f"/sandboxes/{sid}/pause") == (204, None)
        status, body = call(serve, "POST", f"/sandboxes/{sid}/pause")
        assert status == 409 and body["code"] == 409 and "already paused" in body["message"]
        status, body = call(serve, "POST", "/sandboxes/qemu-00000000/pause")
        assert status == 404 and body["code"] == 404
        # Paused: listed as such (v1 and v2, state filters), described, unreachable.
        assert listed(serve, f"metadata={q}&state=paused") == {sid: "paused"}
        assert listed(serve, f"metadata={q}&state=running") == {other["sandboxID"]: "running"}
        assert listed(serve, f"metadata={q}") == {sid: "paused", other["sandboxID"]: "running"}
        assert listed(serve, f"metadata={q}&state=paused", v2=False) == {sid: "paused"}
        status, info = call(serve, "GET", f"/sandboxes/{sid}")
        assert status == 200 and info["state"] == "paused" and info["metadata"] == meta, info
        assert files(serve, sbx, "GET", "/home/user/kept.txt")[0] == 502  # as an unknown one
        assert os.listdir(os.path.join(serve.paused, sid))  # its record

        # connect resumes it (201), with its token, state and a deadline from now.
        t0 = time.time()
        status, body = call(serve, "POST", f"/sandboxes/{sid}/connect", {"timeout": 120})
        assert status == 201, body
        assert body["sandboxID"] == sid and body["envdAccessToken"] == sbx["envdAccessToken"]
        assert run_code(serve, sbx, "kept + 2") == ["42"]
        assert files(serve, sbx, "GET", "/home/user/kept.txt") == (200, b"kept across pause")
        status, info = call(serve, "GET", f"/sandboxes/{sid}")
        assert info["state"] == "running", info
        end = time.mktime(time.strptime(info["endAt"][:19], "%Y-%m-%dT%H:%M:%S")) - time.timezone
        assert t0 + 100 < end < time.time() + 121, info
        assert not os.path.exists(os.path.join(serve.paused, sid))  # the record is consumed
        status, body = call(serve, "POST", f"/v2/sandboxes/{sid}/connect", {})
        assert status == 200 and body["sandboxID"] == sid, body  # running already
        status, body = call(serve, "POST", f"/sandboxes/{sid}/resume", {})
        assert status == 409 and body["code"] == 409, body

        # The deprecated /resume resumes too (201); a paused one's kill drops it.
        assert call(serve, "POST", f"/sandboxes/{sid}/pause") == (204, None)
        status, body = call(serve, "POST", f"/sandboxes/{sid}/resume", {"timeout": 60})
        assert status == 201 and body["sandboxID"] == sid, body
        assert run_code(serve, sbx, "kept") == ["40"]
        assert call(serve, "POST", f"/sandboxes/{sid}/pause") == (204, None)
        assert call(serve, "DELETE", f"/sandboxes/{sid}") == (204, None)
        assert call(serve, "DELETE", f"/sandboxes/{sid}")[0] == 404
        assert call(serve, "GET", f"/sandboxes/{sid}")[0] == 404
        status, body = call(serve, "POST", f"/sandboxes/{sid}/connect", {})
        assert status == 404 and body["code"] == 404, body
        assert sorted(os.listdir(serve.paused)) == ["lock"]
        assert listed(serve, f"metadata={q}") == {other["sandboxID"]: "running"}
    finally:
        call(serve, "DELETE", f"/sandboxes/{sid}")
        call(serve, "DELETE", f"/sandboxes/{other['sandboxID']}")


def test_a_paused_sandbox_outlives_its_timeout_and_resumes(serve):
    """While paused a sandbox has no deadline (E2B keeps it until killed): the
    reaper does not end it, and connect gives it one again."""
    status, sbx = call(serve, "POST", "/sandboxes", {"timeout": 8})
    assert status == 201, sbx
    sid = sbx["sandboxID"]
    try:
        assert run_code(serve, sbx, "alive = 7") == []
        assert call(serve, "POST", f"/sandboxes/{sid}/pause") == (204, None)
        time.sleep(10)  # past its timeout: a running one would be ended by now
        status, info = call(serve, "GET", f"/sandboxes/{sid}")
        assert status == 200 and info["state"] == "paused", info
        status, body = call(serve, "POST", f"/sandboxes/{sid}/connect", {"timeout": 60})
        assert status == 201, body
        assert run_code(serve, sbx, "alive * 6") == ["42"]
    finally:
        call(serve, "DELETE", f"/sandboxes/{sid}")


def test_auto_pause_at_the_timeout_then_connect_resumes(serve):
    """E2B's lifecycle onTimeout "pause" (the create's `autoPause`): at its
    timeout the sandbox is paused, not killed, and connect wakes it."""
    status, sbx = call(serve, "POST", "/sandboxes", {"timeout": 3, "autoPause": True,
                                                      "autoResume": {"enabled": False}})
    assert status == 201, sbx
    sid = sbx["sandboxID"]
    try:
        assert run_code(serve, sbx, "woke = 21") == []
        status, info = call(serve, "GET", f"/sandboxes/{sid}")
        assert info["lifecycle"] == {"onTimeout": "pause", "autoResume": False}, info
        wait_paused(serve, sid)  # at its timeout
        assert listed(serve, "state=paused").get(sid) == "paused"
        status, body = call(serve, "POST", f"/sandboxes/{sid}/connect", {"timeout": 60})
        assert status == 201, body
        assert run_code(serve, sbx, "woke * 2") == ["42"]
        status, info = call(serve, "GET", f"/sandboxes/{sid}")
        assert info["state"] == "running" and info["lifecycle"]["onTimeout"] == "pause", info
    finally:
        call(serve, "DELETE", f"/sandboxes/{sid}")
    with open(serve.log_path, errors="replace") as f:
        assert f"sandbox {sid} paused: its timeout passed (autoPause)" in f.read()


def wait_paused(serve, sid):
    """Until the reaper paused `sid` at its timeout (bounded generously, as
    the reaper and TCG take their time); its last info."""
    for _ in range(240):
        status, info = call(serve, "GET", f"/sandboxes/{sid}")
        if info.get("state") == "paused" and os.path.isdir(os.path.join(serve.paused, sid)):
            return info
        time.sleep(0.5)
    raise AssertionError(f"sandbox {sid} was not paused: {info}")


def port_get(serve, sid, port, path="/"):
    return http_direct.request(serve.url + path,
                               headers={"E2b-Sandbox-Id": sid, "E2b-Sandbox-Port": str(port)})


def test_auto_resume_wakes_a_paused_sandbox_for_a_request(serve):
    """E2B's lifecycle {onTimeout: "pause", autoResume: true} (the create's
    `autoResume: {enabled: true}`): paused at its timeout, woken by the next
    request routed to it (one of its ports, the code interpreter), with its
    processes and variables, and paused again at its next timeout."""
    for bad, word in (({"timeout": 3, "autoResume": {"enabled": True}}, "autoPause"),
                      ({"timeout": 3, "autoPause": True, "autoPauseMemory": False,
                        "autoResume": {"enabled": True}}, "filesystem-only"),
                      ({"timeout": 3, "autoPause": True, "autoResume": {"enabled": "yes"}},
                       "autoResume")):
        status, body = call(serve, "POST", "/sandboxes", bad)
        assert status == 400 and word in body["message"], (bad, body)
    status, sbx = call(serve, "POST", "/sandboxes", {"timeout": 4, "autoPause": True,
                                                      "autoResume": {"enabled": True}})
    assert status == 201, sbx
    sid = sbx["sandboxID"]
    try:
        assert run_code(serve, sbx, "\n".join([
            "import subprocess",
            "web = subprocess.Popen(['python3', '-m', 'http.server', '8000', '--bind',",
            "                        '127.0.0.1', '--directory', '/etc'], start_new_session=True,",
            "                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)",
            "woke = 21"])) == []
        status, info = call(serve, "GET", f"/sandboxes/{sid}")
        assert info["lifecycle"] == {"onTimeout": "pause", "autoResume": True}, info
        wait_paused(serve, sid)
        # A request to one of its ports wakes it; its server ran on.
        status, page = port_get(serve, sid, 8000, "/hostname")
        assert status == 200 and page.strip(), (status, page[:300])
        status, info = call(serve, "GET", f"/sandboxes/{sid}")
        assert info["state"] == "running" and info["lifecycle"]["autoResume"] is True, info
        # Paused again at its next timeout; the code interpreter wakes it too.
        wait_paused(serve, sid)
        assert run_code(serve, sbx, "woke * 2") == ["42"]
    finally:
        call(serve, "DELETE", f"/sandboxes/{sid}")
    with open(serve.log_path, errors="replace") as f:
        log = f.read()
    assert log.count(f"sandbox {sid} resumed by a request (autoResume)") == 2, log[-3000:]


def manifest_fields(path):
    with open(os.path.join(path, "manifest")) as f:
        return dict(line.split("=", 1) for line in f.read().splitlines()[1:] if "=" in line)


def test_files_only_pause_reboots_and_keeps_the_files(serve):
    """E2B's pause({keepMemory: false}) (`{"memory": false}`): the record keeps
    the files the sandbox changed (image-build/guest/fs-snapshot) and no
    memory; connect boots it anew (a new boot id, no variables) with those
    files: written, deleted, replaced by a link, owned as before, in /tmp too."""
    status, sbx = call(serve, "POST", "/sandboxes", {"timeout": 600})
    assert status == 201, sbx
    sid = sbx["sandboxID"]
    try:
        assert files(serve, sbx, "POST", "/home/user/kept.txt", b"kept without memory")[0] == 200
        boot = run_code(serve, sbx, "\n".join([
            "import os, shutil",
            "kept = 40",
            "os.remove('/home/user/.bashrc')",
            "os.symlink('kept.txt', '/home/user/link')",
            "os.makedirs('/home/user/d/e'); open('/home/user/d/e/f', 'wb').write(bytes(range(256)) * 4096)",
            "open('/tmp/t.txt', 'w').write('tmp too')",
            "open('/proc/sys/kernel/random/boot_id').read().strip()"]))
        assert len(boot) == 1 and len(boot[0]) == 36, boot

        status, body = call(serve, "POST", f"/sandboxes/{sid}/pause", {"memory": "no"})
        assert status == 400 and "memory" in body["message"], body
        assert call(serve, "POST", f"/sandboxes/{sid}/pause", {"memory": False}) == (204, None)
        record = os.path.join(serve.paused, sid)
        m = manifest_fields(record)
        assert m["kind"] == "paused" and m["filesystem"] == "fs.tar", m
        assert int(m["state_size"]) == os.path.getsize(os.path.join(record, "fs.tar")) > 1 << 20
        assert not os.path.exists(os.path.join(record, "state"))  # no memory kept
        status, info = call(serve, "GET", f"/sandboxes/{sid}")
        assert status == 200 and info["state"] == "paused", info

        status, body = call(serve, "POST", f"/sandboxes/{sid}/connect", {"timeout": 120})
        assert status == 201, body
        assert body["sandboxID"] == sid and body["envdAccessToken"] == sbx["envdAccessToken"]
        assert not os.path.exists(record)
        after = run_code(serve, sbx, "\n".join([
            "import os, stat",
            "st = os.lstat('/home/user/d/e/f')",
            f"[ open('/proc/sys/kernel/random/boot_id').read().strip() != {boot[0]!r},",
            "  'kept' in dir(), os.path.exists('/home/user/.bashrc'),",
            "  os.readlink('/home/user/link'), open('/tmp/t.txt').read(),",
            "  open('/home/user/d/e/f', 'rb').read() == bytes(range(256)) * 4096,",
            "  st.st_uid, stat.S_IMODE(st.st_mode) & 0o700 ]"]))
        assert after == ["[True, False, False, 'kept.txt', 'tmp too', True, 1000, 384]"], after
        assert files(serve, sbx, "GET", "/home/user/kept.txt") == (200, b"kept without memory")
        status, out = call(serve, "GET", f"/sandboxes/{sid}")
        assert out["state"] == "running", out
    finally:
        call(serve, "DELETE", f"/sandboxes/{sid}")
    with open(serve.log_path, errors="replace") as f:
        assert f"sandbox {sid} paused (its files only)" in f.read()


def guest_time(serve, sbx):
    return float(run_code(serve, sbx, "import time; time.time()")[0])


def test_fork_copies_a_running_sandbox_that_runs_on(serve):
    """E2B's fork (`POST /sandboxes/{id}/fork`, body {timeout, count}, 201 with
    one {sandbox} or {error} per fork): the sandbox is saved whole and runs on
    with its id, state, deadline and this host's clock; each fork is a copy
    with its own id, token, deadline and generation (its random generators
    reseeded), the files and variables of the moment, and a life of its own."""
    meta = {"suite": "serve-fork", "run": os.urandom(4).hex()}
    q = urllib.parse.quote(urllib.parse.urlencode(meta))
    status, sbx = call(serve, "POST", "/sandboxes", {"metadata": meta, "timeout": 600})
    assert status == 201, sbx
    sid = sbx["sandboxID"]
    forks = []
    try:
        assert run_code(serve, sbx, "import random\nkept = 40") == []
        assert files(serve, sbx, "POST", "/home/user/state.txt", b"before fork")[0] == 200
        _, before = call(serve, "GET", f"/sandboxes/{sid}")
        for bad in ({"count": 0}, {"count": 101}, {"count": "2"}, {"count": 1.5},
                    {"timeout": -1}):
            status, body = call(serve, "POST", f"/sandboxes/{sid}/fork", bad)
            assert status == 400 and body["code"] == 400, (bad, body)
        status, body = call(serve, "POST", "/sandboxes/qemu-00000000/fork", {})
        assert status == 404 and body["code"] == 404, body

        status, got = call(serve, "POST", f"/sandboxes/{sid}/fork", {"count": 2, "timeout": 120},
                           timeout=300)
        assert status == 201 and len(got) == 2 and all("error" not in g for g in got), got
        forks = [g["sandbox"] for g in got]
        ids = [f["sandboxID"] for f in forks]
        assert len({sid, *ids}) == 3 and all(i.startswith("qemu-") for i in ids), ids
        tokens = {f["envdAccessToken"] for f in forks} | {sbx["envdAccessToken"]}
        assert len(tokens) == 3, forks

        # The source runs on as it was: its state, its deadline, this host's clock.
        assert run_code(serve, sbx, "kept + 2") == ["42"]
        assert abs(guest_time(serve, sbx) - time.time()) < 2
        _, info = call(serve, "GET", f"/sandboxes/{sid}")
        assert info["state"] == "running" and info["endAt"] == before["endAt"], (before, info)
        # Each fork has the moment's variables and files, its own clock set.
        for f in forks:
            assert run_code(serve, f, "kept") == ["40"]
            assert files(serve, f, "GET", "/home/user/state.txt") == (200, b"before fork")
            assert abs(guest_time(serve, f) - time.time()) < 2
            # One sandbox's token opens no other.
            other = dict(f, envdAccessToken=sbx["envdAccessToken"])
            assert files(serve, other, "GET", "/home/user/state.txt")[0] == 401
        # ... and a life of its own.
        assert files(serve, forks[0], "POST", "/home/user/state.txt", b"in fork 0")[0] == 200
        assert run_code(serve, forks[0], "kept = 0") == []
        assert files(serve, sbx, "GET", "/home/user/state.txt") == (200, b"before fork")
        assert files(serve, forks[1], "GET", "/home/user/state.txt") == (200, b"before fork")
        assert run_code(serve, sbx, "kept") == ["40"]
        # Every copy draws its own random numbers (a generation each).
        draws = [run_code(serve, x, "random.random()")[0] for x in (sbx, *forks)]
        assert len(set(draws)) == 3, draws

        # Listed with the source's metadata, their own start and timeout.
        assert listed(serve, f"metadata={q}") == {sid: "running", ids[0]: "running",
                                                  ids[1]: "running"}
        _, info = call(serve, "GET", f"/sandboxes/{ids[0]}")
        end = time.mktime(time.strptime(info["endAt"][:19], "%Y-%m-%dT%H:%M:%S")) - time.timezone
        assert time.time() + 30 < end < time.time() + 121, info
        assert info["startedAt"] > before["startedAt"] and info["metadata"] == meta, info
        assert not [d for d in os.listdir(serve.paused) if d != "lock"]  # no record left

        # A paused sandbox is not forked (409); a killed one is not found (404).
        assert call(serve, "POST", f"/sandboxes/{ids[1]}/pause") == (204, None)
        status, body = call(serve, "POST", f"/sandboxes/{ids[1]}/fork", {})
        assert status == 409 and body["code"] == 409, body
        assert call(serve, "DELETE", f"/sandboxes/{ids[0]}") == (204, None)
        status, body = call(serve, "POST", f"/sandboxes/{ids[0]}/fork", {})
        assert status == 404 and body["code"] == 404, body
    finally:
        for i in [sid] + [f["sandboxID"] for f in forks]:
            call(serve, "DELETE", f"/sandboxes/{i}")
    assert sorted(os.listdir(serve.paused)) == ["lock"]
    with open(serve.log_path, errors="replace") as f:
        log = f.read()
    assert f"sandbox {ids[0]} forked from {sid}" in log, log[-3000:]


def snapshots(serve, query=""):
    status, body = call(serve, "GET", "/snapshots" + (f"?{query}" if query else ""))
    assert status == 200, body
    return [s["snapshotID"] for s in body]


def test_snapshots_keep_a_running_sandbox_for_new_ones(serve):
    """E2B's snapshots API: `POST /sandboxes/{id}/snapshots` keeps the sandbox's
    whole state (memory too) while it runs on; a create naming the snapshot
    (its id or name) makes a new sandbox of it, each a copy of its own with
    the create's metadata; the snapshot outlives its sandbox; a name names the
    newest snapshot given it; `DELETE /templates/{id}` drops one. The JS
    suite's tests/sandbox/snapshot-api.test.ts checks the SDK's side."""
    status, sbx = call(serve, "POST", "/sandboxes", {"timeout": 600, "metadata": {"k": "src"}})
    assert status == 201, sbx
    sid = sbx["sandboxID"]
    made, made_sbx, kept = [], [], []
    try:
        assert run_code(serve, sbx, "import random\nkept = 7") == []
        assert files(serve, sbx, "POST", "/home/user/snap.txt", b"at the snapshot")[0] == 200
        for bad in ({"name": "two words"}, {"name": 5}, {"name": ""}, {"name": ".hidden"}):
            status, body = call(serve, "POST", f"/sandboxes/{sid}/snapshots", bad)
            assert status == 400 and body["code"] == 400, (bad, body)
        status, body = call(serve, "POST", "/sandboxes/qemu-00000000/snapshots", {})
        assert status == 404 and body["code"] == 404, body

        status, plain = call(serve, "POST", f"/sandboxes/{sid}/snapshots", {}, timeout=300)
        assert status == 201 and plain["snapshotID"].endswith(":default"), plain
        assert plain["names"] == [], plain
        kept.append(plain["snapshotID"])
        status, named = call(serve, "POST", f"/sandboxes/{sid}/snapshots", {"name": "nb-snap"},
                             timeout=300)
        assert status == 201, named
        assert named == {"snapshotID": "nb-snap:default", "names": ["nb-snap:default"]}, named
        kept.append(named["snapshotID"])
        # The source runs on, then changes and ends: the snapshots keep their moment.
        assert run_code(serve, sbx, "kept + 1") == ["8"]
        assert run_code(serve, sbx, "kept = 100") == []
        assert call(serve, "DELETE", f"/sandboxes/{sid}") == (204, None)

        assert set(snapshots(serve)) == set(kept)
        assert set(snapshots(serve, f"sandboxID={sid}")) == set(kept)
        assert snapshots(serve, "name=nb-snap") == ["nb-snap:default"]
        assert snapshots(serve, "name=nb-snap:v2") == []
        assert len(snapshots(serve, "limit=1")) == 1

        # New sandboxes of it, by id or by name: the moment's variables and files,
        # the create's metadata, an id and a generation of their own.
        for ref in (plain["snapshotID"], "nb-snap"):
            status, one = call(serve, "POST", "/sandboxes",
                               {"templateID": ref, "timeout": 300, "metadata": {"k": ref}},
                               timeout=300)
            assert status == 201 and one["sandboxID"] not in (sid, *made), one
            made.append(one["sandboxID"])
            assert run_code(serve, one, "kept") == ["7"]
            assert files(serve, one, "GET", "/home/user/snap.txt") == (200, b"at the snapshot")
            _, info = call(serve, "GET", f"/sandboxes/{one['sandboxID']}")
            assert info["state"] == "running" and info["metadata"] == {"k": ref}, info
            made_sbx.append(one)
        draws = {run_code(serve, one, "random.random()")[0] for one in made_sbx}
        assert len(draws) == 2, draws

        # A name names the newest snapshot given it.
        status, again = call(serve, "POST", f"/sandboxes/{made[0]}/snapshots", {"name": "nb-snap"},
                             timeout=300)
        assert status == 201 and again["snapshotID"] == "nb-snap:default", again
        assert snapshots(serve, f"sandboxID={made[0]}") == ["nb-snap:default"]
        assert snapshots(serve, f"sandboxID={sid}") == [plain["snapshotID"]]

        # Dropped: once (then 404), and a create naming it finds no template.
        assert call(serve, "DELETE", f"/templates/{plain['snapshotID']}") == (204, None)
        status, body = call(serve, "DELETE", f"/templates/{plain['snapshotID']}")
        assert status == 404 and body["code"] == 404, body
        for gone in (plain["snapshotID"], "nb-snap:v2", "a/b/nb-snap", "./nb-snap"):
            status, body = call(serve, "POST", "/sandboxes", {"templateID": gone})
            assert status == 404 and body["code"] == 404 and "not found" in body["message"], body
        kept.remove(plain["snapshotID"])
    finally:
        for i in [sid, *made]:
            call(serve, "DELETE", f"/sandboxes/{i}")
        for k in kept:
            call(serve, "DELETE", f"/templates/{k}")
    assert snapshots(serve) == []
    assert os.listdir(serve.snapshots) == ["lock"]  # the store's, as the paused store's
    assert sorted(os.listdir(serve.paused)) == ["lock"]
