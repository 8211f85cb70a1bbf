"""IPython.core.logger's counterpart: the log file of %logstart, which gets
each cell's input (translated, or raw with -r) and, with -o, its result as
`#[Out]#` comment lines. get_ipython().logger is one."""

import glob
import io
import os
import time

_MODES = ("append", "backup", "global", "over", "rotate")


class Logger:
        """IPython's Logger: the same attributes and messages, its file policies
        (append, backup, global, over, rotate)."""

        def __init__(self, home_dir, logfname="Logger.log", loghead="", logmode="over"):
                self.home_dir = home_dir
                self.logfname = logfname
                self.loghead = loghead
                self.logmode = logmode
                self.logfile = None
                self.log_raw_input = False
                self.log_output = False
                self.timestamp = False
                self.log_active = False

        @property
        def logmode(self):
                return self._logmode

        @logmode.setter
        def logmode(self, mode):
                if mode not in _MODES:
                        raise ValueError("invalid log mode %s given" % mode)
                self._logmode = mode

        def logstart(self, logfname=None, loghead=None, logmode=None, log_output=False,
                     timestamp=False, log_raw_input=False):
                """Opens the log as its mode says and writes the header; RuntimeError
                when a log is open already."""
                if self.logfile is not None:
                        raise RuntimeError("Log file is already active: %s" % self.logfname)
                # Assigned one by one as IPython does: a bad mode leaves the new name.
                if logfname is not None:
                        self.logfname = logfname
                if loghead is not None:
                        self.loghead = loghead
                if logmode is not None:
                        self.logmode = logmode
                self.timestamp, self.log_output, self.log_raw_input = timestamp, log_output, log_raw_input
                mode = self.logmode
                if mode == "global":
                        self.logfname = os.path.join(self.home_dir, self.logfname)
                elif mode == "backup" and os.path.isfile(self.logfname):
                        backup = self.logfname + "~"
                        if os.path.isfile(backup):
                                os.remove(backup)
                        os.rename(self.logfname, backup)
                elif mode == "over" and os.path.isfile(self.logfname):
                        os.remove(self.logfname)
                elif mode == "rotate" and os.path.isfile(self.logfname):
                        self._rotate()
                self.logfile = io.open(self.logfname, "a" if mode in ("append", "global") else "w",
                                       encoding="utf-8")
                if mode != "append":
                        self.logfile.write(self.loghead)
                self.logfile.flush()
                self.log_active = True

        def _rotate(self):
                """name.001~ and on move up by one, highest first; the log becomes name.001~."""
                if os.path.isfile(self.logfname + ".001~"):
                        for old in sorted(glob.glob(self.logfname + ".*~"), reverse=True):
                                root, ext = os.path.splitext(old)
                                os.rename(old, root + "." + repr(int(ext[1:-1]) + 1).zfill(3) + "~")
                os.rename(self.logfname, self.logfname + ".001~")

        def switch_log(self, val):
                """%logon (True) and %logoff (False)."""
                if val not in (False, True, 0, 1):
                        raise ValueError("Call switch_log ONLY with a boolean argument, not with: %s" % val)
                label = "ON" if val else "OFF"
                if self.logfile is None:
                        print("\nLogging hasn't been started yet (use logstart for that).\n\n"
                              "%logon/%logoff are for temporarily starting and stopping logging for a logfile\n"
                              "which already exists. But you must first start the logging process with\n"
                              "%logstart (optionally giving a logfile name).")
                elif self.log_active == val:
                        print("Logging is already", label)
                else:
                        print("Switching logging", label)
                        self.log_active = not self.log_active
                        self.log_active_out = self.log_active

        def logstate(self):
                if self.logfile is None:
                        print("Logging has not been activated.")
                        return
                print("Filename       :", self.logfname)
                print("Mode           :", self.logmode)
                print("Output logging :", self.log_output)
                print("Raw input log  :", self.log_raw_input)
                print("Timestamping   :", self.timestamp)
                print("State          :", "active" if self.log_active else "temporarily suspended")

        def log(self, line_mod, line_ori):
                """A cell's input: as run (translated) or, with -r, as typed."""
                self.log_write(line_ori if self.log_raw_input else line_mod)

        def log_write(self, data, kind="input"):
                if not (self.log_active and data):
                        return
                if kind == "input":
                        if self.timestamp:
                                self.logfile.write(time.strftime("# %a, %d %b %Y %H:%M:%S\n", time.localtime()))
                        self.logfile.write(data)
                elif kind == "output" and self.log_output:
                        self.logfile.write("\n".join("#[Out]# %s" % s for s in data.splitlines()) + "\n")
                self.logfile.flush()

        def logstop(self):
                if self.logfile is not None:
                        self.logfile.close()
                        self.logfile = None
                else:
                        print("Logging hadn't been started.")
                self.log_active = False

        close_log = logstop
