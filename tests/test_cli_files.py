"""`cellvm put/get/ls/sh` (client/c/files.c) against a real agent."""

import hashlib
import os
import subprocess

from conftest import BUILD

CLI = os.path.join(BUILD, "cellvm")


def cli(agent, *args, timeout=20):
    return subprocess.run([CLI, "--connect", agent.addr, *args], capture_output=True, text=True,
                          timeout=timeout)


def test_put_get_round_trip_of_a_multi_chunk_file(fresh_agent, tmp_path):
    src = tmp_path / "src.bin"
    src.write_bytes(os.urandom(3 * 1024 * 1024 + 123))  # several 1 MiB pieces and a tail
    r = cli(fresh_agent, "put", str(src), "plain")
    assert r.returncode == 0, r.stderr
    r = cli(fresh_agent, "put", str(src), "plain/below")  # a file where a directory must be
    assert r.returncode == 1 and "invalid_argument" in r.stderr and "ENOTDIR" in r.stderr
    r = cli(fresh_agent, "put", str(src), "data/blob.bin")  # data/ is created, as E2B does
    assert r.returncode == 0, r.stderr
    assert (hashlib.sha256((open(os.path.join(fresh_agent.workdir, "data", "blob.bin"), "rb").read())).digest()
            == hashlib.sha256(src.read_bytes()).digest())
    dst = tmp_path / "back.bin"
    r = cli(fresh_agent, "get", "data/blob.bin", str(dst))
    assert r.returncode == 0, r.stderr
    assert dst.read_bytes() == src.read_bytes()
    assert not list(tmp_path.glob("*.cellvm-partial"))


def test_put_of_an_empty_file(fresh_agent, tmp_path):
    src = tmp_path / "empty"
    src.write_bytes(b"")
    assert cli(fresh_agent, "put", str(src), "empty.txt").returncode == 0
    assert os.path.getsize(os.path.join(fresh_agent.workdir, "empty.txt")) == 0


def test_get_of_a_missing_file_names_it_and_leaves_nothing(fresh_agent, tmp_path):
    dst = tmp_path / "out"
    r = cli(fresh_agent, "get", "nope.txt", str(dst))
    assert r.returncode == 1
    assert "nope.txt" in r.stderr and "No such file or directory" in r.stderr
    assert not dst.exists() and not list(tmp_path.iterdir())


def test_put_of_a_missing_local_file(fresh_agent, tmp_path):
    r = cli(fresh_agent, "put", str(tmp_path / "absent"), "x")
    assert r.returncode != 0 and "absent" in r.stderr


def test_ls_lists_entries_like_ls_l(fresh_agent):
    os.mkdir(os.path.join(fresh_agent.workdir, "sub"))
    with open(os.path.join(fresh_agent.workdir, "a.txt"), "w") as f:
        f.write("hello")
    r = cli(fresh_agent, "ls")
    assert r.returncode == 0, r.stderr
    lines = r.stdout.splitlines()
    file_line = next(line for line in lines if line.endswith("/a.txt"))
    assert file_line.startswith("-rw-") and " 5 " in file_line
    dir_line = next(line for line in lines if line.endswith("/sub/"))
    assert dir_line.startswith("d")


def test_sh_passes_output_and_exit_status_through(fresh_agent):
    r = cli(fresh_agent, "sh", "echo out; echo err >&2; exit 7")
    assert r.returncode == 7
    assert r.stdout == "out\n" and r.stderr == "err\n"
    assert cli(fresh_agent, "sh", "true").returncode == 0


def test_sh_reports_signals_as_shells_do(fresh_agent):
    r = cli(fresh_agent, "sh", "kill -TERM $$")
    assert r.returncode == 128 + 15
    assert "signal: terminated" in r.stderr


def test_sh_timeout(fresh_agent):
    r = cli(fresh_agent, "sh", "--timeout", "0.5", "sleep 30")
    assert r.returncode == 124
    assert "timeout" in r.stderr
