"""IPython.core.magics.logging's counterpart: %logstart, %logstop, %logoff,
%logon, %logstate over the shell's Logger (kernel/logger.py)."""

import os

from ..foreign_frames import warn_as_if_from
from . import parse_options



class LoggingMagics:
        """IPython's LoggingMagics, mixed into zmqshell.Shell."""

        logging_quiet = False  # its config trait `quiet` (%config LoggingMagics.quiet = True)

        def magic_logstart(self, line):
                """IPython's %logstart [-o|-r|-t|-q] [log_name [log_mode]]: the session's
                input so far, then each cell's, into log_name (ipython_log.py in
                'rotate' mode by default; a name alone means 'backup')."""
                opts, words = parse_options(line, "ortq")
                logger = self.logger
                if words:
                        par = " ".join(words)
                        parts = par.split()
                        logfname, logmode = parts if len(parts) == 2 else (par, "backup")
                else:
                        logfname, logmode = logger.logfname, logger.logmode
                old_logfile = self.logfile
                if logfname:
                        logfname = os.path.expanduser(logfname)
                self.logfile = logfname
                timestamp, raw, output = "t" in opts, "r" in opts, "o" in opts
                try:
                        logger.logstart(logfname, "# IPython log file\n\n", logmode, output, timestamp, raw)
                except Exception as e:
                        self.logfile = old_logfile
                        # IPython warns from its own file and line.
                        warn_as_if_from(f"Couldn't start log: {e}", UserWarning, "core/magics/logging.py", 130)
                        return
                # The history so far has no times to show.
                logger.timestamp = False
                inputs = self.kernel.raw_in if raw else self.kernel.In
                if output:
                        out = self.kernel.Out
                        for n in range(1, len(inputs) - 1):
                                logger.log_write(inputs[n].rstrip() + "\n")
                                if n in out:
                                        logger.log_write(repr(out[n]), "output")
                else:
                        logger.log_write("\n".join(inputs[1:]))
                        logger.log_write("\n")
                logger.timestamp = timestamp
                if not (self.logging_quiet or "q" in opts):
                        print("Activating auto-logging. Current session state plus future input saved.")
                        logger.logstate()

        def magic_logstop(self, line):
                """IPython's %logstop: stop logging and close the file."""
                self.logger.logstop()

        def magic_logoff(self, line):
                """IPython's %logoff: stop logging for now (%logon resumes)."""
                self.logger.switch_log(0)

        def magic_logon(self, line):
                """IPython's %logon: resume logging after %logoff."""
                self.logger.switch_log(1)

        def magic_logstate(self, line):
                """IPython's %logstate: the log's file, mode, options and state."""
                self.logger.logstate()
