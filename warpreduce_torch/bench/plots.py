"""What the benchmark's figures share: matplotlib without a display, a row of panels, the
axes' labels, grid and legend, and the file written."""


def pyplot():
    """matplotlib.pyplot on the Agg backend: figures go to files, no display needed."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def panels(count, width, height):
    """A figure of `count` panels side by side, each width x height inches: (figure, axes)."""
    fig, axes = pyplot().subplots(1, count, figsize=(width * count, height), squeeze=False)
    return fig, list(axes[0])


def label(ax, title, ylabel, xlabel=None, log2_x=True, grid_axis="both", legend_size=8):
    """Title, axis labels, a light grid and the legend of one panel; the x axis in powers
    of two where log2_x (sizes and extents)."""
    if log2_x:
        ax.set_xscale("log", base=2)
    if xlabel:
        ax.set_xlabel(xlabel)
    ax.set_ylabel(ylabel)
    ax.set_title(title)
    ax.grid(True, which="both", axis=grid_axis, alpha=0.3)
    ax.legend(fontsize=legend_size)


def save(fig, path, dpi=110):
    fig.tight_layout()
    fig.savefig(path, dpi=dpi)
