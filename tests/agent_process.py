"""A real cellvm-agent process on a Unix socket, for tests (conftest's
fixtures) and for the E2B conformance runner (tests/conformance/).

CELLVM_BUILD selects the build directory (default build/; build/san for the
sanitizer build)."""

import os
import signal
import subprocess
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
BUILD = os.environ.get("CELLVM_BUILD", os.path.join(ROOT, "build"))
AGENT = os.path.join(BUILD, "cellvm-agent")


class AgentProcess:
    """A cellvm-agent serving on unix:<tmp>/agent.sock until stop()."""

    def __init__(self, *extra_args, preload=None, launcher=None, agent_workdir=None):
        """`launcher(workdir)`: the argv the agent's argv is appended to, a
        wrapper that execs it (into a mount namespace, say), given the host
        directory `workdir`; `agent_workdir`: the --workdir the agent is
        given, where that wrapper shows it `workdir`."""
        self.dir = tempfile.mkdtemp(prefix="cellvm-test-")
        # A root agent runs user code and file operations as the sandbox user
        # (uid 1000 here): it must be able to reach the workdir below this.
        os.chmod(self.dir, 0o711)
        self.sock = os.path.join(self.dir, "agent.sock")
        self.workdir = os.path.join(self.dir, "work")
        os.mkdir(self.workdir)
        self.addr = "unix:" + self.sock
        self.log_path = os.path.join(self.dir, "agent.log")
        args = list(launcher(self.workdir)) if launcher else []
        args += [AGENT, "--listen", self.addr, "--workdir", agent_workdir or self.workdir]
        if preload is not None:
            args += ["--preload", preload]
        args += list(extra_args)
        self.log = open(self.log_path, "wb")
        self.proc = subprocess.Popen(args, stdout=self.log, stderr=subprocess.STDOUT)
        deadline = time.monotonic() + 30
        while not os.path.exists(self.sock):
            if self.proc.poll() is not None:
                raise RuntimeError(f"agent exited with {self.proc.returncode}: {self.read_log()}")
            if time.monotonic() > deadline:
                self.stop()
                raise RuntimeError("agent did not listen within 30 s: " + self.read_log())
            time.sleep(0.01)

    def give_to_sandbox_user(self, path):
        """chown `path` to the workdir's owner (the sandbox user once a root agent
        took the workdir over), for test fixtures made by this root process."""
        st = os.stat(self.workdir)
        os.chown(path, st.st_uid, st.st_gid)
        return path

    def read_log(self):
        with open(self.log_path, "rb") as f:
            return f.read().decode(errors="replace")

    SANITIZER_MARKS = ("ERROR: AddressSanitizer", "ERROR: LeakSanitizer", "runtime error:")

    def sanitizer_report(self):
        """The agent's log from the first ASan/LSan/UBSan report on, or None."""
        log = self.read_log()
        hits = [log.find(m) for m in self.SANITIZER_MARKS if m in log]
        return log[min(hits):][:4000] if hits else None

    def stop(self):
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self.log.close()
        return self.proc.returncode
