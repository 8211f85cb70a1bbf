"""IPython.core.magics' counterpart: the line and cell magics, one mixin of
zmqshell.Shell per IPython module (basic, code, config, display, execution,
extension, history, namespace, osm, packaging, pylab, script), each method
`magic_<name>` or `cell_magic_<name>`; and what they share of IPython's
Magics: its option parsers (magic_parser, parse_options) and
get_py_filename (find_py_file)."""


# IPython's other line magics in ipykernel (its lsmagic, aliases aside): the
# names automagic turns into magics, implemented here or not.
_IPYTHON_LINE_MAGICS = frozenset("""
alias alias_magic autoawait autocall automagic autosave bookmark cd clear colors conda config
connect_info debug dhist dirs doctest_mode ed edit env gui hist history killbgscripts less load
load_ext loadpy logoff logon logstart logstate logstop lsmagic macro magic man matplotlib more
notebook page pastebin pdb pdef pdoc pfile pinfo pinfo2 pip popd pprint precision prun psearch
psource pushd pwd pycat pylab qtconsole quickref recall rehashx reload_ext rep rerun reset
reset_selective run save sc set_env store sx system tb time timeit unalias unload_ext who who_ls
whos xdel xmode""".split())


# Magics IPython marks @no_var_expand: their line is code, not $name/{expr} text.
_NO_VAR_EXPAND = frozenset({"time", "timeit", "prun", "debug"})


def magic_parser(prog):
        """An argparse parser whose errors are UsageErrors with argparse's
        message, as IPython's MagicArgumentParser gives them."""
        import argparse

        from ..error import UsageError

        class Parser(argparse.ArgumentParser):
                def error(self, message):
                        raise UsageError(message)

        return Parser(prog=prog, add_help=False)


def parse_options(line, spec, *long_opts, posix=True, list_all=False, preserve_non_opts=False):
        """IPython's Magics.parse_options: ({option: value}, words), options named
        without their dashes (a repeated one's last value; list_all: all of
        them, in a list), its UsageError for an option not in spec.
        preserve_non_opts: the line as written, less its options, instead of
        the words."""
        import getopt
        import shlex

        from ..error import UsageError
        found, words, rest = {}, [], line
        if line.split():
                try:
                        opts, words = getopt.getopt(shlex.split(line, posix=posix), spec, long_opts)
                except getopt.GetoptError as e:
                        raise UsageError('%s ( allowed: "%s" %s)' % (e.msg, spec, " ".join(long_opts))) from None
                for o, a in opts:
                        rest = rest.replace(o, "", 1).replace(a, "", 1)
                        name = o.lstrip("-")
                        if list_all:
                                found.setdefault(name, []).append(a)
                        else:
                                found[name] = a
        return found, rest.lstrip() if preserve_non_opts else words


def find_py_file(name):
        """IPython's get_py_filename: `name` (~ expanded) if it is a file, else
        name.py if that is; None when neither is."""
        import os
        name = os.path.expanduser(name)
        if os.path.isfile(name):
                return name
        if not name.endswith(".py") and os.path.isfile(name + ".py"):
                return name + ".py"
        return None
