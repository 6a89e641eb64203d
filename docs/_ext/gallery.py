"""What sphinx-gallery calls around the examples (importable by name, so that the
configuration stays picklable).

The explanations' ``plot()`` returns a matplotlib ``Figure`` that pyplot does not hold (no
double display in notebooks), so sphinx-gallery's matplotlib scraper, which saves pyplot's
figures, would not see it. :func:`one_torch_thread` (run before every example) records every
``Figure`` created from then on, and :func:`figures` hands those pyplot does not hold to pyplot
before the matplotlib scraper saves them, in the order they were made.
"""

_created: list = []


def _record_figures() -> None:
    from matplotlib.figure import Figure

    if getattr(Figure.__init__, "_records_for_gallery", False):
        return
    init = Figure.__init__

    def __init__(self, *args, **kwargs):
        init(self, *args, **kwargs)
        _created.append(self)

    __init__._records_for_gallery = True
    Figure.__init__ = __init__


def one_torch_thread(gallery_conf, fname):
    """Before each example: one torch thread (fastest for tiny models, and steady on a shared
    machine), and start recording the figures it makes."""
    import torch

    torch.set_num_threads(1)
    _record_figures()
    _created.clear()


def figures(block, block_vars, gallery_conf, **kwargs):
    """The matplotlib scraper, after handing pyplot the figures made in this block that it
    does not hold."""
    import matplotlib.pyplot as plt
    from matplotlib import _pylab_helpers
    from sphinx_gallery.scrapers import matplotlib_scraper

    held = {manager.canvas.figure for manager in _pylab_helpers.Gcf.get_all_fig_managers()}
    for figure in _created:
        if figure not in held:
            number = max(plt.get_fignums(), default=0) + 1
            manager = plt._get_backend_mod().new_figure_manager_given_figure(number, figure)
            _pylab_helpers.Gcf._set_new_active_manager(manager)
    _created.clear()
    return matplotlib_scraper(block, block_vars, gallery_conf, **kwargs)
