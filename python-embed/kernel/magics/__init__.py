"""IPython.core.magics' counterpart: the line and cell magics, one mixin of
zmqshell.Shell per IPython module (basic, code, config, display, execution,
extension, history, namespace, osm, packaging, pylab, script), each method
`magic_<name>` or `cell_magic_<name>`."""


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
