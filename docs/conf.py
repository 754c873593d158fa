"""Sphinx configuration of the granular reference documentation.

Build (warnings are errors; the gallery examples run, and the Numba kernels compile on
first use: 2-3 minutes on 2 cores on a fresh machine, then they come from the cache)::

    pip install ".[docs]"
    python -m sphinx -W --keep-going -b html docs docs/_build/html

The docstrings' examples run with the package's namespace (as ``.ci/run`` does)::

    python -m pytest --doctest-modules --pyargs granular -o addopts="" -p no:cacheprovider

Generated (ignored by git): ``_build/``, ``api/generated/`` (autosummary pages),
``auto_examples/`` and ``sg_execution_times.rst`` (sphinx-gallery).
"""

import os
import sys
import warnings

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), ".."))
try:  # the installed package (in CI: the one the tests ran, whose kernels are compiled)
    import granular
except ImportError:  # else this checkout
    sys.path.insert(0, ROOT)
    import granular

project = "granular"
author = "granular developers"
copyright = "granular developers"
version = release = granular.__version__

extensions = [
    "sphinx.ext.autodoc",
    "sphinx.ext.autosummary",
    "sphinx.ext.mathjax",
    "numpydoc",
    "myst_parser",
    "sphinx_gallery.gen_gallery",
]

source_suffix = {".rst": "restructuredtext", ".md": "markdown"}
root_doc = "index"
templates_path = ["_templates"]
exclude_patterns = ["_build", "**.ipynb_checkpoints", "examples/README.rst", "examples/GALLERY_HEADER.rst"]

# -- autodoc / autosummary / numpydoc ---------------------------------------------------
autosummary_generate = True
autosummary_imported_members = False
autodoc_default_options = {"members": True, "show-inheritance": True}
autodoc_member_order = "bysource"
autodoc_typehints = "none"  # signatures as written; the docstrings say the types
autodoc_mock_imports = ["cupy"]  # the GPU backend's array library, absent on most machines
# the class pages list their members through autosummary (templates), so numpydoc's own
# member tables would repeat them
numpydoc_show_class_members = False
numpydoc_class_members_toctree = False
numpydoc_xref_param_type = False
numpydoc_validation_checks = set()

# -- MyST (the Markdown pages) ----------------------------------------------------------
myst_heading_anchors = 3

# -- sphinx-gallery ---------------------------------------------------------------------
sphinx_gallery_conf = {
    "examples_dirs": "examples",
    "gallery_dirs": "auto_examples",
    "filename_pattern": r"/plot_",
    "within_subsection_order": "FileNameSortKey",
    "abort_on_example_error": True,
    "image_scrapers": ("matplotlib",),
    "reset_modules": ("matplotlib",),
    "matplotlib_animations": False,
    "remove_config_comments": True,
    "download_all_examples": False,
    "show_signature": False,
}
os.environ.setdefault("MPLBACKEND", "Agg")
# matplotlib's Agg backend says plt.show() does nothing: expected in a gallery
warnings.filterwarnings("ignore", message="FigureCanvasAgg is non-interactive", category=UserWarning)

# -- HTML -------------------------------------------------------------------------------
html_theme = "alabaster"
html_title = f"granular {release}"
html_static_path = []
html_theme_options = {
    "description": "Particle and rigid-body dynamics with rotations, on the CPU or an NVIDIA GPU",
    "fixed_sidebar": True,
    "page_width": "1100px",
    "sidebar_width": "240px",
}
html_sidebars = {"**": ["about.html", "navigation.html", "relations.html", "searchbox.html"]}
