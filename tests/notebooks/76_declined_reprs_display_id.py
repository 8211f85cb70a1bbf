# %%
# A _repr_*_ that declines with NotImplementedError (as IPython's
# catch_format_error lets it), and display() of a display_id alone.
class NotImpl:
    def _repr_html_(self):
        raise NotImplementedError
    def __repr__(self):
        return 'NotImpl()'
NotImpl()
# %%
display(NotImpl())
# %%
class NotImplBundle:
    def _repr_mimebundle_(self, include=None, exclude=None):
        raise NotImplementedError
    def _repr_markdown_(self):
        return '**md**'
NotImplBundle()
# %%
class NotImplDisplay:
    def _ipython_display_(self):
        raise NotImplementedError
    def _repr_html_(self):
        return '<b>html</b>'
NotImplDisplay()
# %%
h = display(display_id='empty'); h.update('filled'); h
# %%
h2 = display(display_id=True)
type(h2).__name__
